"""The Python client of Cairn (httpx): packs (also streamed over NDJSON and the GraphQL
subscription), memory, decisions, ontology; errors as :class:`CairnAPIError` with ``code``,
``field``, ``limit`` and ``trace_id``. Framework adapters live in ``app.client.langchain``
(``CairnRetriever``) and ``app.client.llamaindex`` (``CairnLlamaRetriever``), imported only
when used (extras ``[langchain]``, ``[llamaindex]``).

It imports nothing from the server (import-linter contract): a program using it needs only
httpx (and websockets for the subscription).
"""

from cairn.app.client.clients import AsyncCairnClient, CairnClient
from cairn.app.client.documents import item_metadata
from cairn.app.client.protocol import CairnAPIError, pack_input

__all__ = ["AsyncCairnClient", "CairnAPIError", "CairnClient", "item_metadata", "pack_input"]
