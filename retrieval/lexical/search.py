"""Search execution for :class:`retrieval.lexical.whoosh_index.WhooshIndex` on one searcher: the
filter's allowed documents and passage ids (cached per commit), and the ranking — numpy BM25
(:mod:`retrieval.lexical.scoring`) for plain term disjunctions, Whoosh's own search for the
rest. The caller holds the index's search lock and clears the caches after each commit."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from whoosh import query as wq
from whoosh.searching import Searcher

from cairn.retrieval.lexical.bm25 import BM25Params
from cairn.retrieval.lexical.query import filter_query
from cairn.retrieval.lexical.scoring import SegmentArrays, allowed_mask, bm25_top, disjunction_terms

SCORE_DECIMALS = 9
"""Scores are rounded to 9 decimals so sums that differ only by float rounding (e.g. the
same terms added in another order) tie, and ties order by passage id everywhere."""

FILTER_CACHE_SIZE = 256
"""Filters (workspace + collection/document ids) whose document sets are kept per commit."""


PASSAGE_ID_CACHE_SIZE = 500_000
"""Document numbers whose passage id a :class:`retrieval.lexical.whoosh_index.WhooshIndex` keeps (~60 MB at most)."""


def ranked_passages(
    searcher: Searcher,
    scoring: wq.Query,
    allowed: Any,
    mask: Any,
    *,
    params: BM25Params,
    limit: int,
    arrays: SegmentArrays,
    passage_ids: dict[int, str],
) -> list[tuple[str, float]]:
    """Rank the allowed passages against a scoring query.

    Plain term disjunctions are scored by :func:`retrieval.lexical.scoring.bm25_top`;
    anything else (phrases, a boosted title field) by Whoosh's search, fetching more
    until every document tied with the last kept score is in view.

    Args:
        searcher: The current searcher (caller holds the search lock).
        scoring: Query from :meth:`retrieval.lexical.whoosh_index.WhooshIndex.build_query`.
        allowed: Allowed document numbers, non-empty (:func:`allowed_docs`).
        mask: Their boolean mask (:func:`allowed_docs`).
        params: The index's BM25 parameters (:data:`retrieval.lexical.bm25.WHOOSH_BM25`).
        limit: Maximum results, >= 1.
        arrays: The index's per-segment arrays.
        passage_ids: Passage id cache of this searcher (:func:`passage_id`).

    Returns:
        ``(passage_id, score)`` pairs, score (rounded to :data:`SCORE_DECIMALS`) desc
        then passage_id asc, at most ``limit``.
    """
    spec = disjunction_terms(scoring)
    top = None
    if spec is not None:
        top = bm25_top(searcher, spec[0], spec[1], mask, params=params, limit=limit, arrays=arrays)
    if top is not None:
        scored = [(passage_id(searcher, passage_ids, docnum), round(score, SCORE_DECIMALS)) for docnum, score in top]
        scored.sort(key=lambda item: (-item[1], item[0]))
        return scored[:limit]
    fetch = limit + 16
    while True:
        results = searcher.search(scoring, limit=fetch, filter=allowed)
        scored = [
            (passage_id(searcher, passage_ids, docnum), round(float(score), SCORE_DECIMALS))
            for docnum, score in results.items()
        ]
        # Grow until every document tied with the last kept score is in view.
        if len(scored) < fetch or scored[-1][1] != scored[min(limit, len(scored)) - 1][1]:
            break
        fetch *= 2
    scored.sort(key=lambda item: (-item[1], item[0]))
    return scored[:limit]


def passage_id(searcher: Searcher, cache: dict[int, str], docnum: int) -> str:
    """The passage id stored with ``docnum`` in ``searcher`` (caller holds the lock).

    ``cache`` holds the passage id of each document number read so far for this searcher
    (reading a stored field is ~8 µs; a 200-deep leg read 200 of them per task); at most
    :data:`PASSAGE_ID_CACHE_SIZE` entries, then it starts over.
    """
    pid = cache.get(docnum)
    if pid is None:
        if len(cache) >= PASSAGE_ID_CACHE_SIZE:
            cache.clear()
        pid = cache[docnum] = searcher.stored_fields(docnum)["passage_id"]
    return pid


def allowed_docs(
    searcher: Searcher,
    cache: dict[tuple, Any],
    workspace_id: str,
    collection_ids: Sequence[str] | None,
    document_ids: Sequence[str] | None,
) -> tuple[Any, Any]:
    """The filter's document-number set and its boolean mask (deleted documents off),
    cached in ``cache`` until the next commit (caller holds the lock).

    Whoosh turns a filter query into a bit set by walking every matching posting on each
    search — O(passages in the workspace), ~20 ms at 10k passages on this machine; the
    set only changes when the index does, so it is kept per filter until the caller's
    refresh clears ``cache`` (at most :data:`FILTER_CACHE_SIZE` filters, then it starts over).
    """
    key = (
        workspace_id,
        tuple(sorted(set(collection_ids))) if collection_ids is not None else None,
        tuple(sorted(set(document_ids))) if document_ids is not None else None,
    )
    docs = cache.get(key)
    if docs is None:
        if len(cache) >= FILTER_CACHE_SIZE:
            cache.clear()
        comb = searcher._filter_to_comb(filter_query(workspace_id, collection_ids, document_ids))
        docs = (comb, allowed_mask(searcher, comb))
        cache[key] = docs
    return docs
