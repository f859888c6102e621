"""The fusion methods :mod:`bench.fusion` compares (issue 18): what packs run, the published
baselines (RRF, min-max, DBSF, z-score convex combinations) and the variants studied (leg
weights from score gaps, a third leg of multilingual-e5 over every passage).

Each method is a :data:`FusionFn`: it gets one query's cached legs and returns passage ids,
best first; :func:`bench.fusion.evaluate` ranks documents from them and scores nDCG@10.
Sources of the methods: :mod:`retrieval.fusion`.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence

Leg = list[tuple[str, float]]
"""One leg of one query: ``(passage id, leg score)``, best first."""

FusionFn = Callable[[Mapping[str, Leg], float, Mapping], list[str]]
"""A fusion method: (leg name → ``(passage id, score)`` best first, query coverage, extra) →
passage ids; ``extra``: ``spaces`` (the dense leg per vector space), ``e5_all`` (every passage
ranked by multilingual-e5-small, when cached), ``models`` (space → an object with the model's
``name``, for :func:`app.packs.evidence.dense_evidence`)."""


def methods() -> dict[str, FusionFn]:
    """The fusion methods compared (name → function); see :mod:`retrieval.fusion` for sources."""
    from cairn.retrieval import fusion
    from cairn.retrieval.pipeline import HYBRID, weigh_dense_leg

    def dense_prior(coverage: float) -> float:
        return weigh_dense_leg(coverage, HYBRID).weight

    def lexical_only(legs, coverage, extra=None):
        return [p for p, _ in legs["lexical"]]

    def dense_only(legs, coverage, extra=None):
        return [p for p, _ in legs["dense"]]

    def rrf_plain(legs, coverage, extra=None):
        return [f.id for f in fusion.rrf({k: [p for p, _ in v] for k, v in legs.items()})]

    def rrf_coverage(legs, coverage, extra=None):  # today's pack fusion
        w = dense_prior(coverage)
        lists = {"lexical": [p for p, _ in legs["lexical"]]}
        if w > 0:
            lists["dense"] = [p for p, _ in legs["dense"]]
        return [f.id for f in fusion.rrf(lists, weights={"dense": w})]

    out: dict[str, FusionFn] = {
        "LEXICAL": lexical_only,
        "DENSE": dense_only,
        "rrf k60": rrf_plain,
        "rrf k60, dense × coverage (today)": rrf_coverage,
    }
    out.update(study_methods(dense_prior))

    from cairn.app.packs.evidence import dense_evidence
    from cairn.retrieval.dense import scale_by_space

    def space_of(extra) -> dict[str, str]:
        return {p: name for name, ranked in (extra["spaces"] if extra else {}).items() for p, _ in ranked}

    def chosen(legs, coverage, extra=None):  # what packs run (app/packs/fusion.py ``fuse_legs``)
        scored = {**legs, "dense": dense_evidence(legs["dense"], space_of(extra), extra["models"] if extra else {})}
        return [f.id for f in fusion.hybrid_fusion(scored, {"dense": dense_prior(coverage)})]

    out["hybrid_fusion (chosen)"] = chosen
    for base in (0.0, 0.6, 0.7, 0.75, 0.78, 0.8, 0.82):

        def with_base(legs, coverage, extra=None, base=base):
            scored = {**legs, "dense": scale_by_space(legs["dense"], space_of(extra), {"e5": base})}
            return [f.id for f in fusion.hybrid_fusion(scored, {"dense": dense_prior(coverage)})]

        out[f"hybrid, e5 baseline {base}"] = with_base
    for base in (0.7, 0.78, 0.8):
        for share in ((0.5, 0.25, 0.25), (0.4, 0.3, 0.3), (0.34, 0.33, 0.33), (0.5, 0.5, 0.5)):

            def three(legs, coverage, extra=None, base=base, share=share):
                if not extra or not extra["e5_all"]:
                    return []
                e5 = scale_by_space(extra["e5_all"], {}, {"": base})
                scored = {"lexical": legs["lexical"], "dense": legs["dense"], "e5": e5}
                w = {}
                for (leg, ranked), b in zip(scored.items(), share):
                    conf = fusion.leg_confidence([x for _, x in ranked], 10, fusion.scale_to_top)
                    w[leg] = b * (1 + fusion.HYBRID_CONFIDENCE_BOOST * conf)
                w["dense"] *= dense_prior(coverage)
                return [f.id for f in fusion.score_fusion(scored, w, normalize=fusion.scale_to_top)]

            out[f"3 legs + e5 (base {base}) w{share}"] = three

    def e5_only(legs, coverage, extra=None):
        return [p for p, _ in extra["e5_all"]] if extra else []

    out["e5 alone (all passages)"] = e5_only
    for norm_name, norm in (("minmax", fusion.minmax), ("tmm", fusion.scale_to_top)):
        for alpha in (0.5, 0.6):
            for beta in (0.0, 2.0, 4.0):

                def variant(legs, coverage, extra=None, norm=norm, alpha=alpha, beta=beta):
                    w = {"lexical": alpha, "dense": (1 - alpha) * dense_prior(coverage)}
                    for leg in w:
                        w[leg] *= 1 + beta * fusion.leg_confidence([x for _, x in legs[leg]], 10, norm)
                    return [f.id for f in fusion.score_fusion(legs, w, normalize=norm)]

                out[f"self-{norm_name} a{alpha} b{beta}"] = variant
    return out


def _gap(scores: Sequence[float], n: int = 10) -> float:
    """1 − mean min-max-normalised score of ranks 2..n: how far the leg's top result stands out."""
    from cairn.retrieval.fusion import minmax

    norm = minmax(list(scores))
    rest = norm[1:n]
    return 1.0 - (sum(rest) / len(rest)) if rest else 0.0


def study_methods(dense_prior: Callable[[float], float]) -> dict[str, FusionFn]:
    """Exploratory variants (min-max / DBSF / z-score convex combinations, gap-weighted legs)."""
    from cairn.retrieval import fusion

    def zscore(scores: Sequence[float]) -> list[float]:
        if len(scores) < 2:
            return [1.0] * len(scores)
        mu = statistics.fmean(scores)
        sd = statistics.pstdev(scores) or 1.0
        return [(x - mu) / sd + 3.0 for x in scores]  # shifted so absent (0) is below typical

    def tmm(scores: Sequence[float]) -> list[float]:  # theoretical min 0 (BM25 ≥ 0, cosine clipped)
        hi = max(scores, default=0.0)
        return [max(0.0, x) / hi if hi > 0 else 1.0 for x in scores]

    norms = {"minmax": fusion.minmax, "dbsf": fusion.dbsf, "zscore": zscore, "tmm": tmm}
    out: dict[str, FusionFn] = {}

    def make(
        norm, alpha: float, beta: float = 0.0, gap_n: int = 10, rrf_k: int | None = None, power: float = 0.0
    ) -> FusionFn:
        def fn(legs, coverage, extra=None):
            prior = dense_prior(coverage)
            w = {"lexical": alpha, "dense": (1 - alpha) * prior}
            if beta:
                for leg in w:
                    w[leg] *= 1 + beta * _gap([x for _, x in legs[leg]], gap_n)
            if power:
                for leg in w:
                    w[leg] *= _gap([x for _, x in legs[leg]], gap_n) ** power
            use = {k: v for k, v in legs.items() if w[k] > 0}
            if rrf_k is not None:
                return [f.id for f in fusion.rrf({k: [p for p, _ in v] for k, v in use.items()}, k=rrf_k, weights=w)]
            return [f.id for f in fusion.score_fusion(use, w, normalize=norm)]

        return fn

    for nname, norm in norms.items():
        for alpha in (0.3, 0.4, 0.5, 0.6):
            out[f"{nname} a{alpha}"] = make(norm, alpha)
    for alpha in (0.4, 0.5, 0.6):
        for beta in (1.0, 2.0, 4.0):
            for gn in (2, 10):
                out[f"minmax a{alpha} gap{gn} b{beta}"] = make(fusion.minmax, alpha, beta, gn)
                out[f"dbsf a{alpha} gap{gn} b{beta}"] = make(fusion.dbsf, alpha, beta, gn)
    for alpha in (0.5, 0.6):
        for gn in (2, 5, 10):
            for pw in (0.5, 1.0, 2.0):
                out[f"minmax a{alpha} conf gap{gn} p{pw}"] = make(fusion.minmax, alpha, 0.0, gn, power=pw)
    for k in (20, 60):
        for beta in (0.0, 2.0):
            out[f"rrf k{k} gap10 b{beta}"] = make(None, 0.5, beta, 10, rrf_k=k)
    return out
