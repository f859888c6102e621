"""Reciprocal rank fusion (Cormack et al. 2009): exact scores, ranks, ties, validation."""

from __future__ import annotations

import math

import pytest

from cairn.retrieval.fusion import Fused, rrf


def test_exact_scores_and_ranks():
    fused = rrf({"lexical": ["a", "b", "c"], "dense": ["b", "a", "d"]})
    assert [f.id for f in fused] == ["a", "b", "c", "d"]
    assert fused[0] == Fused("a", 1 / 61 + 1 / 62, {"dense": 2, "lexical": 1})
    assert fused[1] == Fused("b", 1 / 62 + 1 / 61, {"dense": 1, "lexical": 2})
    assert fused[2] == Fused("c", 1 / 63, {"lexical": 3})
    assert fused[3] == Fused("d", 1 / 63, {"dense": 3})


def test_ties_break_by_id_not_input_order():
    # a and b tie exactly (1/61 + 1/62 either way); c and d tie at 1/63.
    first = rrf({"x": ["b", "a", "d"], "y": ["a", "b", "c"]})
    second = rrf({"y": ["a", "b", "c"], "x": ["b", "a", "d"]})
    assert [f.id for f in first] == [f.id for f in second] == ["a", "b", "c", "d"]
    assert [f.score for f in first] == [f.score for f in second]


def test_k_and_weights():
    fused = rrf({"lexical": ["a"], "dense": ["b"]}, k=1, weights={"dense": 3.0, "unused": 9.0})
    assert [(f.id, f.score) for f in fused] == [("b", 3.0 / 2), ("a", 1.0 / 2)]
    zero = rrf({"lexical": ["a"], "dense": ["b"]}, weights={"dense": 0.0})
    assert [(f.id, f.score, f.ranks) for f in zero] == [("a", 1 / 61, {"lexical": 1}), ("b", 0.0, {"dense": 1})]


def test_empty_inputs():
    assert rrf({}) == []
    assert rrf({"lexical": [], "dense": ["x"]}) == [Fused("x", 1 / 61, {"dense": 1})]


@pytest.mark.parametrize(
    "lists,kwargs",
    [
        ({"a": ["x"]}, {"k": 0}),
        ({"a": ["x"]}, {"k": -5}),
        ({"a": ["x", "y", "x"]}, {}),
        ({"a": ["x"]}, {"weights": {"a": -1.0}}),
        ({"a": ["x"]}, {"weights": {"a": math.nan}}),
        ({"a": "xyz"}, {}),
    ],
)
def test_invalid_input_raises(lists, kwargs):
    with pytest.raises(ValueError):
        rrf(lists, **kwargs)


def test_minmax_and_dbsf_normalisation():
    from cairn.retrieval.fusion import dbsf, minmax

    assert minmax([10.0, 6.0, 2.0]) == [1.0, 0.5, 0.0]
    assert minmax([3.0, 3.0]) == [1.0, 1.0] and minmax([]) == []
    # mean 2, population sd sqrt(2/3): bounds 2 ± 3·0.8165
    sd = math.sqrt(2 / 3)
    assert dbsf([3.0, 2.0, 1.0]) == pytest.approx([(3 - 2 + 3 * sd) / (6 * sd), 0.5, (1 - 2 + 3 * sd) / (6 * sd)])
    assert dbsf([5.0]) == [1.0]


def test_score_fusion_is_a_weighted_sum_of_normalised_scores():
    from cairn.retrieval.fusion import score_fusion

    fused = score_fusion(
        {"lexical": [("a", 12.0), ("b", 8.0), ("c", 4.0)], "dense": [("b", 0.9), ("d", 0.5)]},
        {"lexical": 0.6, "dense": 0.4},
    )
    assert [(f.id, round(f.score, 6), f.ranks) for f in fused] == [
        ("b", round(0.6 * 0.5 + 0.4 * 1.0, 6), {"dense": 1, "lexical": 2}),
        ("a", 0.6, {"lexical": 1}),
        ("c", 0.0, {"lexical": 3}),
        ("d", 0.0, {"dense": 2}),
    ]
    with pytest.raises(ValueError):
        score_fusion({"a": [("x", 1.0), ("x", 0.5)]})
    with pytest.raises(ValueError):
        score_fusion({"a": [("x", 1.0)]}, {"a": -1.0})


def test_leg_confidence_is_high_for_one_clear_winner_and_low_for_a_plateau():
    from cairn.retrieval.fusion import leg_confidence

    assert leg_confidence([20.0, 2.0, 1.5, 1.0]) == pytest.approx(1 - (1 / 19 + 0.5 / 19 + 0) / 3)
    assert leg_confidence([0.61, 0.60, 0.60, 0.59, 0.30]) == pytest.approx(1 - (0.30 / 0.31 * 2 + 0.29 / 0.31 + 0) / 4)
    assert leg_confidence([1.0]) == 0.0


def test_hybrid_fusion_trusts_a_leg_whose_top_result_stands_out():
    from cairn.retrieval.fusion import (
        HYBRID_CONFIDENCE_BOOST,
        HYBRID_LEXICAL_SHARE,
        hybrid_fusion,
        hybrid_weights,
        leg_confidence,
        scale_to_top,
    )

    # BM25 finds one passage holding a rare code far ahead of the rest; the dense leg's head
    # is a plateau of passages that BM25 also finds, weakly
    lexical = [("code", 30.0), ("n1", 6.0), ("n2", 5.5), ("n3", 5.0), ("n4", 4.0), ("n5", 1.0)]
    dense = [("n1", 0.62), ("n2", 0.61), ("n3", 0.60), ("n4", 0.60), ("code", 0.35), ("n5", 0.30)]
    w = hybrid_weights({"lexical": lexical, "dense": dense}, {"dense": 1.0})
    assert w["lexical"] == pytest.approx(
        HYBRID_LEXICAL_SHARE * (1 + HYBRID_CONFIDENCE_BOOST * leg_confidence([s for _, s in lexical], 10, scale_to_top))
    )
    assert w["lexical"] > w["dense"]
    fused = hybrid_fusion({"lexical": lexical, "dense": dense}, {"dense": 1.0})
    assert fused[0].id == "code" and fused[0].ranks == {"dense": 5, "lexical": 1}
    code = w["lexical"] * 1.0 + w["dense"] * 0.35 / 0.62  # scores scaled to each leg's top (TMM)
    assert fused[0].score == pytest.approx(code)
    # plain RRF would put three weak both-leg passages above it
    assert [f.id for f in rrf({"lexical": [i for i, _ in lexical], "dense": [i for i, _ in dense]})][0] != "code"
    # a prior of 0 (a skipped or unreadable leg) keeps the leg's ranks and adds nothing
    only = hybrid_fusion({"lexical": lexical, "dense": dense}, {"dense": 0.0})
    assert [f.id for f in only] == [i for i, _ in lexical]
