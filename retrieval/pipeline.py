"""Retrieval legs of a pack: which legs run (:class:`RetrievalConfig`), the dense leg's weight
from the model's vocabulary coverage of the task, and running the legs concurrently until a
deadline (:func:`run_legs`).

Pure search machinery: the caller passes the leg searches in as callables (:class:`Legs`),
already bound to its tenant and filters, so nothing here knows workspaces or databases.

Dense-leg weight (:func:`weigh_dense_leg`): coverage ** 4 (1.0 at full coverage, 0.66 at
0.9), and 0 — the leg is skipped — below 90 % coverage. Measured on JSQuAD valid (first
1,000 questions, bench/beir.py, R@10 / nDCG@10): unweighted RRF 0.831 / 0.584; coverage**4
0.932 / 0.730; + skip below 0.8: 0.937 / 0.824; + skip below 0.9: 0.939 / 0.884; BM25 alone
0.955 / 0.912. SciFact HYBRID nDCG@10 is unchanged (0.7105): English claims have coverage ≈ 1.
The coverage is the English model's: a task routed to the multilingual model (CJK script,
:mod:`retrieval.dense`) has no coverage (``Legs.coverage`` returns None) and weighs 1.0.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "DENSE",
    "DENSE_COVERAGE_POWER",
    "DENSE_MIN_COVERAGE",
    "HYBRID",
    "LEG_DEPTH",
    "LEXICAL",
    "RETRIEVAL_CONFIGS",
    "DenseHits",
    "DenseWeight",
    "LegResults",
    "Legs",
    "Ranked",
    "RetrievalConfig",
    "run_legs",
    "weigh_dense_leg",
]

DENSE_COVERAGE_POWER = 4
DENSE_MIN_COVERAGE = 0.9
"""Dense-leg weight = coverage ** DENSE_COVERAGE_POWER; skipped below DENSE_MIN_COVERAGE (module doc)."""

Ranked = list[tuple[str, float]]
"""A leg's result: ``(passage id, leg score)``, best first."""


@dataclass(frozen=True, slots=True)
class RetrievalConfig:
    """Which legs a retrieval mode runs and how the dense leg behaves.

    Attributes:
        name: The mode's wire name (``HYBRID``, ``LEXICAL``, ``DENSE``).
        lexical: Run the BM25 leg.
        dense: Run the dense leg (when an embedding model is configured).
        dense_only: The dense leg is the whole answer: it is required (no model → the caller
            refuses the request), never skipped for low vocabulary coverage (a note warns
            instead), and its evidence notes differ (:mod:`app.packs.evidence`).
    """

    name: str
    lexical: bool
    dense: bool
    dense_only: bool = False


HYBRID = RetrievalConfig("HYBRID", lexical=True, dense=True)
LEXICAL = RetrievalConfig("LEXICAL", lexical=True, dense=False)
DENSE = RetrievalConfig("DENSE", lexical=False, dense=True, dense_only=True)
RETRIEVAL_CONFIGS: dict[str, RetrievalConfig] = {c.name: c for c in (HYBRID, LEXICAL, DENSE)}
"""Wire name → preset."""


LEG_DEPTH = 200
"""Candidates per leg, the same at every budget (issue 18).

It used to be derived from ``maxTokens`` (``clamp(maxTokens / 40, 100, 1000)``), so a passage
found by one leg at rank 150 joined the fusion at 32,000 tokens but not at 4,000: the same
passage's fused score and rank depended on the budget, and two packs of one task disagreed
beyond their top few items. A fixed depth makes the fused list a function of the task and
the data only; a pack at any budget is a greedy prefix of the same ranking. 200 per leg (up
to 400 fused candidates, ~40,000 tokens of 100-token passages) fills the largest budget
(32,000) and ranks ≥ 100 documents for recall@100.
"""


@dataclass(frozen=True, slots=True)
class DenseWeight:
    """The dense leg's static weight for one task (its prior in score fusion, its RRF weight in rank fusion).

    Attributes:
        weight: ``round(coverage ** DENSE_COVERAGE_POWER, 6)``, or 0.0 when skipped.
        skip: Do not run the leg (coverage below :data:`DENSE_MIN_COVERAGE`, not dense-only).
        note: A note for the pack, or None.
    """

    weight: float
    skip: bool = False
    note: str | None = None


def weigh_dense_leg(coverage: float, config: RetrievalConfig) -> DenseWeight:
    """The dense leg's weight from the model's vocabulary coverage of the task (module doc).

    Args:
        coverage: Share (0–1) of the task's word pieces the embedding model knows.
        config: The retrieval mode; dense-only modes are never skipped, only warned about.
    """
    if coverage < DENSE_MIN_COVERAGE and not config.dense_only:
        return DenseWeight(
            0.0,
            skip=True,
            note=(
                f"dense leg skipped: the embedding model knows {coverage:.0%} of the task's word "
                f"pieces (< {DENSE_MIN_COVERAGE:.0%}); BM25 only"
            ),
        )
    note = None
    if coverage < DENSE_MIN_COVERAGE:
        note = (
            f"the embedding model knows only {coverage:.0%} of the task's word pieces; "
            "DENSE results may be poor (HYBRID would rely on BM25 here)"
        )
    return DenseWeight(round(coverage**DENSE_COVERAGE_POWER, 6), note=note)


@dataclass(frozen=True, slots=True)
class DenseHits:
    """What the dense leg's search returns.

    Attributes:
        ranked: One ranking from the per-space lists (:func:`retrieval.dense.merge_spaces`).
        by_space: Vector space → its own ranking before the merge, spaces in search order.
        vectors: Vector space → the task's query vector searched there (a caller searching
            deeper reuses it instead of embedding the task again).
    """

    ranked: Ranked
    by_space: Mapping[str, Ranked]
    vectors: Mapping[str, np.ndarray]


@dataclass(frozen=True, slots=True)
class Legs:
    """The leg searches, bound by the caller to its tenant, filters and depth.

    Attributes:
        lexical: BM25 search of the task.
        encode: Embeds the task: vector space (named vector) → query vector, one per model
            whose passages could match (None: no embedding model configured).
        search_vectors: The dense search with those query vectors (each space searched with
            its own vector, the lists merged: :class:`DenseHits`); None with ``encode``.
        coverage: The English model's vocabulary coverage of the task; the callable is None,
            or returns None, when it does not apply (another model, or a task routed to the
            multilingual model): the leg then weighs 1.0.
    """

    lexical: Callable[[], Ranked]
    encode: Callable[[], Mapping[str, np.ndarray]] | None = None
    search_vectors: Callable[[Mapping[str, np.ndarray]], DenseHits] | None = None
    coverage: Callable[[], float | None] | None = None


@dataclass(frozen=True, slots=True)
class LegResults:
    """What the legs returned by the deadline.

    Attributes:
        ranked: Leg name (``lexical``, ``dense``) → its results, for the legs that finished
            (a skipped dense leg finished with ``[]``); legs in start order.
        late: Legs still running at the deadline (cancelled), in start order.
        weights: Leg name → static fusion weight (``dense`` from :func:`weigh_dense_leg`).
        notes: Notes for the pack (dense leg unavailable, skipped or weak), in order.
        timings: ``lexicalMs``, ``embedMs`` (coverage + query embedding) and ``vectorMs`` (ms,
            2 decimals) of the legs that finished.
        dense: The dense leg's search when it finished and searched (not skipped), else None.

    Built once from the legs that finished: a late leg's thread returns its values to its
    own future, which is dropped; nothing writes here after :func:`run_legs` returned.
    """

    ranked: dict[str, Ranked]
    late: tuple[str, ...]
    weights: dict[str, float]
    notes: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    dense: DenseHits | None = None

    def ids(self) -> dict[str, list[str]]:
        """Leg name → passage ids, best first (the input of :func:`retrieval.fusion.rrf`)."""
        return {name: [pid for pid, _ in out] for name, out in self.ranked.items()}

    def cosine(self) -> dict[str, float]:
        """Passage id → the dense leg's score (cosine similarity); empty without a dense result."""
        return dict(self.ranked.get("dense", ()))


@dataclass(frozen=True, slots=True)
class _Leg:
    """One leg's outcome, returned by its thread (module-internal)."""

    ranked: Ranked
    timings: dict[str, float]
    weight: float | None = None
    note: str | None = None
    dense: DenseHits | None = None


async def run_legs(
    config: RetrievalConfig,
    legs: Legs,
    *,
    deadline: float,
    warm: Callable[[Sequence[tuple[str, float]], Callable[[], bool]], Awaitable[None]] | None = None,
) -> LegResults:
    """Run the legs of ``config`` concurrently (each in a thread) until ``deadline``.

    Args:
        config: Which legs run.
        legs: The searches; without ``legs.encode`` a dense leg is reported unavailable (the
            caller refuses dense-only modes before calling).
        deadline: ``time.monotonic()`` seconds after which unfinished legs are cancelled (a
            late leg's weight, note and timings are dropped with it).
        warm: Pipelining hook: when both legs run and BM25 finishes first, called with its
            results while the dense leg is still embedding (e.g. to prefetch their rows), and
            a callable telling whether the dense leg has finished (true from the moment its
            thread is done; usable inside a synchronous loop); awaited before returning.

    Returns:
        :class:`LegResults`, with ``timings`` of the legs that finished.

    Raises:
        Whatever a finished leg raised.
    """
    clock = time.perf_counter

    def lexical() -> _Leg:
        t = clock()
        out = legs.lexical()
        return _Leg(out, {"lexicalMs": round((clock() - t) * 1000, 2)})

    dense_finished = threading.Event()

    def dense() -> _Leg:
        try:
            return dense_leg()
        finally:
            dense_finished.set()

    def dense_leg() -> _Leg:
        assert legs.encode is not None and legs.search_vectors is not None
        t = clock()
        coverage = legs.coverage() if legs.coverage is not None else None
        decision = weigh_dense_leg(coverage, config) if coverage is not None else None
        if decision is not None and decision.skip:
            return _Leg([], {}, decision.weight, decision.note)
        vec = legs.encode()
        t2 = clock()
        hits = legs.search_vectors(vec)
        timings = {"embedMs": round((t2 - t) * 1000, 2), "vectorMs": round((clock() - t2) * 1000, 2)}
        if decision is None:
            return _Leg(hits.ranked, timings, dense=hits)
        return _Leg(hits.ranked, timings, decision.weight, decision.note, hits)

    notes: list[str] = []
    tasks: dict[str, asyncio.Future[_Leg]] = {}
    if config.lexical:
        tasks["lexical"] = asyncio.ensure_future(asyncio.to_thread(lexical))
    if config.dense:
        if legs.encode is None or legs.search_vectors is None:
            notes.append("dense leg unavailable (no embedding model configured): LEXICAL only")
        else:
            tasks["dense"] = asyncio.ensure_future(asyncio.to_thread(dense))
    warming: asyncio.Future[None] | None = None
    if warm is not None and "lexical" in tasks and "dense" in tasks:
        # Pipelining: if BM25 returns first (the usual case: it takes ~8 ms, the query
        # embedding ~15–20 ms), let the caller read its top candidates' rows while the
        # dense leg is still encoding.
        first, _ = await asyncio.wait(
            tasks.values(), timeout=max(0.0, deadline - time.monotonic()), return_when=asyncio.FIRST_COMPLETED
        )
        if tasks["lexical"] in first and tasks["dense"] not in first and not tasks["lexical"].exception():
            warming = asyncio.ensure_future(warm(tasks["lexical"].result().ranked, dense_finished.is_set))
    done, _pending = await asyncio.wait(tasks.values(), timeout=max(0.0, deadline - time.monotonic()))
    if warming is not None:
        await warming
    finished = {name: fut.result() for name, fut in tasks.items() if fut in done}
    for fut in tasks.values():
        if fut not in done:
            fut.cancel()
    weights = {"lexical": 1.0, "dense": 1.0}
    timings: dict[str, float] = {}
    for leg in finished.values():
        timings.update(leg.timings)
        if leg.note is not None:
            notes.append(leg.note)
    if "dense" in finished and finished["dense"].weight is not None:
        weights["dense"] = finished["dense"].weight
    return LegResults(
        {name: leg.ranked for name, leg in finished.items()},
        tuple(name for name in tasks if name not in finished),
        weights,
        notes,
        timings,
        finished["dense"].dense if "dense" in finished else None,
    )
