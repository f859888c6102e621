"""Candidate finders: exact spans and normalised values of each type."""

from __future__ import annotations

from cairn.app.fields import FieldType, find_candidates, text_key, verify_span
from cairn.app.fields.finders import duration_key
from cairn.app.fields.suggest import suggest


def _found(text, t):
    return [(text[c.start : c.end], c.key) for c in find_candidates(text, t)]


def test_dates_are_iso_with_exact_spans():
    text = "dated this 6th day of January, 2012 and effective March 1, 2020 (or 2/3/2004; 2019-12-31)."
    assert _found(text, FieldType.DATE) == [
        ("6th day of January, 2012", "2012-01-06"),
        ("March 1, 2020", "2020-03-01"),
        ("2/3/2004", "2004-02-03"),
        ("2019-12-31", "2019-12-31"),
    ]
    assert _found("February 30, 2020", FieldType.DATE) == []  # no such day


def test_durations_take_words_digits_and_both():
    text = "for a period of two (2) years, then 18 months, or one-year, and thirty-six months"
    assert [k for _, k in _found(text, FieldType.DURATION)] == ["2_years", "18_months", "1_year", "36_months"]
    assert duration_key(55.5, "months") == "55.5_months"


def test_money_numbers_booleans():
    text = "a fee of $1,250,000.50 or USD 2 million, 15% of 300 shares; Yes ☐"
    money = find_candidates(text, FieldType.MONEY)
    assert [c.value for c in money] == [
        {"amount": 1250000.5, "currency": "USD"},
        {"amount": 2000000.0, "currency": "USD"},
    ]
    nums = {text[c.start : c.end]: c.value for c in find_candidates(text, FieldType.NUMBER)}
    assert nums["15%"] == {"value": 15, "unit": "%"} and nums["300 shares"] == {"value": 300, "unit": "shares"}
    assert [c.value for c in find_candidates(text, FieldType.BOOLEAN)] == [True, False]


def test_entities_and_their_keys():
    text = "by and between NIKE, Inc., an Oregon corporation, and Eric Dean Sprunk, under the laws of the State of New York."
    found = _found(text, FieldType.TEXT)
    assert ("NIKE, Inc.", "NIKE INC.") in found
    assert ("Oregon", "OREGON") in found and ("New York", "NEW YORK") in found
    assert ("Eric Dean Sprunk", "ERIC DEAN SPRUNK") in found
    assert text_key("Leggett &\nPlatt, Incorporated") == "LEGGETT AND PLATT INC."


def test_a_span_is_verified_against_the_text():
    text = "Term: two (2) years."
    (c,) = find_candidates(text, FieldType.DURATION)
    assert verify_span(text, c.start, c.end, FieldType.DURATION, "2_years")
    changed = text.replace("two (2)", "three (3)")
    assert not verify_span(changed, c.start, c.end, FieldType.DURATION, "2_years")
    assert not verify_span(text, 0, 999, FieldType.DURATION, "2_years")


def test_suggestions_come_from_recurring_label_lines():
    texts = [
        "Effective Date: March 1, 2020\nGoverning Law: Delaware\nFee: $500",
        "Effective Date: June 2, 2021\nGoverning Law: New York\nNotes: none",
        "Effective Date: 2019-01-01\nSomething else entirely.",
    ]
    got = {s.name: (s.type, s.documents) for s in suggest(texts)}
    assert got == {"effective_date": (FieldType.DATE, 3), "governing_law": (FieldType.TEXT, 2)}
    assert "effective_date" not in {s.name for s in suggest(texts, existing=["effective_date"])}


def test_absurd_durations_are_not_values():
    """A 400-digit amount parses to float inf: it is no duration (a label of it is refused, not stored)."""
    from cairn.app.fields.finders import find_durations

    assert find_durations("9" * 400 + " years") == []
    assert [c.value for c in find_durations("for 3 years")] == [{"amount": 3, "unit": "years"}]
