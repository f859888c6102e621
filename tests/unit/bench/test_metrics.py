"""Benchmark metrics: nDCG@k is trec_eval's ndcg_cut (linear gain), recall@k."""

from __future__ import annotations

import math

import pytest

from bench.common import ndcg_at, recall_at


def test_ndcg_uses_linear_gain_like_trec_eval():
    rels = {"a": 2, "b": 1, "c": 0}
    # ranked b, x, a: DCG = 1/log2(2) + 2/log2(4); ideal a, b: 2/log2(2) + 1/log2(3)
    expected = (1 + 2 / 2) / (2 + 1 / math.log2(3))
    assert ndcg_at(["b", "x", "a"], rels, 10) == pytest.approx(expected)
    # the exponential-gain variant (2^rel − 1) would give (1 + 3/2) / (3 + 1/log2 3) = 0.6885
    assert ndcg_at(["b", "x", "a"], rels, 10) == pytest.approx(0.7602, abs=1e-4)
    assert ndcg_at(["a", "b"], rels, 10) == 1.0
    assert ndcg_at(["b", "x", "a"], rels, 2) == pytest.approx(1 / (2 + 1 / math.log2(3)))
    assert ndcg_at(["x"], {"a": 0}, 10) == 0.0


def test_recall_counts_relevant_documents_in_the_top_k():
    assert recall_at(["a", "x", "b"], {"a": 1, "b": 1, "c": 0}, 2) == 0.5
    assert recall_at(["a", "x", "b"], {"a": 1, "b": 1}, 3) == 1.0
