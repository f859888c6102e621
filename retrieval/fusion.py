"""Fusion of several retrieval legs (e.g. BM25 and dense vectors).

Packs fuse with :func:`hybrid_fusion` (score-based, issue 18; method and sources in its
docstring). :func:`rrf` fuses packs read as of a past time (ranks only, so they recompute
byte for byte), memory recall and ontology recall.

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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

DEFAULT_K = 60


@dataclass(frozen=True)
class Fused:
    """One fused result.

    Attributes:
        id: The item id.
        score: The fused score, higher first: ``Σ w / (k + rank)`` (> 0) from :func:`rrf`, or
            ``Σ w · norm(score)`` (>= 0) from :func:`score_fusion` / :func:`hybrid_fusion`.
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


Normalizer = Callable[[Sequence[float]], list[float]]
"""One leg's scores, best first → normalised scores in the same order."""

Scored = Sequence[tuple[str, float]]
"""One leg's result: ``(id, leg score)``, best first (BM25 score, cosine similarity, …)."""


def minmax(scores: Sequence[float]) -> list[float]:
    """Min-max normalisation of one leg's scores to [0, 1] (best → 1, worst returned → 0).

    Lee 1997 ("Analyses of multiple evidence combination"); the normalisation of the convex
    combination in Bruch, Gai & Ingber 2023 ("An Analysis of Fusion Functions for Hybrid
    Retrieval", ACM TOIS 42(1)). All equal (or one result) → all 1.0.
    """
    if not scores:
        return []
    hi, lo = max(scores), min(scores)
    if hi <= lo:
        return [1.0] * len(scores)
    return [(s - lo) / (hi - lo) for s in scores]


def dbsf(scores: Sequence[float]) -> list[float]:
    """Distribution-based score normalisation: ``(s − (μ − 3σ)) / 6σ`` clipped to [0, 1].

    Mazzeschi 2023 ("Distribution-based Score Fusion (DBSF), a new approach to Vector Search
    Ranking", also Qdrant's ``Fusion.DBSF``): the leg's mean ± 3 standard deviations bound
    its scores instead of its extremes. Fewer than two results or σ = 0 → all 1.0.
    """
    if len(scores) < 2:
        return [1.0] * len(scores)
    mu = sum(scores) / len(scores)
    sigma = math.sqrt(sum((s - mu) ** 2 for s in scores) / len(scores))
    if sigma == 0:
        return [1.0] * len(scores)
    lo = mu - 3 * sigma
    return [min(1.0, max(0.0, (s - lo) / (6 * sigma))) for s in scores]


def score_fusion(
    legs: Mapping[str, Scored],
    weights: Mapping[str, float] | None = None,
    *,
    normalize: Normalizer = minmax,
) -> list[Fused]:
    """Weighted sum of normalised leg scores: ``score(d) = Σ_leg w_leg · norm_leg(d)``.

    An item a leg did not return gets 0 from that leg. With :func:`minmax` and weights
    summing to 1 this is the convex combination of Bruch et al. 2023; with :func:`dbsf` it is
    distribution-based score fusion (Mazzeschi 2023).

    Args:
        legs: Leg name → ``(id, score)`` best first (scores need not be comparable between
            legs; each leg is normalised on its own).
        weights: Leg name → weight >= 0; missing legs weigh 1.0.
        normalize: Scores of one leg → normalised scores, same order.

    Returns:
        Every id returned by any leg, score desc then id asc; ``ranks`` as in :func:`rrf`.

    Raises:
        ValueError: A weight negative or not finite, a leg that is a str, or an id listed twice.
    """
    weights = weights or {}
    for leg, weight in weights.items():
        if not math.isfinite(weight) or weight < 0:
            raise ValueError(f"weight of leg {leg!r} must be a finite number >= 0, got {weight}")
    ranks: dict[str, dict[str, int]] = {}
    parts: dict[str, dict[str, float]] = {}
    for leg in sorted(legs):
        results = legs[leg]
        if isinstance(results, str):
            raise ValueError(f"leg {leg!r} must be a sequence of (id, score), not a str")
        norm = normalize([float(s) for _, s in results])
        w = float(weights.get(leg, 1.0))
        for rank, ((item, _), n) in enumerate(zip(results, norm), start=1):
            if leg in ranks.get(item, {}):
                raise ValueError(f"leg {leg!r} lists id {item!r} more than once")
            ranks.setdefault(item, {})[leg] = rank
            parts.setdefault(item, {})[leg] = w * n
    fused = [
        Fused(id=item, score=sum(parts[item][leg] for leg in sorted(parts[item])), ranks=dict(sorted(r.items())))
        for item, r in ranks.items()
    ]
    fused.sort(key=lambda f: (-f.score, f.id))
    return fused


def scale_to_top(scores: Sequence[float]) -> list[float]:
    """Theoretical-min-max normalisation: ``max(s, 0) / max(scores)`` (best → 1, a score of 0 → 0).

    The "TMM" normalisation of Bruch, Gai & Ingber 2023 with a theoretical minimum of 0 (BM25
    scores are >= 0; a cosine below 0 counts as 0). Unlike :func:`minmax` it does not depend on
    the worst result a leg happened to return, so a passage added at the bottom of a leg (a
    later, unrelated write the dense leg still lists) changes no other passage's score. A
    top score <= 0 → all 0.0 (the leg found no evidence: it adds nothing).
    """
    hi = max(scores, default=0.0)
    if hi <= 0:
        return [0.0] * len(scores)
    return [max(s, 0.0) / hi for s in scores]


def leg_confidence(scores: Sequence[float], n: int = 10, normalize: Normalizer | None = None) -> float:
    """How far a leg's top result stands out from its next ones, in [0, 1].

    ``1 − mean(normalize(scores)[1:n])`` (``normalize`` default :func:`minmax`; packs use
    :data:`HYBRID_NORMALIZE`): 1 when ranks 2..n score far below rank 1 (one clear winner,
    e.g. the only passage holding a rare code), near 0 when the top n are a flat plateau (the
    leg cannot tell them apart). 0 for fewer than two results. A query-time signal of the kind used for query performance prediction (score
    gaps of the head of a ranking; Shtok et al. 2012, "Predicting query performance by
    query-drift estimation").
    """
    norm = (normalize or minmax)(list(scores))
    rest = norm[1:n]
    return 1.0 - sum(rest) / len(rest) if rest else 0.0


HYBRID_LEXICAL_SHARE = 0.5
"""α of the convex combination: the lexical leg's base weight; the dense leg's is 1 − α."""
HYBRID_CONFIDENCE_BOOST = 4.0
"""β: a leg's weight is multiplied by ``1 + β · leg_confidence``."""
HYBRID_CONFIDENCE_DEPTH = 10
"""n of :func:`leg_confidence`."""


def hybrid_weights(legs: Mapping[str, Scored], priors: Mapping[str, float] | None = None) -> dict[str, float]:
    """Per-query leg weights of :func:`hybrid_fusion` (see there)."""
    priors = priors or {}
    base = {"lexical": HYBRID_LEXICAL_SHARE, "dense": 1.0 - HYBRID_LEXICAL_SHARE}
    out = {}
    for leg in sorted(legs):
        conf = leg_confidence([float(s) for _, s in legs[leg]], HYBRID_CONFIDENCE_DEPTH, HYBRID_NORMALIZE)
        out[leg] = base.get(leg, 1.0) * float(priors.get(leg, 1.0)) * (1.0 + HYBRID_CONFIDENCE_BOOST * conf)
    return out


def hybrid_fusion(legs: Mapping[str, Scored], priors: Mapping[str, float] | None = None) -> list[Fused]:
    """Cairn's HYBRID fusion: a convex combination of normalised leg scores whose per-query
    weights trust a leg in proportion to how clearly its top result stands out.

    ``score(d) = Σ_leg w_leg · norm_leg(d)`` (0 from a leg that did not return ``d``; ``norm``
    = :data:`HYBRID_NORMALIZE`, each leg's scores divided by its top score), with
    ``w_leg = base_leg · prior_leg · (1 + β · leg_confidence(leg))``: ``base`` is α
    (:data:`HYBRID_LEXICAL_SHARE`) for ``lexical`` and 1 − α for ``dense`` (1 for other
    legs); ``prior`` is the caller's static weight (the dense leg's vocabulary-coverage
    weight, the temporal leg's weight); β = :data:`HYBRID_CONFIDENCE_BOOST`.

    Method: the convex combination of theoretical-min-max normalised scores ("TM2C2" in
    Bruch, Gai & Ingber 2023, "An Analysis of Fusion Functions for Hybrid Retrieval", ACM
    TOIS 42(1), which find it beats RRF in and out of domain, tuned with few queries) plus
    query-time leg weights from score gaps (:func:`leg_confidence`). α = 0.5, β = 4 and the
    normalisation were chosen on the tuning splits of three sets (SciFact train, JSQuAD
    even articles, LoCoMo conversations 1–5; ``python -m bench.fusion eval``); plain min-max
    scored the same there but moved every score when an unrelated passage joined the
    bottom of the dense leg (replay of past packs). Unlike RRF, a leg's one clear winner (a rare
    code BM25 alone matches) keeps its lead over items both legs find weakly, and a leg
    whose head is flat moves the ranking little. Measured and chosen with ``bench/fusion.py``
    on SciFact, JSQuAD and LoCoMo turns (BENCHMARKS.md).

    Args:
        legs: Leg name → ``(id, score)`` best first.
        priors: Leg name → static weight >= 0 (missing: 1.0); a leg with prior 0 still
            reports its ranks but adds nothing.

    Returns:
        :class:`Fused` items, score desc then id asc.
    """
    return score_fusion(legs, hybrid_weights(legs, priors), normalize=HYBRID_NORMALIZE)


HYBRID_NORMALIZE = scale_to_top
"""The normalisation of :func:`hybrid_fusion` and of its leg confidence."""
