"""Term-at-a-time BM25 over a Whoosh index, in numpy: Whoosh stores, Cairn scores.

Whoosh scores a disjunction document-at-a-time through a tree of Python matcher objects
(plus block-max bookkeeping): ~34 ms of CPU per SciFact claim at 10k passages, growing
linearly with the index. This module reads each query term's posting blocks (doc numbers
and term frequencies, already decoded arrays) and accumulates Okapi BM25 into one float64
array per segment:

    score(d) = Σ_t idf(t) · tf·(k1 + 1) / (tf + k1·(1 − b + b·len(d)/avglen))

through :func:`retrieval.lexical.bm25.term_score` with exactly Whoosh's ``BM25F`` inputs — the
index's :class:`~retrieval.lexical.bm25.BM25Params` (k1, b and Whoosh's IDF
``ln(N / (df + 1)) + 1`` over all documents, :func:`retrieval.lexical.bm25.idf`), Whoosh's
byte-quantised field lengths, its average field length — so the scores equal Whoosh's (to
float rounding; tests compare rankings). Deleted
documents and documents outside the caller's filter are masked out; the top ``limit``
come from ``argpartition`` and ties at the cut are all kept, so the caller's order
(score desc, passage id asc) is exact.

Per-segment arrays are cached by segment id — segments never change once written, so a
commit only costs the new segment's arrays: field lengths, and each term's decoded posting
list (an LRU of up to :data:`POSTINGS_CACHE_ENTRIES` postings over all segments). Decoding
posting blocks (unpickle + zlib) was ~85 % of a query's BM25 time at 10k passages; query
terms recur from task to task, so a recurring term costs an array lookup. Only plain term disjunctions
over one field are scored here; anything else (phrases, a boosted title field) returns
None and the caller uses Whoosh's own search.

Relies on whoosh-reloaded 2.7.5's W3 codec block layout (pinned in pyproject); an
unexpected matcher type also returns None (Whoosh's search is used instead).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np
from whoosh import query as wq
from whoosh.codec.whoosh3 import W3LeafMatcher
from whoosh.searching import Searcher

from cairn.retrieval.lexical.bm25 import BM25Params, idf, term_score

_LENGTHS_CACHE_SEGMENTS = 256

POSTINGS_CACHE_ENTRIES = 2_000_000
"""Postings (doc number + term frequency, 16 bytes) kept decoded per index, each term's entry
counting one more: ~32 MB plus ~0.2 KB per entry, every posting of ~15k passages; least
recently used terms go first, and segments a merge removed are dropped at the next refresh."""


class SegmentArrays:
    """Field lengths and decoded posting lists per segment (by segment id), shared by the
    searchers of one index.

    Args:
        max_postings: Postings kept decoded over all segments and terms, >= 0 (0: none).

    Raises:
        ValueError: ``max_postings`` < 0.
    """

    def __init__(self, max_postings: int = POSTINGS_CACHE_ENTRIES) -> None:
        if max_postings < 0:
            raise ValueError(f"max_postings must be >= 0, got {max_postings}")
        self._lengths: dict[tuple[str, str], np.ndarray] = {}
        self._postings: OrderedDict[tuple[str, str, str], tuple[np.ndarray, np.ndarray]] = OrderedDict()
        self._held = 0
        self.max_postings = max_postings
        self._lock = threading.Lock()

    def postings(self, leaf: Any, field: str, term: str) -> tuple[np.ndarray, np.ndarray] | None:
        """:func:`_postings` of one segment, from the cache when the term was read before.

        The arrays returned are shared (read-only): callers must not modify them."""
        key = (leaf.segment().segment_id(), field, term)
        with self._lock:
            got = self._postings.get(key)
            if got is not None:
                self._postings.move_to_end(key)
                return got
        got = _postings(leaf, field, term)
        # a term the segment lacks is not kept (its check is one lookup); each entry counts
        # its postings + 1, so no entry is free and the bound holds in entries too
        if got is None or not len(got[0]) or len(got[0]) + 1 > self.max_postings:
            return got
        for array in got:
            array.setflags(write=False)
        with self._lock:
            if key not in self._postings:
                self._postings[key] = got
                self._held += len(got[0]) + 1
                while self._held > self.max_postings:
                    _, (ids, _tf) = self._postings.popitem(last=False)
                    self._held -= len(ids) + 1
        return got

    def forget_segments(self, live: set[str]) -> None:
        """Drop the postings of segments not in ``live`` (segment ids; a merge removed them)."""
        with self._lock:
            for key in [k for k in self._postings if k[0] not in live]:
                ids, _tf = self._postings.pop(key)
                self._held -= len(ids) + 1

    def lengths(self, leaf: Any, field: str) -> np.ndarray:
        """Whoosh's (quantised) length of ``field`` for every document of a segment, float64.

        Whoosh returns 1 for a document without the field (its BM25 default)."""
        key = (leaf.segment().segment_id(), field)
        with self._lock:
            arr = self._lengths.get(key)
        if arr is None:
            n = leaf.doc_count_all()
            arr = np.fromiter((leaf.doc_field_length(d, field, 1) for d in range(n)), dtype=np.float64, count=n)
            with self._lock:
                if len(self._lengths) >= _LENGTHS_CACHE_SEGMENTS:
                    self._lengths.clear()
                self._lengths[key] = arr
        return arr


def disjunction_terms(query: wq.Query) -> tuple[str, list[str]] | None:
    """``(field, terms)`` if ``query`` is an unboosted OR of terms on one field, else None."""
    subs = query.subqueries if isinstance(query, wq.Or) else [query]
    if not subs or not all(isinstance(q, wq.Term) and q.boost == 1.0 for q in subs):
        return None
    fields = {q.fieldname for q in subs}
    if len(fields) != 1:
        return None
    return fields.pop(), [q.text for q in subs]


def _postings(leaf: Any, field: str, term: str) -> tuple[np.ndarray, np.ndarray] | None:
    """Doc numbers and term frequencies of ``term`` in one segment (empty arrays when the
    segment lacks the term; None when the matcher is not the W3 block matcher read here)."""
    if (field, term) not in leaf:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
    text = leaf._text_to_bytes(field, term)
    m = leaf._terms.matcher(field, text, leaf.schema[field].format)
    if type(m) is not W3LeafMatcher:
        return None
    ids: list[np.ndarray] = []
    tfs: list[np.ndarray] = []
    while not m._atend:
        m._read_ids()
        m._read_weights()
        ids.append(np.asarray(m._ids, dtype=np.int64))
        tfs.append(np.asarray(m._weights, dtype=np.float64))
        if m._lastblock:
            break
        m._goto(m._nextoffset)
    if not ids:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
    return np.concatenate(ids), np.concatenate(tfs)


def allowed_mask(searcher: Searcher, docs: Any) -> np.ndarray:
    """Boolean array over the searcher's doc numbers: allowed by the filter and not deleted."""
    n = searcher.doc_count_all()
    mask = np.zeros(n, dtype=bool)
    ids = np.fromiter(iter(docs), dtype=np.int64)
    mask[ids[ids < n]] = True
    reader = searcher.ixreader
    if reader.has_deletions():
        for leaf, offset in reader.leaf_readers():
            if leaf.has_deletions():
                dead = np.fromiter(leaf.deleted_docs_set, dtype=np.int64)
                mask[dead + offset] = False
    return mask


def bm25_top(
    searcher: Searcher,
    field: str,
    terms: Sequence[str],
    mask: np.ndarray,
    *,
    params: BM25Params,
    limit: int,
    arrays: SegmentArrays,
) -> list[tuple[int, float]] | None:
    """Top documents by BM25 for an OR of ``terms`` (module doc).

    Args:
        searcher: A Whoosh searcher (its document counts and average field length are used).
        field: The scored field.
        terms: Distinct analysed terms.
        mask: :func:`allowed_mask` for this searcher and filter.
        params: k1, b and the IDF variant (the index's: Whoosh's IDF, so the scores equal
            Whoosh's own search).
        limit: Documents wanted (more are returned when tied with the last one).
        arrays: Per-segment cache.

    Returns:
        ``(docnum, score)`` for documents with score > 0, score descending (ties in docnum
        order; callers re-sort by their own key), or None if the index layout is not the
        one this module reads (use Whoosh's search).
    """
    reader = searcher.ixreader
    n = searcher.doc_count_all()
    scores = np.zeros(n, dtype=np.float64)
    avgfl = searcher.avg_field_length(field) or 1
    leaves = reader.leaf_readers()
    for term in terms:
        weight = idf(n_docs=n, df=searcher.doc_frequency(field, term), variant=params.idf)
        for leaf, offset in leaves:
            got = arrays.postings(leaf, field, term)
            if got is None:
                return None
            ids, tf = got
            if not len(ids):
                continue
            lengths = arrays.lengths(leaf, field)[ids]
            scores[ids + offset] += term_score(tf=tf, length=lengths, avg_length=avgfl, idf=weight, params=params)
    scores[~mask] = 0.0
    hits = np.flatnonzero(scores > 0)
    if len(hits) > limit:
        cut = np.partition(scores[hits], len(hits) - limit)[len(hits) - limit]
        hits = hits[scores[hits] >= cut]
    order = hits[np.lexsort((hits, -scores[hits]))]
    return [(int(d), float(scores[d])) for d in order]
