"""Whoosh query construction for :mod:`retrieval.lexical.whoosh_index` (no query-syntax parsing)."""

from __future__ import annotations

from collections.abc import Sequence

from whoosh import query as wq
from whoosh.searching import Searcher

from cairn.retrieval.analysis import analyze_runs

CJK_MODES = ("or", "phrase", "or+phrase")


def bm25_query(
    query: str,
    *,
    cjk_mode: str = "or",
    title_boost: float = 0.0,
    searcher: Searcher | None = None,
    prune_df_ratio: float = 1.0,
) -> wq.Query | None:
    """Build a disjunctive BM25 query from free text.

    Each distinct analysed term (first-occurrence order) becomes a ``body`` term, plus a
    ``title`` term boosted by ``title_boost`` when that is > 0. CJK runs contribute their
    bigrams as terms (``cjk_mode`` "or"), as one phrase ("phrase"), or both ("or+phrase").
    With a ``searcher``, terms whose document frequency exceeds ``prune_df_ratio`` of all
    documents are dropped (a ``max_df`` cut), unless that would drop every term.

    Args:
        query: Free text.
        cjk_mode: ``"or"``, ``"phrase"`` or ``"or+phrase"``.
        title_boost: Weight of the title field, >= 0 (0 leaves it out).
        searcher: Source of document frequencies for pruning; None disables pruning.
        prune_df_ratio: Fraction of documents above which a term is pruned, in (0, 1].

    Returns:
        A Whoosh ``Or`` query, or None if no term is left after analysis (empty text,
        only stop words or punctuation).

    Raises:
        ValueError: If ``cjk_mode`` is unknown.
    """
    if cjk_mode not in CJK_MODES:
        raise ValueError(f"cjk_mode must be one of {CJK_MODES}, got {cjk_mode!r}")
    terms: list[str] = []
    phrases: list[list[str]] = []
    for run in analyze_runs(query):
        if len(run) == 1 or cjk_mode in ("or", "or+phrase"):
            terms.extend(term for term in run if term not in terms)
        if len(run) > 1 and cjk_mode in ("phrase", "or+phrase"):
            phrases.append(run)
    fields = ("body", "title") if title_boost > 0 else ("body",)
    if searcher is not None and len(terms) > 1:
        cap = prune_df_ratio * searcher.doc_count_all()
        kept = [t for t in terms if max(searcher.doc_frequency(f, t) for f in fields) <= cap]
        terms = kept or terms
    clauses: list[wq.Query] = []
    for term in terms:
        clauses.append(wq.Term("body", term))
        if title_boost > 0:
            clauses.append(wq.Term("title", term, boost=title_boost))
    for run in phrases:
        clauses.append(wq.Phrase("body", run))
        if title_boost > 0:
            clauses.append(wq.Phrase("title", run, boost=title_boost))
    return wq.Or(clauses) if clauses else None


def filter_query(
    workspace_id: str,
    collection_ids: Sequence[str] | None = None,
    document_ids: Sequence[str] | None = None,
) -> wq.Query:
    """Build the allow-filter: the workspace, and any of the given collections/documents.

    Args:
        workspace_id: Required workspace.
        collection_ids: If given (non-empty), the passage's collection must be one of them.
        document_ids: If given (non-empty), the passage's document must be one of them.

    Returns:
        A Whoosh ``And`` of ``Term``/``Or`` clauses (ids sorted for a stable query).
    """
    clauses: list[wq.Query] = [wq.Term("workspace_id", workspace_id)]
    if collection_ids:
        clauses.append(wq.Or([wq.Term("collection_id", c) for c in sorted(set(collection_ids))]))
    if document_ids:
        clauses.append(wq.Or([wq.Term("document_id", d) for d in sorted(set(document_ids))]))
    return wq.And(clauses)
