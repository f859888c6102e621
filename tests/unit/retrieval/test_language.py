"""Script detection (retrieval/language.py): the share of CJK letters, exactly as defined —
letters are ``str.isalpha`` characters, CJK letters those of them in the CJK ranges."""

from __future__ import annotations

import random

import pytest

from cairn.retrieval.language import _CJK_RANGES, cjk_share, is_cjk


def reference(text: str) -> float:
    """The definition, one character at a time."""
    letters = [ch for ch in text if ch.isalpha()]
    cjk = [ch for ch in letters if any(lo <= ord(ch) <= hi for lo, hi in _CJK_RANGES)]
    return len(cjk) / len(letters) if letters else 0.0


@pytest.mark.parametrize(
    ("text", "share"),
    [
        ("", 0.0),
        ("123 !?", 0.0),
        ("Glaciers carve moraines", 0.0),
        ("東京", 1.0),
        ("ReactのuseEffect", 1 / 15),
        ("〇〇 ok", 0.0),  # 〇 (U+3007) is a number (Nl), not a letter: it does not count at all
        ("⼭ a", 0.0),  # a Kangxi radical (So) is not a letter either
        ("ｱｲ ab", 0.5),  # half-width katakana
        ("𠀋 x", 0.5),  # extension B, outside the BMP
        ("한국어 text", 3 / 7),
    ],
)
def test_share_of_cjk_letters(text, share):
    assert cjk_share(text) == pytest.approx(share)


def test_equal_to_the_definition_on_random_mixed_text():
    rng = random.Random(18)
    blocks = [(0x20, 0x250), (0x1100, 0x1200), (0x2E80, 0x3200), (0x3400, 0x3480), (0x4E00, 0x4E80)]
    blocks += [(0xAC00, 0xAC40), (0xF900, 0xF940), (0xFF00, 0xFFA0), (0x20000, 0x20040), (0xA950, 0xA990)]
    pool = [chr(c) for lo, hi in blocks for c in range(lo, hi)]
    for _ in range(2000):
        text = "".join(rng.choice(pool) for _ in range(rng.randint(0, 50)))
        assert cjk_share(text) == reference(text), text
        assert is_cjk(text) == (reference(text) >= 0.2)


def test_refuses_a_non_string():
    with pytest.raises(TypeError, match="str"):
        cjk_share(b"bytes")  # type: ignore[arg-type]
