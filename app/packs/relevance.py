"""The relevance floor of a pack (issue 35): leave out fused candidates far below the best one.

Runs in the packing stage, after fusion (:func:`app.packs.fusion.fuse_legs`) and before
resolution (:func:`app.packs.resolve.resolve_windows`), so the legs and their fusion are the
same with or without a floor and a candidate under it is never read.

Why relative to the best candidate (``minRelativeScore``) and not an absolute score: a fused
score only compares within one pack — score fusion (:func:`retrieval.fusion.hybrid_fusion`)
sums each leg's score divided by its top with per-query leg weights, so the best item of a
current pack scores 1.31–4.36 (p10–p90 over SciFact, JSQuAD, LoCoMo and the kitchen case),
of a LEXICAL one 0.75–2.30, and a pack read as of a given time is fused by RRF
(Σ w / (60 + rank), best 0.029–0.033). An absolute floor that keeps recall@10 on one set
costs it on another (``minScore`` 1.0: JSQuAD HYBRID unchanged, LoCoMo LEXICAL 0.46 → 0.23);
a share of the top score up to 0.4 kept recall@10 on all three. Off by default: the share
that clears an off-topic tail (0.35) also drops 5–6 % of the relevant items ranked below the
top 10. Figures: BENCHMARKS.md ("Relevance floor"; ``python -m bench.relevance_floor``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cairn.retrieval.fusion import Fused


@dataclass(frozen=True, slots=True)
class Floored:
    """The fused candidates a floor kept (:func:`relevance_floor`).

    Attributes:
        kept: The candidates at or above the floor, in fused rank order.
        below: How many candidates were under it.
        bar: The floor's score (``min_relative_score`` × the best candidate's score); None: no floor.
    """

    kept: list[Fused]
    below: int
    bar: float | None


def relevance_floor(fused: Sequence[Fused], *, min_relative_score: float | None) -> Floored:
    """Keep the fused candidates whose score is at least ``min_relative_score`` × the best
    candidate's score (``fused[0]``: the list is best first).

    Args:
        fused: Fused candidates, score descending (:func:`app.packs.fusion.fuse_legs`).
        min_relative_score: The share of the best score a candidate needs, in (0, 1]
            (validated by :func:`app.packs.types.validate_pack_request`); None: keep all.

    Returns:
        A :class:`Floored`; the best candidate is always kept (its share is 1).
    """
    if min_relative_score is None or not fused:
        return Floored(list(fused), 0, None)
    bar = min_relative_score * fused[0].score
    kept = [f for f in fused if f.score >= bar]
    return Floored(kept, len(fused) - len(kept), bar)


def floor_note(floored: Floored, min_relative_score: float, top: float) -> str:
    """The footer note on what a floor left out (only when it left something out)."""
    return (
        f"relevance floor: {floored.below} candidates scored under {floored.bar:.4g} "
        f"(minRelativeScore {min_relative_score:g} × the best score {top:.4g}) and were left out"
    )
