"""Python client of Cairn: cited context packs, memory, decisions; LangChain, LlamaIndex retrievers.

Packs (also streamed over NDJSON and the GraphQL subscription), documents, memory, decisions,
ontology; errors as :class:`CairnAPIError` with ``code``, ``field``, ``limit`` and
``trace_id``. Framework adapters live in ``cairn_context_client.langchain``
(``CairnRetriever``) and ``cairn_context_client.llamaindex`` (``CairnLlamaRetriever``),
imported only when used (extras ``[langchain]``, ``[llamaindex]``).

A distribution of its own (``cairn-context-client``, ``clients/python/`` in the server's
repository): it needs httpx, and websockets for the subscription, nothing of the server.
``__version__`` below is the server's version too (its pyproject reads it).
"""

from cairn_context_client.clients import AsyncCairnClient, CairnClient
from cairn_context_client.documents import item_metadata
from cairn_context_client.protocol import CairnAPIError, pack_input

__version__ = "0.1.0"

__all__ = ["AsyncCairnClient", "CairnAPIError", "CairnClient", "__version__", "item_metadata", "pack_input"]
