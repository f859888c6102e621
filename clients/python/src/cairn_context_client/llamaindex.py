"""A LlamaIndex retriever over Cairn context packs (``pip install 'cairn-context-client[llamaindex]'``).

Each pack item becomes a ``NodeWithScore`` (a ``TextNode`` with id = the passage id, the
item text, and :func:`cairn_context_client.documents.item_metadata` as metadata: ``source`` =
the document's external id, ``document_id`` = Cairn's ``doc_…`` id; score = the item's fused
score), in pack order.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from cairn_context_client.clients import AsyncCairnClient, CairnClient
from cairn_context_client.documents import item_metadata, pack_options


def pack_nodes(pack: dict) -> list[NodeWithScore]:
    """A pack's items as LlamaIndex nodes (pack order)."""
    out = []
    for i in pack["items"]:
        meta = item_metadata(i, pack)
        # an approved context-set entry has no passage: its rank in this pack names it
        node = TextNode(
            id_=meta["passage_id"] or f"{pack.get('packId')}#{meta['rank']}",
            text=i["text"],
            metadata=meta,
            excluded_embed_metadata_keys=list(meta),
            excluded_llm_metadata_keys=[k for k in meta if k not in ("source", "title")],
        )
        out.append(NodeWithScore(node=node, score=i.get("score")))
    return out


class CairnLlamaRetriever(BaseRetriever):
    """LlamaIndex ``BaseRetriever`` whose nodes are a Cairn context pack for the query.

    Args:
        base_url: The Cairn server.
        token: An agent credential with ``context:read``.
        max_tokens / retrieval / collection_ids / document_ids: pack options (server limits).
        timeout: Seconds per request.
    """

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        max_tokens: int | None = None,
        retrieval: str | None = None,
        collection_ids: list[str] | None = None,
        document_ids: list[str] | None = None,
        timeout: float = 120.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self._base_url, self._token, self._timeout = base_url, token, timeout
        self._options = pack_options(
            max_tokens=max_tokens, retrieval=retrieval, collection_ids=collection_ids, document_ids=document_ids
        )

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        with CairnClient(self._base_url, self._token, timeout=self._timeout) as client:
            return pack_nodes(client.context_pack(query_bundle.query_str, **self._options))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        async with AsyncCairnClient(self._base_url, self._token, timeout=self._timeout) as client:
            return pack_nodes(await client.context_pack(query_bundle.query_str, **self._options))
