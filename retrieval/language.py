"""Which script a text is written in: the language signal that routes text to a dense model.

The dense leg has two models (:mod:`retrieval.dense`): all-MiniLM-L6-v2, an English model,
and multilingual-e5-small. Text written in Chinese, Japanese or Korean script goes to the
multilingual model. The signal is the script of the letters, not the English model's
vocabulary coverage: every kana and most kanji are in MiniLM's word-piece vocabulary as
single characters, so short katakana/kanji questions had full "coverage" and were sent to
the English model (issue 18: 388 JSQuAD test questions, nDCG@10 0.57 vs BM25's 0.87).

Why script detection rather than a language-identification library: the decision needed is
"can the English model read this?", which for CJK is a property of the characters, exact
and deterministic (no model, no dependency, microseconds, the same answer for a
three-character question as for a page); a language-id model is least reliable on exactly
the short questions that matter, and none is needed to tell kana from Latin letters.
Other non-English languages in Latin or Cyrillic script stay with MiniLM (not measured:
no such data set is available offline here).

Rule (:func:`is_cjk`): at least :data:`CJK_MIN_SHARE` of the text's letters (``str.isalpha``
characters, which include kana, kanji and hangul) are Han, kana or hangul. Digits,
punctuation and spaces do not count. A Japanese sentence with a few English words
("ReactのuseEffectフックの使い方": 36 % of its letters) is CJK; an English sentence quoting a
Japanese title is usually not (either model can serve it).
"""

from __future__ import annotations

import re

__all__ = ["CJK_MIN_SHARE", "cjk_share", "is_cjk"]

CJK_MIN_SHARE = 0.2
"""Least share of CJK letters among all letters for text to count as CJK (module doc)."""

_CJK_RANGES = (
    (0x1100, 0x11FF),  # Hangul Jamo
    (0x2E80, 0x2FDF),  # CJK radicals, Kangxi radicals
    (0x3005, 0x3007),  # 々 〆 〇
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x3130, 0x318F),  # Hangul compatibility Jamo
    (0x31F0, 0x31FF),  # Katakana phonetic extensions
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xA960, 0xA97F),  # Hangul Jamo extended A
    (0xAC00, 0xD7AF),  # Hangul syllables
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0xFF66, 0xFF9F),  # half-width katakana
    (0x20000, 0x3134F),  # CJK extensions B–H
)


_CJK_CHARS = re.compile("[" + "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in _CJK_RANGES) + "]")


def cjk_share(text: str) -> float:
    """Share (0–1) of the letters of ``text`` that are Han, kana or hangul; 0.0 without letters.

    Letters are ``str.isalpha`` characters; a CJK letter is one of those in :data:`_CJK_RANGES`
    (found by one regular-expression pass, then counted with ``str.isalpha`` in C: a 1,000-character
    passage takes microseconds, where a Python loop over its characters took a millisecond).

    Raises:
        TypeError: If ``text`` is not a str.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    letters = sum(map(str.isalpha, text))
    if not letters:
        return 0.0
    return sum(map(str.isalpha, _CJK_CHARS.findall(text))) / letters


def is_cjk(text: str) -> bool:
    """Whether ``text`` is written in CJK script (share of CJK letters >= :data:`CJK_MIN_SHARE`)."""
    return cjk_share(text) >= CJK_MIN_SHARE
