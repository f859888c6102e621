"""A LangChain retriever over Cairn context packs (``pip install 'cairn-context-client[langchain]'``).

Each pack item becomes a ``Document`` whose ``page_content`` is the item text and whose
``metadata`` is :func:`cairn_context_client.documents.item_metadata` (``source`` = the
document's external id, ``document_id`` = Cairn's ``doc_…`` id, ``version_id``, ``passage_id``,
exact ``start``/``end`` offsets, ``sha256``, rank, score, …), in pack order. The pack's token
budget bounds the total text (``max_tokens``).
"""

from __future__ import annotations

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever

from cairn_context_client.clients import AsyncCairnClient, CairnClient
from cairn_context_client.documents import item_metadata, pack_options


def pack_documents(pack: dict) -> list[Document]:
    """A pack's items as LangChain documents (pack order)."""
    return [Document(page_content=i["text"], metadata=item_metadata(i, pack)) for i in pack["items"]]


class CairnRetriever(BaseRetriever):
    """``BaseRetriever`` whose documents are a Cairn context pack for the query.

    Fields: ``base_url``, ``token`` (``ck_…`` with ``context:read``), and the pack options
    ``max_tokens`` (256–32,000 cl100k tokens), ``retrieval`` (HYBRID/LEXICAL/DENSE),
    ``collection_ids`` (≤ 8), ``document_ids`` (≤ 20); ``timeout`` in seconds. Errors are
    :class:`~cairn_context_client.protocol.CairnAPIError`.
    """

    base_url: str
    token: str
    max_tokens: int | None = None
    retrieval: str | None = None
    collection_ids: list[str] | None = None
    document_ids: list[str] | None = None
    timeout: float = 120.0

    def _options(self) -> dict:
        return pack_options(
            max_tokens=self.max_tokens,
            retrieval=self.retrieval,
            collection_ids=self.collection_ids,
            document_ids=self.document_ids,
        )

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        with CairnClient(self.base_url, self.token, timeout=self.timeout) as client:
            return pack_documents(client.context_pack(query, **self._options()))

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        async with AsyncCairnClient(self.base_url, self.token, timeout=self.timeout) as client:
            return pack_documents(await client.context_pack(query, **self._options()))
