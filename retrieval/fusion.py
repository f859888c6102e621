"""Rank fusion of several retrieval legs (e.g. BM25 and dense vectors).

Reciprocal rank fusion, Cormack, Clarke & Büttcher 2009 ("Reciprocal Rank Fusion
outperforms Condorcet and individual Rank Learning Methods"), k = 60, ranks from 1:
``score(d) = Σ_leg w_leg / (k + rank_leg(d))`` over the legs that returned ``d``.
Only ranks matter, so legs with incomparable scores (BM25, cosine) fuse without
normalisation. Weights default to 1 (the original, unweighted RRF).

Determinism: per-item sums are added in leg-name order (so the float result does not
depend on the mapping's order) and ties are broken by id ascending.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

DEFAULT_K = 60


@dataclass(frozen=True)
class Fused:
    """One fused result.

    Attributes:
        id: The item id.
        score: RRF score, ``Σ w / (k + rank)`` (> 0).
        ranks: Leg name → 1-based rank in that leg; legs that did not return the item
            are absent.
    """

    id: str
    score: float
    ranks: dict[str, int] = field(default_factory=dict)


def rrf(
    ranked_lists: Mapping[str, Sequence[str]],
    *,
    k: int = DEFAULT_K,
    weights: Mapping[str, float] | None = None,
) -> list[Fused]:
    """Fuse ranked id lists by (weighted) reciprocal rank fusion (see module doc).

    Args:
        ranked_lists: Leg name → ids, best first (rank 1 is the first id). Empty legs
            are allowed.
        k: RRF constant, > 0 (60 in Cormack et al. 2009 and in Cairn's spec).
        weights: Leg name → weight >= 0; legs missing here weigh 1.0. Weights of legs
            absent from ``ranked_lists`` are ignored, so one weight table serves
            requests that skip a leg. A leg weighted 0 still reports its ranks.

    Returns:
        Every id returned by any leg, score desc then id asc.

    Raises:
        ValueError: If ``k`` <= 0, a weight is negative or not finite, a leg is a str,
            or a leg lists the same id twice.
    """
    if not k > 0:
        raise ValueError(f"k must be > 0, got {k}")
    weights = weights or {}
    for leg, weight in weights.items():
        if not math.isfinite(weight) or weight < 0:
            raise ValueError(f"weight of leg {leg!r} must be a finite number >= 0, got {weight}")
    ranks: dict[str, dict[str, int]] = {}
    for leg in sorted(ranked_lists):
        ids = ranked_lists[leg]
        if isinstance(ids, str):
            raise ValueError(f"leg {leg!r} must be a sequence of ids, not a str")
        seen: set[str] = set()
        for rank, item in enumerate(ids, start=1):
            if item in seen:
                raise ValueError(f"leg {leg!r} lists id {item!r} more than once")
            seen.add(item)
            ranks.setdefault(item, {})[leg] = rank
    fused = []
    for item, item_ranks in ranks.items():
        score = 0.0
        for leg in sorted(item_ranks):
            score += float(weights.get(leg, 1.0)) / (k + item_ranks[leg])
        fused.append(Fused(id=item, score=score, ranks=dict(sorted(item_ranks.items()))))
    fused.sort(key=lambda f: (-f.score, f.id))
    return fused
