"""Pack items → framework documents: the text plus citation metadata (shared by the LangChain
and LlamaIndex adapters; no framework imports here)."""

from __future__ import annotations

from typing import Any


def item_metadata(item: dict[str, Any], pack: dict[str, Any] | None = None) -> dict[str, Any]:
    """Citation metadata of one pack item (flat, JSON values only).

    ``source`` is the document's external id (``externalId``: your key, or the file's path
    relative to the folder ``cairn ingest`` read) and ``document_id`` Cairn's id of it
    (``doc_…``); ``start``/``end`` are the exact character offsets of the item's text in the
    cited version (``version.text[start:end] == text``) and ``sha256`` the hash of that text, so
    a citation can be re-checked (``get_citation`` over MCP, or ``document(id)`` over GraphQL).
    An approved context-set entry (``kind`` VERIFIED_ANSWER, DEFINITION or INSTRUCTION) cites
    no document: its ``source``, ``document_id`` and offsets are None.

    Args:
        item: One ``PackItem`` as the server answers it (``PACK_QUERY``'s fields).
        pack: The pack it came from: adds ``pack_id`` and ``replay_id``.
    """
    c = item.get("citation") or {}
    meta = {
        "source": item.get("externalId") or None,
        "document_id": c.get("documentId"),
        "version_id": c.get("versionId"),
        "passage_id": c.get("passageId"),
        "start": c.get("start"),
        "end": c.get("end"),
        "sha256": c.get("sha256"),
        "title": item.get("documentTitle"),
        "kind": item.get("kind"),
        "collection_id": item.get("collectionId"),
        "collection_name": item.get("collectionName") or None,
        "rank": item.get("rank"),
        "score": item.get("score"),
        "tokens": item.get("tokens"),
        "trust": item.get("trust"),
        "superseded": item.get("superseded"),
        "contradiction": item.get("contradiction"),
        "alternate_citations": [
            {"document_id": a["documentId"], "passage_id": a.get("passageId")}
            for a in item.get("alternateCitations") or []
        ],
    }
    if pack is not None:
        meta["pack_id"] = pack.get("packId")
        meta["replay_id"] = pack.get("replayId")
    return meta


def pack_options(
    *,
    max_tokens: int | None,
    retrieval: str | None,
    collection_ids: list[str] | None,
    document_ids: list[str] | None,
) -> dict[str, Any]:
    """The pack options a retriever was configured with (None = the server's default)."""
    return {
        k: v
        for k, v in (
            ("max_tokens", max_tokens),
            ("retrieval", retrieval),
            ("collection_ids", collection_ids),
            ("document_ids", document_ids),
        )
        if v is not None
    }
