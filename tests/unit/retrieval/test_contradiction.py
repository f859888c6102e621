"""Contradiction flags: same statement, different numbers; never mere topic overlap."""

from __future__ import annotations

from cairn.retrieval.contradiction import find_contradictions


def test_conflicting_numbers_about_the_same_fact_are_flagged():
    items = [
        ("a", "Revenue of Example Corp in 2023 was 12 million euros."),
        ("b", "Revenue of Example Corp in 2023 was 15 million euros."),
        ("c", "Example Corp opened an office in Lisbon in 2023."),
    ]
    assert find_contradictions(items) == {"a": {"b"}, "b": {"a"}}


def test_same_numbers_or_no_numbers_are_not_contradictions():
    assert find_contradictions([("a", "The CFO is Alice Smith."), ("b", "The CFO is Bob Jones.")]) == {}
    assert (
        find_contradictions([("a", "Revenue in 2023 was 12 million."), ("b", "Revenue in 2023 was 12 million!")]) == {}
    )
