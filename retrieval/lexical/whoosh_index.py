"""BM25 lexical index over passages, on Whoosh (the ``whoosh-reloaded`` package).

Scoring: Whoosh's ``BM25F`` weighting (per-field Okapi BM25, Robertson & Zaragoza 2009)
with k1 = 1.5, b = 0.75 (the values of the reference bm25s baseline) and Whoosh's IDF
(:data:`retrieval.lexical.bm25.WHOOSH_BM25`), computed
term-at-a-time in numpy by :mod:`retrieval.lexical.scoring` from Whoosh's postings (same
scores; ~10x less CPU than Whoosh's matcher tree), Whoosh's own search for phrase or
title-boosted queries. The query is a
disjunction (OR) of the query's analysed terms, like classic BM25, not Whoosh's default
AND. Query text is never parsed as query syntax, so ``AND``, ``"``, ``*`` or
``field:value`` in user input are just text.

Title handling: by default the title is indexed twice, in its own ``title`` field and
prepended to the ``body`` field (``title_in_body``), and only ``body`` is scored
(``title_boost`` = 0). Measured on this machine (2 cores), BM25 nDCG@10 on SciFact test
(5,183 abstracts, 300 queries) and recall@10 on JSQuAD (2,304 passages, every 2nd of
4,442 questions):

=====================================  ============  =========  ===========
setup                                  SciFact nDCG  JSQuAD R   SciFact p50
=====================================  ============  =========  ===========
title in body, k1 1.5 (default)        0.690         0.967      47 ms
title in body + title field x0.5       0.679         0.969      103 ms
separate title field x1.5, k1 1.2      0.647         0.952      99 ms
=====================================  ============  =========  ===========

(reference bm25s: SciFact 0.6863, JSQuAD 0.9705). A separately boosted title rewards
every passage of a document equally and costs a second posting walk per term.

Optional ``max_df`` pruning (``prune_df_ratio`` < 1, see :meth:`WhooshIndex.build_query`)
trades quality for speed: 0.2 → SciFact 0.681 at 25 ms p50, 0.1 → 0.671 at 14 ms;
JSQuAD recall is unchanged (0.967–0.970) and its p50 drops from 28 to 12 ms. Off by default.

CJK runs are analysed into overlapping bigrams (:mod:`retrieval.analysis`). With
``cjk_mode="or"`` (default) every bigram is an OR term; ``"phrase"`` requires the run's
bigrams as an exact phrase (a question is one long CJK run that rarely occurs verbatim:
JSQuAD recall@10 fell to 0.41); ``"or+phrase"`` adds the phrase as an extra scoring
clause (no recall gain, 1.4x latency).

Concurrency: one writer at a time (``_write_lock``, one commit per :meth:`add` or
:meth:`delete` call); one shared searcher, used under ``_search_lock`` (Whoosh file
readers seek and read, so a searcher must not be used by two threads at once) and
replaced by a new searcher right after each commit, so a caller reads its own writes.

This module holds :class:`WhooshIndex`, which ties the pieces together under those locks:
the passage document and schema (:mod:`retrieval.lexical.schema`), the index directory and
its analyzer version (:mod:`retrieval.lexical.directory`), commits
(:mod:`retrieval.lexical.writing`), query building (:mod:`retrieval.lexical.query`), search
execution (:mod:`retrieval.lexical.search`) and numpy BM25 (:mod:`retrieval.lexical.scoring`).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from whoosh import query as wq
from whoosh.scoring import BM25F
from whoosh.searching import Searcher
from whoosh.writing import CLEAR

from cairn.retrieval.checks import check_ids
from cairn.retrieval.lexical.bm25 import IDF, WHOOSH_BM25, BM25Params
from cairn.retrieval.lexical.directory import open_passage_index, record_sums
from cairn.retrieval.lexical.query import CJK_MODES, bm25_query
from cairn.retrieval.lexical.schema import IndexedPassage
from cairn.retrieval.lexical.scoring import SegmentArrays
from cairn.retrieval.lexical.search import allowed_docs, ranked_passages
from cairn.retrieval.lexical.writing import commit, commit_deletions, commit_passages


class WhooshIndex:
    """A persistent BM25 index of passages in one directory (see module doc).

    Args:
        path: Index directory; created (with parents) if missing, opened if it holds an
            index.
        title_boost: Weight of matches in the separate ``title`` field, relative to
            ``body``; 0 (default) leaves the field out of scoring (module doc).
        title_in_body: Index the title at the start of ``body`` too (default; changing
            it needs a re-index).
        bm25: k1, b and the IDF variant (default :data:`retrieval.lexical.bm25.WHOOSH_BM25`);
            the IDF must be Whoosh's, the one its own search (phrases, a boosted title) uses.
        cjk_mode: ``"or"`` (default), ``"phrase"`` or ``"or+phrase"`` (module doc).
        procs: Writer processes for large :meth:`add` batches (Whoosh ``MpWriter``,
            which forks); used only for batches of at least ``bulk_threshold`` passages.
            Default 1: forking a server process that runs threads is risky and the
            measured gain was small (see the package report).
        limitmb: Writer memory per process before spilling a segment, in MB.
        bulk_threshold: Batch size from which ``procs`` > 1 is used.
        prune_df_ratio: Query terms in more than this fraction of passages are dropped
            (see :meth:`build_query`); ``1.0`` (default) disables pruning.
        prune_min_docs: Pruning applies only to indexes of at least this many passages.
        rebuild_unreadable: Re-create an index that cannot be read (a damaged segment or
            table of contents) empty instead of raising (``cairn reindex``; the caller
            re-indexes every passage: :attr:`migrated` says so).

    Raises:
        retrieval.checks.IndexUnreadable: the index on disk cannot be read (and
            ``rebuild_unreadable`` is False).
        ValueError: If ``title_boost`` < 0, ``bm25`` has another IDF than Whoosh's,
            ``cjk_mode`` is unknown, ``procs`` < 1,
            ``limitmb`` < 1 or ``prune_df_ratio`` is not in (0, 1].
    """

    def __init__(
        self,
        path: Path,
        *,
        title_boost: float = 0.0,
        title_in_body: bool = True,
        bm25: BM25Params = WHOOSH_BM25,
        cjk_mode: str = "or",
        procs: int = 1,
        limitmb: int = 128,
        bulk_threshold: int = 5_000,
        prune_df_ratio: float = 1.0,
        prune_min_docs: int = 1_000,
        rebuild_unreadable: bool = False,
    ) -> None:
        if not title_boost >= 0:
            raise ValueError(f"title_boost must be >= 0, got {title_boost}")
        if bm25.idf is not IDF.WHOOSH:
            raise ValueError(f"the Whoosh index scores with Whoosh's IDF, not {bm25.idf.value!r}")
        if cjk_mode not in CJK_MODES:
            raise ValueError(f"cjk_mode must be one of {CJK_MODES}, got {cjk_mode!r}")
        if not 0 < prune_df_ratio <= 1:
            raise ValueError(f"prune_df_ratio must be in (0, 1], got {prune_df_ratio}")
        if procs < 1 or limitmb < 1:
            raise ValueError(f"procs and limitmb must be >= 1, got {procs}, {limitmb}")
        self.path = Path(path)
        self.title_boost = float(title_boost)
        self.title_in_body = title_in_body
        self.bm25 = bm25
        self.cjk_mode = cjk_mode
        self.procs = procs
        self.limitmb = limitmb
        self.bulk_threshold = bulk_threshold
        self.prune_df_ratio = prune_df_ratio
        self.prune_min_docs = prune_min_docs
        self._write_lock = threading.Lock()
        self._search_lock = threading.Lock()
        self.path.mkdir(parents=True, exist_ok=True)
        self._index, migrated = open_passage_index(self.path, rebuild_unreadable=rebuild_unreadable)
        self.migrated: str | None = migrated
        """None, or the message saying the index was re-created empty on open (terms of another
        analyzer version, a schema of an older layout, or unreadable with ``rebuild_unreadable``;
        the caller re-indexes every passage and logs it once)."""
        self._searcher: Searcher | None = self._index.searcher(weighting=BM25F(B=bm25.b, K1=bm25.k1))
        self._filter_cache: dict[tuple, Any] = {}
        self._passage_ids: dict[int, str] = {}
        """Passage id of each document number read so far, for the current searcher
        (:func:`retrieval.lexical.search.passage_id`)."""
        self._segment_arrays = SegmentArrays()

    # -- writing ---------------------------------------------------------------------

    def _refresh(self) -> None:
        """Swap in a searcher on the latest commit and close the old one.

        ``Searcher.refresh()`` is not used: in whoosh-reloaded 2.7.5 its reader reuse keeps
        segments that a merge removed and stale deletion sets (a deleted or replaced
        passage stayed visible in tests), and it fails outright on an empty index.
        """
        record_sums(self.path, self._index)  # under the write lock: this commit's segments
        with self._search_lock:
            searcher = self._require_open()
            self._searcher = self._index.searcher(weighting=BM25F(B=self.bm25.b, K1=self.bm25.k1))
            self._filter_cache.clear()
            self._passage_ids = {}
            segments = (leaf.segment() for leaf, _ in self._searcher.ixreader.leaf_readers())
            self._segment_arrays.forget_segments({seg.segment_id() for seg in segments if seg is not None})
            searcher.close()

    def add(self, passages: Sequence[IndexedPassage]) -> None:
        """Insert or replace passages (upsert by ``passage_id``), in one commit.

        If the same ``passage_id`` occurs more than once in ``passages``, the last one
        wins. Thread-safe; the change is visible to :meth:`search` when this returns.

        Args:
            passages: Passages to index; ``[]`` is a no-op.

        Raises:
            ValueError: If an id field is empty or the index is closed.
        """
        latest: dict[str, IndexedPassage] = {}
        for passage in passages:
            for name in ("passage_id", "workspace_id", "collection_id", "document_id"):
                value = getattr(passage, name)
                if not isinstance(value, str) or not value:
                    raise ValueError(f"{name} must be a non-empty string, got {value!r}")
            latest[passage.passage_id] = passage
        if not latest:
            return
        with self._write_lock:
            with self._search_lock:
                empty = self._require_open().doc_count_all() == 0
            commit_passages(
                self._index,
                latest.values(),
                replace=not empty,
                title_in_body=self.title_in_body,
                procs=self.procs if len(latest) >= self.bulk_threshold else 1,
                limitmb=self.limitmb,
            )
            self._refresh()

    def delete(self, passage_ids: Sequence[str]) -> None:
        """Remove passages by id (unknown ids are ignored), in one commit.

        Args:
            passage_ids: Ids to remove; ``[]`` is a no-op.

        Raises:
            ValueError: If ``passage_ids`` is a str or holds a non-string, or the index
                is closed.
        """
        check_ids("passage_ids", passage_ids)
        if not passage_ids:
            return
        with self._write_lock:
            self._require_open()
            commit_deletions(self._index, passage_ids, limitmb=self.limitmb)
            self._refresh()

    def clear(self) -> None:
        """Remove every passage (all segments are dropped in one commit)."""
        with self._write_lock:
            self._require_open()
            commit(self._index.writer(), mergetype=CLEAR)
            self._refresh()

    # -- reading ---------------------------------------------------------------------

    def _require_open(self) -> Searcher:
        if self._searcher is None:
            raise ValueError(f"lexical index at {self.path} is closed")
        return self._searcher

    def build_query(self, query: str, searcher: Searcher | None = None) -> wq.Query | None:
        """Build the scoring query for a text with this index's settings.

        Args:
            query: Free text; not parsed as query syntax.
            searcher: Searcher whose document frequencies drive ``max_df`` pruning;
                None disables pruning.

        Returns:
            See :func:`retrieval.lexical.query.bm25_query`.
        """
        prune = self.prune_df_ratio < 1 and searcher is not None and searcher.doc_count_all() >= self.prune_min_docs
        return bm25_query(
            query,
            cjk_mode=self.cjk_mode,
            title_boost=self.title_boost,
            searcher=searcher if prune else None,
            prune_df_ratio=self.prune_df_ratio,
        )

    def search(
        self,
        query: str,
        *,
        workspace_id: str,
        collection_ids: Sequence[str] | None = None,
        document_ids: Sequence[str] | None = None,
        limit: int = 100,
    ) -> list[tuple[str, float]]:
        """Rank passages of one workspace by BM25 against free text.

        Args:
            query: Free text (any language; not query syntax).
            workspace_id: Only passages of this workspace are searched.
            collection_ids: If given, only these collections (``[]`` matches nothing).
            document_ids: If given, only these documents (``[]`` matches nothing).
            limit: Maximum results, >= 1.

        Returns:
            ``(passage_id, score)`` pairs, score desc then passage_id asc; ``[]`` when
            the query has no terms after analysis or nothing matches.

        Raises:
            ValueError: If ``workspace_id`` is empty, ``limit`` < 1, an id list is a str
                or holds a non-string, or the index is closed.
        """
        if not workspace_id:
            raise ValueError("workspace_id must be a non-empty string")
        if limit < 1:
            raise ValueError(f"limit must be >= 1, got {limit}")
        check_ids("collection_ids", collection_ids)
        check_ids("document_ids", document_ids)
        if (collection_ids is not None and not collection_ids) or (document_ids is not None and not document_ids):
            return []
        with self._search_lock:
            searcher = self._require_open()
            scoring = self.build_query(query, searcher)
            if scoring is None:
                return []
            allowed, mask = allowed_docs(searcher, self._filter_cache, workspace_id, collection_ids, document_ids)
            if not allowed:  # Whoosh reads an empty filter set as "no filter": nothing is allowed
                return []
            return ranked_passages(
                searcher,
                scoring,
                allowed,
                mask,
                params=self.bm25,
                limit=limit,
                arrays=self._segment_arrays,
                passage_ids=self._passage_ids,
            )

    def has(self, passage_ids: Sequence[str]) -> set[str]:
        """Return which of the given passage ids are indexed (not deleted).

        Args:
            passage_ids: Ids to check.

        Returns:
            The subset of ``passage_ids`` present in the index.

        Raises:
            ValueError: If ``passage_ids`` is a str or the index is closed.
        """
        check_ids("passage_ids", passage_ids)
        with self._search_lock:
            searcher = self._require_open()
            return {pid for pid in set(passage_ids) if searcher.document_number(passage_id=pid) is not None}

    def count(self) -> int:
        """Return the number of indexed (undeleted) passages.

        Raises:
            ValueError: If the index is closed.
        """
        with self._search_lock:
            return self._require_open().doc_count()

    def close(self) -> None:
        """Release the searcher and its files; the index stays on disk. Idempotent."""
        with self._write_lock, self._search_lock:
            if self._searcher is not None:
                self._searcher.close()
                self._searcher = None

    def __enter__(self) -> WhooshIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
