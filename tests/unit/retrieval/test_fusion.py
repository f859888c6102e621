"""Reciprocal rank fusion (Cormack et al. 2009): exact scores, ranks, ties, validation."""

from __future__ import annotations

import math

import pytest

from retrieval.fusion import Fused, rrf


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
