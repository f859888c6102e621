"""The :class:`LexicalIndex` protocol: what both BM25 backends offer.

* :class:`~retrieval.lexical.whoosh_index.WhooshIndex`: a Whoosh index in a folder (one
  process), scored in numpy (:mod:`retrieval.lexical.scoring`);
* :class:`~retrieval.lexical.sparse.SparseBM25Index`: sparse BM25 vectors in a Qdrant
  collection (cluster mode: no local search state).

Shared semantics: passages are upserted by ``passage_id`` (the last of a batch wins) and
visible to :meth:`LexicalIndex.search` when the write returns; the query is free text (never
query syntax), analysed by :func:`retrieval.analysis.analyze` into an OR of distinct terms;
every search filters on one workspace and optionally on collection / document ids (an empty
list matches nothing); results are ``(passage_id, score)`` with score desc, then passage id
asc, and ties never cross the ``limit`` cut in engine order. The two backends rank the same
passages in the same order on the same corpus (``tests/unit/retrieval/test_lexical_backends.py``);
their scores differ (Whoosh's IDF over the live corpus vs Qdrant's plus one, a fixed mean
length: :mod:`retrieval.lexical.sparse`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from cairn.retrieval.lexical.schema import IndexedPassage

__all__ = ["LexicalIndex"]


@runtime_checkable
class LexicalIndex(Protocol):
    """What every lexical (BM25) backend offers (module doc for the shared semantics).

    Attributes:
        migrated: None, or the message saying the index was re-created empty on open (another
            analyzer version or layout, or unreadable with ``rebuild_unreadable``); the caller
            re-indexes every passage, logs the message once and sets it back to None.
    """

    migrated: str | None

    def add(self, passages: Sequence[IndexedPassage]) -> None:
        """Insert or replace passages (upsert by ``passage_id``).

        Raises:
            ValueError: If an id field is empty.
        """
        ...

    def search(
        self,
        query: str,
        *,
        workspace_id: str,
        collection_ids: Sequence[str] | None = None,
        document_ids: Sequence[str] | None = None,
        limit: int = 100,
    ) -> list[tuple[str, float]]:
        """``(passage_id, BM25 score)`` of one workspace's passages, score desc then passage id
        asc; ``[]`` when the query has no terms after analysis.

        Raises:
            ValueError: If ``workspace_id`` is empty, ``limit`` < 1, or an id list is a str.
        """
        ...

    def delete(self, passage_ids: Sequence[str]) -> None:
        """Remove passages by id; unknown ids are ignored."""
        ...

    def has(self, passage_ids: Sequence[str]) -> set[str]:
        """The subset of ``passage_ids`` that are indexed."""
        ...

    def count(self) -> int:
        """Number of indexed passages."""
        ...

    def clear(self) -> None:
        """Remove every passage."""
        ...

    def close(self) -> None:
        """Release the index (idempotent; the data stays where it is stored)."""
        ...
