"""Greedy packing in rank order: fit is never bought with rank, except by skipping."""

from __future__ import annotations

import pytest

from cairn.retrieval.packing import PackResult, pack_greedy


def test_greedy_skips_what_does_not_fit_and_continues():
    items = [("a", 40), ("b", 50), ("c", 30), ("d", 10), ("e", 5)]
    result = pack_greedy(items, tokens=lambda i: i[1], max_tokens=85)
    assert [i[0] for i in result.included] == ["a", "c", "d", "e"]
    assert [i[0] for i in result.skipped] == ["b"]
    assert result.tokens_used == 85


def test_rank_is_not_traded_for_a_better_fit():
    # A knapsack would take b+c (100 tokens); greedy keeps the best-ranked a first.
    items = [("a", 60), ("b", 50), ("c", 50)]
    result = pack_greedy(items, tokens=lambda i: i[1], max_tokens=100)
    assert [i[0] for i in result.included] == ["a"]
    assert [i[0] for i in result.skipped] == ["b", "c"]
    assert result.tokens_used == 60


def test_edges():
    assert pack_greedy([], tokens=len, max_tokens=10) == PackResult([], [], 0)
    result = pack_greedy(["", "xx"], tokens=len, max_tokens=0)
    assert (result.included, result.skipped, result.tokens_used) == ([""], ["xx"], 0)
    exact = pack_greedy(["abc", "de"], tokens=len, max_tokens=5)
    assert (exact.included, exact.tokens_used) == (["abc", "de"], 5)


@pytest.mark.parametrize("bad", [-1, 1.5, True, None])
def test_bad_token_counts_raise(bad):
    with pytest.raises(ValueError):
        pack_greedy(["x"], tokens=lambda _: bad, max_tokens=10)


def test_negative_budget_raises():
    with pytest.raises(ValueError):
        pack_greedy(["x"], tokens=len, max_tokens=-1)
