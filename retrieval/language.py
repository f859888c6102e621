"""Which script a text is written in: the language signal that routes text to a dense model.

The dense leg has two models (:mod:`retrieval.dense`): all-MiniLM-L6-v2, an English model,
and multilingual-e5-small. Text written mostly in a script other than Latin — Chinese,
Japanese, Korean, and (routing version 2) Cyrillic, Greek, Arabic, Hebrew, the Indic
scripts, Thai and every other — goes to the multilingual model; Latin-script text to the
English one. The signal is the script of the letters, not the English model's vocabulary
coverage: every kana and most kanji are in MiniLM's word-piece vocabulary as single
characters, so short katakana/kanji questions had full "coverage" and were sent to the
English model (issue 18: 388 JSQuAD test questions, nDCG@10 0.57 vs BM25's 0.87).
Version 1 routed only CJK; the other scripts then went to MiniLM, which has no vocabulary
for them (``python -m bench.other_scripts``: hand-written paragraphs and questions in eight
such scripts, MiniLM vs e5 — figures in BENCHMARKS.md).

Why script detection rather than a language-identification library: the decision needed is
"can the English model read this?", which for a non-Latin script is a property of the
characters, exact and deterministic (no model, no dependency, microseconds, the same
answer for a three-character question as for a page); a language-id model is least
reliable on exactly the short questions that matter. Latin-script languages other than
English (French, Vietnamese, …) stay with MiniLM: telling them from English needs a
language-id model, and no such data set is available offline here to measure the gain.

Rule (:func:`is_non_latin`): at least :data:`NON_LATIN_MIN_SHARE` of the text's letters
(``str.isalpha`` characters) are of a script other than Latin (Unicode ``Script`` property,
via the ``regex`` package). Digits, punctuation, spaces and combining marks do not count. A
Japanese sentence with a few English words ("ReactのuseEffectフックの使い方": 36 % of its
letters) is non-Latin; an English sentence quoting a Russian title, or an abstract with Greek
letters for variables (β-cells), is not (either model can serve it). Known limit: a short
English question that is mostly a quoted non-Latin title ("about «Война и мир» by Tolstoy":
22 % Cyrillic) counts as non-Latin, and its dense leg then searches only the multilingual
space (BM25 still searches everything).
"""

from __future__ import annotations

import regex

__all__ = ["NON_LATIN_MIN_SHARE", "ROUTING_VERSION", "is_non_latin", "non_latin_share"]

NON_LATIN_MIN_SHARE = 0.2
"""Least share of non-Latin letters among all letters for text to go to the multilingual
model (module doc)."""

ROUTING_VERSION = 2
"""Version of the rule that picks a passage's model (1: CJK only; 2: every non-Latin
script). The multilingual model's vector space is named with it
(:attr:`retrieval.embeddings.LocalE5.space`), so a vector store routed by another version
has other names and is re-created and re-filled on open."""

_LATIN = regex.compile(r"\p{Script=Latin}+")


def non_latin_share(text: str) -> float:
    """Share (0–1) of the letters of ``text`` that are not of the Latin script; 0.0 without letters.

    Letters are ``str.isalpha`` characters; a Latin letter is one with the Unicode ``Script``
    property Latin (found by one regular-expression pass, then counted with ``str.isalpha``
    in C: a 1,000-character passage takes microseconds).

    Raises:
        TypeError: If ``text`` is not a str.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    letters = sum(map(str.isalpha, text))
    if not letters:
        return 0.0
    latin = sum(sum(map(str.isalpha, run)) for run in _LATIN.findall(text))
    return (letters - latin) / letters


def is_non_latin(text: str) -> bool:
    """Whether ``text`` is written mostly in a non-Latin script (share >= :data:`NON_LATIN_MIN_SHARE`)."""
    return non_latin_share(text) >= NON_LATIN_MIN_SHARE
