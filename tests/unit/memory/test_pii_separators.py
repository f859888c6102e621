"""Issue 32 item 6: a value written with spaced or Unicode separators is masked as its compact form.

``ssn 536 - 22 - 1234`` was stored raw while ``536-22-1234`` was masked. The table crosses every
id kind that is written in digit groups with every separator variant: spaces around a hyphen,
dot or slash, several spaces, no-break and other Unicode spaces, en/em dashes and the minus
sign, full-width digits and hyphens, zero-width characters. Each variant must mask to exactly
what the compact form masks to (same kind, same placeholder, nothing of the value left).
"""

from __future__ import annotations

import pytest

from cairn.app.memory.pii import find_pii, mask_pii
from cairn.app.memory.pii_text import compact, fold

# (kind, text with "{}" for each separator, the separator of its compact form)
KINDS = [
    ("US_SSN", "ssn {}", "536-22-1234"),
    ("US_SSN", "social security number {}", "536 90 4399"),
    ("PHONE", "call {}", "052-123-4567"),
    ("PHONE", "office {}", "+972-3-123-4567"),
    ("PHONE", "US desk {}", "415-555-2671"),
    ("PHONE", "電話 {}", "03-1234-5678"),
    ("CARD", "card {} exp 12/27", "4111-1111-1111-1111"),
    ("CARD", "amex {}", "3782 822463 10005"),
    ("IBAN", "IBAN {} by Friday", "DE89 3704 0044 0532 0130 00"),
    ("IBAN", "pay {}", "GB82 WEST 1234 5698 7654 32"),
    ("IL_ID", "id no. {}", "21299722-5"),
    ("BANK_ACCOUNT", "a/c {}", "55-123-4567"),
    ("BANK_ACCOUNT", "Leumi {}", "10-800-123456"),
    ("NUMBER", "ref {}", "98765-43210-99"),
    ("NUMBER", "ref {}", "1234.5678.9012"),
    ("MY_NUMBER", "個人番号 {}", "6214-9832-0257"),
    ("CN_ID", "身份证 {}", "110105 19491231 002X"),
    ("UK_NINO", "NI number {}", "AB 12 34 56 C"),
    ("UK_NHS", "NHS number {}", "943 476 5919"),
    ("CA_SIN", "SIN {}", "130 692 544"),
    ("AU_TFN", "TFN {}", "876 543 210"),
    ("IN_AADHAAR", "Aadhaar {}", "2341 2341 2346"),
    ("IP", "client {} hit the API", "203.0.113.42"),
]

_FULL_WIDTH = str.maketrans("0123456789-", "０１２３４５６７８９－")

# separator of the compact form → the ways people (or an evasive agent) write it
VARIANTS = {
    "-": [
        " - ",
        " -",
        "- ",
        "  -  ",
        "\u2013",  # en dash
        " \u2013 ",
        " \u2014 ",  # em dash
        " \u2212 ",  # minus sign
        "\u00a0-\u00a0",  # no-break spaces
        "\u202f\u2010\u202f",  # narrow no-break space, hyphen
        "\u3000\uff0d\u3000",  # ideographic space, full-width hyphen
        " \u30fc ",  # ー typed as a dash
        "\u200b-\u200b",  # zero-width spaces
        "_",  # underscore (536_22_1234)
        " _ ",
    ],
    " ": ["  ", "   ", "\u00a0\u00a0", "\u3000", " \u2009", "\u2007", "\u200b \u200b", " \u00ad"],
    ".": [" . ", " .", "  .  ", " \uff0e "],
}


def _cases():
    for kind, frame, value in KINDS:
        sep = next(c for c in "-. " if c in value.strip())
        for variant in VARIANTS[sep]:
            yield pytest.param(kind, frame, value, value.replace(sep, variant), id=f"{kind}-{value}-{variant!r}")
        if any(c.isdigit() for c in value) and kind != "IBAN":  # full-width digits, spaced full-width hyphen
            wide = value.translate(_FULL_WIDTH).replace("－", " － ").replace(" ", "\u3000")
            yield pytest.param(kind, frame, value, wide, id=f"{kind}-{value}-full-width")


@pytest.mark.parametrize("kind,frame,value,written", list(_cases()))
def test_every_id_kind_is_masked_whatever_separates_its_groups(kind, frame, value, written):
    expected = mask_pii(frame.format(value))
    assert expected.counts.get(kind) == 1, expected.text  # the compact form is masked as its kind
    got = mask_pii(frame.format(written))
    assert got.text == expected.text
    assert got.counts == expected.counts
    start = frame.index("{}")
    assert [k for s, e, k in find_pii(frame.format(written)) if s <= start < e] == [kind]


# ids whose digits may be typed one by one: every table value made only of digit groups
SPELLED = [
    (k, f, v) for k, f, v in KINDS if k != "IP" and v.replace("-", "").replace(" ", "").replace(".", "").isdigit()
]


@pytest.mark.parametrize("kind,frame,value", SPELLED, ids=[f"{k}-{v}" for k, _f, v in SPELLED])
def test_digits_typed_one_by_one_are_masked_as_the_bare_digits_are(kind, frame, value):
    digits = "".join(c for c in value if c.isdigit())
    bare = mask_pii(frame.format(digits))
    assert bare.changed, bare.text  # the bare digits are an id (or a 10+ digit NUMBER)
    spelled = mask_pii(frame.format(" ".join(digits)))
    assert (spelled.text, spelled.counts) == (bare.text, bare.counts)


def test_the_tester_examples():
    assert mask_pii("ssn 536_22_1234").text == "ssn [US_SSN_1]"
    assert mask_pii("ssn 5 3 6 2 2 1 2 3 4").text == "ssn [US_SSN_1]"
    assert mask_pii("ssn 5 3 6 2 2 1 2 3 4, i.e. 536-22-1234").text == "ssn [US_SSN_1], i.e. [US_SSN_1]"


def test_the_issue_example_and_its_numbering():
    masked = mask_pii("ssn 536 - 22 - 1234, again 536-22-1234, and 536  22  1234")
    assert masked.text == "ssn [US_SSN_1], again [US_SSN_1], and [US_SSN_1]"
    assert masked.counts == {"US_SSN": 1}
    assert mask_pii("ssn 536 - 22 - 1234") == mask_pii("ssn 536 - 22 - 1234")  # deterministic


@pytest.mark.parametrize(
    "text",
    [
        # dates and ranges with spaced separators are dates and ranges, as their compact forms are
        "Meeting on 2024 - 05 - 01 at 14 : 30",
        "Due 15 / 01 / 2024",
        "fiscal years 2019 - 2024 and 2025 – 2026",
        "opening hours 09:00 – 17:30",
        # small counts and lists
        "3 - 4 people came, 10 - 12 stayed",
        "Chapter 11 , verse 2 - 5",
        "scores 85  90  78  92  88",
        "1  000  000  000 tokens",
        "room 4 - 211, floor 7",
        # a sentence ending in a number, the next one starting with one: not one number
        "We moved in 1987. 12345 people live here",
        # prose gaps between letters are not digit groups
        "a  -  b and x / y",
        # a tab separates columns, not digit groups
        "id\t1234\t5678\t90",
        # single digits one space apart: short lists and counts, not ids typed one by one
        "rated 4 5 5 out of 5",
        "ratings 4 5 5 3 4 5 5 4",
        "count 1 2 3 4 5 6 7 8 9 10",
        "10 9 8 7 6 5 4 3 2 1 liftoff",
        # an underscore outside digit groups is part of a name
        "user_123 wrote to snake_case_2 and v1_2_3",
        "see file_2024_05_01.log",
    ],
)
def test_spaced_look_alikes_are_left_alone(text):
    masked = mask_pii(text)
    assert masked.text == text and not masked.changed


def test_a_value_next_to_another_number_keeps_its_first_pass_span():
    # compacting "… 1111 - 12/27" glues the card to its expiry; the first pass still finds the card
    assert mask_pii("card 4111 1111 1111 1111 - 12/27").text == "card [CARD_1] - 12/27"


def test_compact_maps_offsets_back():
    text = fold("ssn 536 \u2013 22\u200b - 1234 ok")
    squeezed, offsets = compact(text)
    assert squeezed == "ssn 536-22-1234 ok"
    assert len(offsets) == len(squeezed)
    assert [text[i] for i in offsets] == list(squeezed)
    assert compact("plain 536-22-1234") == ("plain 536-22-1234", list(range(17)))
