"""PII masking of memory text (app.memory.pii) on the test set of tests/unit/memory/pii_cases.py."""

from __future__ import annotations

import pytest

from cairn.app.memory.pii import KINDS, PLACEHOLDER_RE, find_pii, fold, mask_pii, only_placeholders
from tests.unit.memory.pii_cases import EXACT, NEGATIVE, POSITIVE


def test_the_set_is_large_and_covers_every_kind():
    assert len(POSITIVE) + len(NEGATIVE) >= 200
    assert (
        {k for _, k, _ in POSITIVE}
        == set(KINDS)
        == {
            "EMAIL",
            "PHONE",
            "IL_ID",
            "CARD",
            "IBAN",
            "BANK_ACCOUNT",
            "NUMBER",
            "IP",
            "MY_NUMBER",
            "CN_ID",
            "TW_ID",
            "HK_ID",
            "US_SSN",
            "UK_NINO",
            "UK_NHS",
            "CA_SIN",
            "AU_TFN",
            "IN_AADHAAR",
        }
    )


@pytest.mark.parametrize("text,kind,secret", POSITIVE, ids=[f"{k}-{i}" for i, (_, k, _) in enumerate(POSITIVE)])
def test_personal_data_is_masked_with_its_kind(text, kind, secret):
    masked = mask_pii(text)
    assert secret not in masked.text
    assert f"[{kind}_1]" in masked.text, masked.text
    assert masked.counts.get(kind, 0) >= 1


@pytest.mark.parametrize("text,kind,secret", POSITIVE, ids=[f"{k}-{i}" for i, (_, k, _) in enumerate(POSITIVE)])
def test_every_character_of_the_value_is_covered_by_one_span_of_its_kind(text, kind, secret):
    # "…002X" masked as a card left the X behind; "iban de44 …" masked only the digits after "de44"
    start = text.index(secret)
    assert [k for s, e, k in find_pii(text) if s <= start and start + len(secret) <= e] == [kind], find_pii(text)


@pytest.mark.parametrize("text,expected", EXACT)
def test_span_boundaries_and_numbering(text, expected):
    assert mask_pii(text).text == expected


@pytest.mark.parametrize("text", NEGATIVE)
def test_look_alikes_are_left_alone(text):
    masked = mask_pii(text)
    assert masked.text == text and not masked.changed


def test_placeholders_are_deterministic_and_number_distinct_values():
    text = "a@x.io wrote to b@y.io, then a@x.io again; call +972-52-123-4567"
    one, two = mask_pii(text), mask_pii(text)
    assert one == two
    assert one.text == "[EMAIL_1] wrote to [EMAIL_2], then [EMAIL_1] again; call [PHONE_1]"
    assert one.counts == {"EMAIL": 2, "PHONE": 1}


def test_only_placeholders():
    assert only_placeholders(mask_pii("dana@example.com, +44 20 7946 0958!").text)
    assert not only_placeholders(mask_pii("dana@example.com likes tea").text)
    assert PLACEHOLDER_RE.fullmatch("[IL_ID_3]")


@pytest.mark.parametrize(
    "text,kind",
    [
        ("card 4111  1111  1111  1111", "CARD"),
        ("4111\u00a01111\u00a01111\u00a01111", "CARD"),
        ("4111_1111_1111_1111", "CARD"),
        ("4111/1111/1111/1111", "CARD"),
        ("call 1-800-555-0199", "PHONE"),
        ("1 415 555 2671", "PHONE"),
        ("415-555-2671x22", "PHONE"),
        ("415-555-2671 ext. 22", "PHONE"),
    ],
)
def test_separator_and_prefix_variants_found_in_review(text, kind):
    out = mask_pii(text)
    assert out.counts == {kind: 1}, out.text
    assert not any(ch.isdigit() for ch in PLACEHOLDER_RE.sub("", out.text))


def test_fold_keeps_offsets_and_normalises_digits_spaces_and_dashes():
    text = "ＩＤ\u00a0１２３\u2013٤٥\u300003ー12 データー"
    assert fold(text) == "ID 123-45 03-12 データー"
    assert len(fold(text)) == len(text)
    assert fold("plain ascii") == "plain ascii"
