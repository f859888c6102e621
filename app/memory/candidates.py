"""Recall candidates: which of the caller's memories the ranking legs see (SPEC §7).

SPEC §7 ranks "the newest 300 *matching* memories". Matching means matching the query, not
only the filters. The rule, every step in SQL filtered by owner member and workspace (the
privacy filter is inside every query), by ``namespace`` / ``collectionId`` / ``asOf`` when
given, and by "current at that time" (not superseded; forgotten and purged rows are gone):

1. **Word match**: memories sharing an analysed term with the query. Terms are those of
   the BM25 leg (:func:`retrieval.analysis.analyze`: lowercase, stop words out, Porter2
   stems, CJK bigrams), kept per memory in :class:`app.core.models.MemoryTerm` (written with the
   memory, deleted with it) and looked up by the ``(workspace, owner, term)`` index, so
   "running" finds "runs" (a ``LIKE`` prefilter could not). Rarest terms first: the query
   terms are taken in increasing document frequency (among the caller's memories passing
   the filters; ties by term) while the memories holding any taken term still fit in the
   300 window together with step 2's memories; the rarest term is always taken (if it alone overflows, its newest 300
   count). So a term most memories hold (a speaker's name on every line) stops flooding
   the window with memories that match nothing else once rarer terms fill it: the idea
   of Elasticsearch's common-terms cutoff, with the cutoff set by the window. A query
   whose matches all fit takes every term (plain "shares at least one term").
2. **Meaning match** (computed first): the :data:`VECTOR_CANDIDATES` memories with the highest cosine
   similarity between the query embedding and the stored memory embedding, computed in
   numpy over *all* of the caller's memories that pass the filters (≤ 5,000 by the SPEC
   cap). Query encoding + loading the vectors + cosine share the 800 ms budget; past it,
   or with no embedding model, this step (and the vector leg) is skipped and reported.
3. The union of 1 and 2, newest first (``recorded_at``, then id), cut to 300: these are
   the candidates ranked by :mod:`app.memory.rank`.

Measured (``python -m bench.locomo --full``, LoCoMo, 10 conversations of 369–689 turns
stored as memories, 1,535 questions, evidence recall@10 as served): "newest 300 by the
filters only" 0.351; step 1 as plain "shares any term" + step 2: 0.437 (a speaker's name on
every line matched ~half a conversation, mean 298 candidates); this rule: fusion 0.646,
BM25 alone 0.590, cosine alone 0.502 (same candidates, mean 217), vs 0.631 with every memory a
candidate. Latency at the 5,000 cap: ``python -m bench.memory_recall_speed``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from sqlalchemy import ColumnElement, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from cairn.app.core.ids import as_utc
from cairn.app.core.models import AgentMemory, MemoryTerm
from cairn.app.governance import Principal
from cairn.retrieval.analysis import analyze
from cairn.retrieval.embeddings import Embedder

RECALL_CANDIDATES = 300
VECTOR_CANDIDATES = 100
"""How many of the most cosine-similar memories join the word matches (step 2)."""
VECTOR_BUDGET_S = 0.8
MAX_TERM = 64


@dataclass
class LegReport:
    """One ranking leg of a recall: ``status`` USED / SKIPPED, with the reason and time (ms)."""

    name: str
    status: str
    detail: str = ""
    ms: float = 0.0


@dataclass
class Candidates:
    """The candidates (newest first) and the vector stage's outcome.

    ``sims`` maps memory id → cosine with the query for every memory with a usable vector
    (None when the vector stage was skipped); ``word_matches`` / ``vector_matches`` count
    the ids steps 1 and 2 contributed before the cut (step 1 counts at most the window).
    """

    rows: list[AgentMemory]
    sims: dict[str, float] | None
    vector_report: LegReport
    word_matches: int
    vector_matches: int


def memory_terms(text: str) -> list[str]:
    """Distinct analysed terms of ``text`` (BM25 leg's analyzer), cut to 64 characters, sorted."""
    return sorted({t[:MAX_TERM] for t in analyze(text)})


def term_rows(row: AgentMemory) -> list[MemoryTerm]:
    """The :class:`MemoryTerm` rows of a stored memory (its masked text)."""
    return [
        MemoryTerm(memory_id=row.id, term=t, workspace_id=row.workspace_id, owner_member_id=row.owner_member_id)
        for t in memory_terms(row.text)
    ]


def owned_conditions(
    principal: Principal,
    *,
    namespace: str | None = None,
    key: str | None = None,
    collection_id: str | None = None,
    as_of: datetime | None = None,
    all_versions: bool = False,
) -> list[ColumnElement[bool]]:
    """SQL conditions: the caller's own memories in their workspace, current (at ``as_of``).

    ``all_versions``: superseded versions too (those recorded by ``as_of`` when it is given).
    """
    conds = [
        col(AgentMemory.workspace_id) == principal.workspace_id,
        col(AgentMemory.owner_member_id) == principal.member_id,
    ]
    if namespace is not None:
        conds.append(col(AgentMemory.namespace) == namespace)
    if key is not None:
        conds.append(col(AgentMemory.key) == key)
    if collection_id is not None:
        conds.append(col(AgentMemory.collection_id) == collection_id)
    if all_versions:
        if as_of is not None:
            conds.append(col(AgentMemory.recorded_at) <= as_of)
    elif as_of is None:
        conds.append(col(AgentMemory.superseded_at).is_(None))
    else:
        conds += [
            col(AgentMemory.recorded_at) <= as_of,
            col(AgentMemory.superseded_at).is_(None) | (col(AgentMemory.superseded_at) > as_of),
        ]
    return conds


async def _vector_stage(
    s: AsyncSession, embedder: Embedder | None, query: str, conds: Sequence
) -> tuple[list[tuple[str, datetime, float]] | None, LegReport]:
    started = time.perf_counter()

    def elapsed() -> float:
        return round((time.perf_counter() - started) * 1000, 1)

    if embedder is None:
        return None, LegReport("vector", "SKIPPED", "no embedding model configured")
    try:
        qv = await asyncio.wait_for(asyncio.to_thread(embedder.encode_query, query), timeout=VECTOR_BUDGET_S)
    except TimeoutError:
        return None, LegReport("vector", "SKIPPED", "query encoding exceeded the 800 ms budget", elapsed())
    model = embedder.name
    width = qv.size * 4
    rows = [
        r
        for r in (
            await s.execute(
                select(col(AgentMemory.id), col(AgentMemory.recorded_at), col(AgentMemory.embedding)).where(
                    *conds, col(AgentMemory.embedding_model) == model, col(AgentMemory.embedding).is_not(None)
                )
            )
        ).all()
        if len(r.embedding) == width
    ]
    if rows:
        matrix = np.frombuffer(b"".join(r.embedding for r in rows), dtype="<f4").reshape(len(rows), qv.size)
        sims = matrix @ np.asarray(qv, dtype=np.float32)
    else:
        sims = np.zeros(0, dtype=np.float32)
    ms = elapsed()
    if ms > VECTOR_BUDGET_S * 1000:
        return None, LegReport("vector", "SKIPPED", f"cosine over {len(rows)} memories exceeded the 800 ms budget", ms)
    scored = [(r.id, as_utc(r.recorded_at), float(x)) for r, x in zip(rows, sims.tolist())]
    return scored, LegReport("vector", "USED", f"{len(rows)} memories with vectors", ms)


async def _word_matches(
    s: AsyncSession, principal: Principal, terms: Sequence[str], conds: Sequence, limit: int, seed: set[str]
) -> dict[str, datetime]:
    """Step 1: id → recorded_at of the newest ``limit`` memories holding a taken query term.

    ``seed``: step 2's ids; a term is taken while ``seed`` ∪ its matches fit in ``limit``.
    """
    if not terms:
        return {}
    pairs = (
        await s.execute(
            select(col(MemoryTerm.term), col(AgentMemory.id), col(AgentMemory.recorded_at))
            .join(AgentMemory, col(AgentMemory.id) == col(MemoryTerm.memory_id))
            .where(
                col(MemoryTerm.workspace_id) == principal.workspace_id,
                col(MemoryTerm.owner_member_id) == principal.member_id,
                col(MemoryTerm.term).in_(terms),
                *conds,
            )
        )
    ).all()
    postings: dict[str, set[str]] = {}
    at: dict[str, datetime] = {}
    for term, mid, recorded in pairs:
        postings.setdefault(term, set()).add(mid)
        at[mid] = as_utc(recorded)
    chosen: set[str] = set()
    for term in sorted(postings, key=lambda t: (len(postings[t]), t)):
        union = chosen | postings[term]
        if chosen and len(union | seed) > limit:
            break
        chosen = union
    newest = sorted(chosen, key=lambda mid: (at[mid], mid), reverse=True)[:limit]
    return {mid: at[mid] for mid in newest}


async def select_candidates(
    s: AsyncSession,
    principal: Principal,
    query: str,
    conds: Sequence,
    *,
    embedder: Embedder | None = None,
    limit: int = RECALL_CANDIDATES,
    vector_candidates: int = VECTOR_CANDIDATES,
) -> Candidates:
    """The newest ``limit`` memories matching ``query`` by word or by meaning (module doc).

    Args:
        conds: :func:`owned_conditions` of the caller (always holds the owner filter).
        embedder: An :class:`retrieval.embeddings.Embedder`, or None (step 2 skipped).
        limit: The window (SPEC: 300). ``vector_candidates``: step 2's size.

    Returns:
        :class:`Candidates`; rows newest first (``recorded_at`` desc, then id desc).
    """
    scored, report = await _vector_stage(s, embedder, query, conds)
    sims = None
    top: list[tuple[str, datetime, float]] = []
    if scored is not None:
        sims = {mid: x for mid, _, x in scored}
        top = sorted(scored, key=lambda t: -t[2])[:vector_candidates]
    found = await _word_matches(s, principal, memory_terms(query), conds, limit, {mid for mid, _, _ in top})
    word = len(found)
    found.update((mid, at) for mid, at, _ in top)
    ids = [mid for mid, _ in sorted(found.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)[:limit]]
    rows: list[AgentMemory] = []
    if ids:
        by_id = {
            r.id: r
            for r in (await s.execute(select(AgentMemory).where(*conds, col(AgentMemory.id).in_(ids)))).scalars()
        }
        rows = [by_id[i] for i in ids if i in by_id]
    return Candidates(rows, sims, report, word, len(top))
