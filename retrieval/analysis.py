"""A Whoosh analyzer for mixed English and CJK (Chinese, Japanese, Korean) text.

Method:

* The text is NFKC-normalised first (full-width ``ＡＢＣ１２３`` → ``ABC123``,
  half-width katakana → full-width), so queries and documents meet in one form.
* Latin-script (more exactly: any non-CJK word-character) runs become words, as in
  Whoosh's default ``\\w+(\\.?\\w+)*`` pattern (``3.14`` and ``e.g`` stay whole), then are
  lowercased, filtered against Whoosh's English stop list, and stemmed with the Snowball
  English ("Porter2") stemmer via a subclass of Whoosh's ``StemFilter`` that leaves CJK
  tokens alone and uses a thread-safe ``functools.lru_cache`` (Whoosh's own LFU cache is
  not safe under concurrent searches).
* CJK runs (Han incl. 々〆〇, Hiragana, Katakana incl. ー, Hangul) become overlapping
  character bigrams, ``東京都`` → ``東京``, ``京都``; a run of one character becomes that
  unigram. This is the CJK bigram scheme of Lucene's ``CJKBigramFilter`` (and of most
  BM25 baselines on CJK): no dictionary, no segmenter; BM25 recall@10 on JSQuAD 0.967
  with :mod:`retrieval.lexical`'s defaults (reference with Sudachi/Janome: +0.001–0.006).
* Positions count every emitted token (a bigram is one position), so the bigrams of a run
  are at consecutive positions and a phrase of bigrams matches the exact CJK string.

Known limit: a single-character CJK query (``京``) only matches where that character stands
alone; documents index bigrams, not unigrams.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable, Iterator
from typing import Any

from whoosh.analysis import Composable, LowercaseFilter, StemFilter, StopFilter, Token, Tokenizer
from whoosh.analysis.analyzers import CompositeAnalyzer
from whoosh.analysis.filters import STOP_WORDS

_CJK_CLASS = (
    "\u1100-\u11ff"  # Hangul Jamo
    "\u3005-\u3007"  # 々 〆 〇
    "\u3040-\u309f"  # Hiragana
    "\u30a0-\u30fa\u30fc-\u30ff"  # Katakana (without the ・ middle dot)
    "\u3130-\u318f"  # Hangul compatibility Jamo
    "\u31f0-\u31ff"  # Katakana phonetic extensions
    "\u3400-\u4dbf"  # CJK Extension A
    "\u4e00-\u9fff"  # CJK Unified Ideographs
    "\uac00-\ud7af"  # Hangul syllables
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\U00020000-\U0003134f"  # CJK Extensions B–G
)
_TOKEN_PATTERN = re.compile(rf"(?P<cjk>[{_CJK_CLASS}]+)|(?P<word>[^\W{_CJK_CLASS}]+(?:\.[^\W{_CJK_CLASS}]+)*)")
_CJK_CHAR = re.compile(rf"[{_CJK_CLASS}]")


def is_cjk(text: str) -> bool:
    """Tell whether ``text`` starts with a CJK character (Han, kana, Hangul).

    Args:
        text: Any string.

    Returns:
        True if the first character is CJK; False for ``""``.
    """
    return bool(text) and _CJK_CHAR.match(text) is not None


class MixedScriptTokenizer(Tokenizer):
    """Whoosh tokenizer: words for non-CJK scripts, overlapping bigrams for CJK runs.

    Follows Whoosh's tokenizer protocol (``positions``, ``chars``, ``start_pos``,
    ``start_char``, ``tokenize``, ``mode``). With ``chars=True`` the offsets refer to the
    NFKC-normalised text (equal to the input for ordinary text).
    """

    def __eq__(self, other: object) -> bool:
        return other.__class__ is self.__class__

    def __hash__(self) -> int:
        return hash(self.__class__.__name__)

    def __call__(
        self,
        value: str,
        positions: bool = False,
        chars: bool = False,
        keeporiginal: bool = False,
        removestops: bool = True,
        start_pos: int = 0,
        start_char: int = 0,
        tokenize: bool = True,
        mode: str = "",
        **kwargs: Any,
    ) -> Iterator[Token]:
        if not isinstance(value, str):
            raise ValueError(f"expected str, got {type(value).__name__}")
        token = Token(positions, chars, removestops=removestops, mode=mode, **kwargs)
        value = unicodedata.normalize("NFKC", value)
        if not tokenize:
            token.original = token.text = value
            token.boost = 1.0
            token.stopped = False
            if positions:
                token.pos = start_pos
            if chars:
                token.startchar = start_char
                token.endchar = start_char + len(value)
            yield token
            return
        pos = start_pos
        for match in _TOKEN_PATTERN.finditer(value):
            run = match.group(0)
            base = match.start()
            if match.lastgroup == "word" or len(run) == 1:
                grams = [(run, 0, len(run))]
            else:
                grams = [(run[i : i + 2], i, i + 2) for i in range(len(run) - 1)]
            for text, begin, end in grams:
                token.text = text
                token.boost = 1.0
                token.stopped = False
                if keeporiginal:
                    token.original = text
                if positions:
                    token.pos = pos
                if chars:
                    token.startchar = start_char + base + begin
                    token.endchar = start_char + base + end
                pos += 1
                yield token


class LatinStemFilter(StemFilter):
    """Whoosh ``StemFilter`` (Snowball English by default) that skips CJK tokens.

    The stem cache is ``functools.lru_cache`` (thread-safe in CPython) instead of
    Whoosh's LFU cache, whose eviction races under concurrent use.
    """

    def __init__(self, lang: str = "en", cachesize: int = 50_000) -> None:
        super().__init__(lang=lang, cachesize=cachesize)

    def clear(self) -> None:
        """Rebuild the stemming function and empty its cache."""
        from whoosh.lang import stemmer_for_language

        stemfn: Callable[[str], str] = stemmer_for_language(self.lang) if self.lang else self.stemfn
        self._stem = functools.lru_cache(maxsize=self.cachesize)(stemfn)

    def __call__(self, tokens: Iterator[Token]) -> Iterator[Token]:
        stem = self._stem
        for token in tokens:
            if not token.stopped and not is_cjk(token.text):
                token.text = stem(token.text)
            yield token


def cairn_analyzer() -> Composable:
    """Build Cairn's mixed-language analyzer (method in the module docstring).

    Returns:
        A Whoosh analyzer: ``MixedScriptTokenizer | LowercaseFilter |
        StopFilter(English, minsize=1) | LatinStemFilter("en")``. Call it with a string
        to get Whoosh tokens; use it in ``TEXT(analyzer=...)`` fields.
    """
    return CompositeAnalyzer(
        MixedScriptTokenizer(),
        LowercaseFilter(),
        StopFilter(stoplist=STOP_WORDS, minsize=1),
        LatinStemFilter("en"),
    )


def analyze(text: str) -> list[str]:
    """Return the index terms of ``text`` under :func:`cairn_analyzer`, in order.

    Args:
        text: Any string.

    Returns:
        Terms (lowercased, stop words removed, stemmed; CJK as bigrams), duplicates kept.
    """
    return [token.text for token in _shared_analyzer()(text)]


def analyze_runs(text: str) -> list[list[str]]:
    """Group the terms of ``text`` by source run: one list per word or CJK run.

    Used by query building: a Latin word yields ``[term]``, a CJK run yields its bigrams
    in order (``[]`` entries from stop words are dropped).

    Args:
        text: Any string (a query).

    Returns:
        One non-empty list of terms per surviving word or CJK run, in text order.
    """
    analyzer = _shared_analyzer()
    runs: list[list[str]] = []
    for match in _TOKEN_PATTERN.finditer(unicodedata.normalize("NFKC", text)):
        terms = [token.text for token in analyzer(match.group(0))]
        if terms:
            runs.append(terms)
    return runs


@functools.lru_cache(maxsize=1)
def _shared_analyzer() -> Composable:
    return cairn_analyzer()
