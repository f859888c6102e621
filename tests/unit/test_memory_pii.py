"""PII masking of memory text (app.services.memory_pii) on the 125-string test set."""

from __future__ import annotations

import pytest

from app.services.memory_pii import PLACEHOLDER_RE, mask_pii, only_placeholders
from tests.unit.pii_cases import NEGATIVE, POSITIVE


def test_the_set_is_large_and_covers_every_kind():
    assert len(POSITIVE) + len(NEGATIVE) >= 100
    assert {k for _, k, _ in POSITIVE} == {"EMAIL", "PHONE", "IL_ID", "CARD", "IBAN", "BANK_ACCOUNT", "NUMBER"}


@pytest.mark.parametrize("text,kind,secret", POSITIVE, ids=[f"{k}-{i}" for i, (_, k, _) in enumerate(POSITIVE)])
def test_personal_data_is_masked_with_its_kind(text, kind, secret):
    masked = mask_pii(text)
    assert secret not in masked.text
    assert f"[{kind}_1]" in masked.text, masked.text
    assert masked.counts.get(kind, 0) >= 1


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


@pytest.mark.parametrize("text,kind", [
    ("card 4111  1111  1111  1111", "CARD"), ("4111\u00a01111\u00a01111\u00a01111", "CARD"),
    ("4111_1111_1111_1111", "CARD"), ("4111/1111/1111/1111", "CARD"),
    ("call 1-800-555-0199", "PHONE"), ("1 415 555 2671", "PHONE"), ("415-555-2671x22", "PHONE"),
    ("415-555-2671 ext. 22", "PHONE"),
])
def test_separator_and_prefix_variants_found_in_review(text, kind):
    out = mask_pii(text)
    assert out.counts == {kind: 1}, out.text
    assert not any(ch.isdigit() for ch in PLACEHOLDER_RE.sub("", out.text))
