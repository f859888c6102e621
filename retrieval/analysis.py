"""A Whoosh analyzer for text in any script: words where words are spaced, bigrams where not.

Method:

* The text is NFKC-normalised first (full-width ``ＡＢＣ１２３`` → ``ABC123``,
  half-width katakana → full-width), so queries and documents meet in one form.
* Words: runs of Unicode word characters in the sense of UTS #18 (letters, **combining
  marks**, digits, connector punctuation: the ``regex`` package's ``\\w``), as in Whoosh's
  default ``\\w+(\\.?\\w+)*`` pattern (``3.14`` and ``e.g`` stay whole), then lowercased,
  filtered against Whoosh's English stop list, and stemmed by script
  (:class:`ScriptStemFilter`, a subclass of Whoosh's ``StemFilter`` with a thread-safe
  ``functools.lru_cache``: Whoosh's own LFU cache is not safe under concurrent searches):
  Latin-script words by the Snowball English ("Porter2") stemmer, words of other spaced
  scripts truncated to their first :data:`TRUNCATE_LENGTH` characters (``столица`` →
  ``столи``; truncation stemming, McNamee et al. 2009: no language to guess, and inflected
  forms of Russian, Greek, Hindi or Tamil meet). Marks belong to their word: Python's
  ``re`` ``\\w`` excludes them, which cut Devanagari, Bengali, Tamil (vowel signs, virama)
  and Thai words into single letters (``हिन्दी`` → ``ह``, ``न``, ``द``; analyzer version 1).
* Scripts written without spaces between words become overlapping character bigrams:
  CJK runs (Han incl. 々〆〇, Hiragana, Katakana incl. ー, Hangul), ``東京都`` → ``東京``,
  ``京都``, and (version 2) Thai, Lao, Khmer and Myanmar runs, ``ภาษาไทย`` → ``ภา``,
  ``าษ``, … (the unit is the grapheme cluster, so a Thai letter keeps its vowel and tone
  marks: ``กินข้าว`` → ``กิน``, ``นข้``, ``ข้า``, ``าว``); a run of one unit becomes that unigram. This is the CJK bigram scheme of
  Lucene's ``CJKBigramFilter`` (and of most BM25 baselines on CJK): no dictionary, no
  segmenter; BM25 recall@10 on JSQuAD 0.967 with :mod:`retrieval.lexical.whoosh_index`'s defaults
  (reference with Sudachi/Janome: +0.001–0.006). Character n-grams are likewise the
  dictionary-free baseline for Thai (Lucene's own Thai analyzer needs ICU's dictionary).
* Positions count every emitted token (a bigram is one position), so the bigrams of a run
  are at consecutive positions and a phrase of bigrams matches the exact string.

Versions (:data:`ANALYZER_VERSION`): terms stored by an older version are rebuilt — the BM25
index (:class:`retrieval.lexical.whoosh_index.WhooshIndex` records the version it was built with and
re-creates itself empty when it differs; the caller re-indexes), cluster mode's sparse BM25
vectors (their vector names carry the version) and memories' stored terms (a migration).

Known limit: a single-character bigram-script query (``京``) only matches where that
character stands alone; documents index bigrams, not unigrams.
"""

from __future__ import annotations

import functools
import itertools
import unicodedata
from collections.abc import Callable, Iterator
from typing import Any

import regex
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
_UNSPACED_CLASS = r"\p{Thai}\p{Lao}\p{Khmer}\p{Myanmar}"
"""Scripts other than CJK written without spaces between words (bigrammed, module doc)."""
_BIGRAM_CLASS = _CJK_CLASS + _UNSPACED_CLASS
_WORD_START = rf"[\w--[\p{{M}}\p{{Join_Control}}{_BIGRAM_CLASS}]]"  # not a stray mark or joiner
_WORD_CHAR = rf"[\w--[{_BIGRAM_CLASS}]]"  # joiners (ZWJ, ZWNJ) belong inside Indic and Persian words
_TOKEN_PATTERN = regex.compile(
    rf"(?P<bigram>[{_CJK_CLASS}]+|[{_UNSPACED_CLASS}]+)"  # one script group per run: no bigram across them
    rf"|(?P<word>{_WORD_START}{_WORD_CHAR}*(?:\.{_WORD_CHAR}+)*)",
    flags=regex.V1,
)
_BIGRAM_CHAR = regex.compile(rf"[{_BIGRAM_CLASS}]", flags=regex.V1)
_MARK = regex.compile(r"\p{M}")
_CLUSTER = regex.compile(r"\X")

ANALYZER_VERSION = 2
"""Version of the terms :func:`cairn_analyzer` emits (module doc). 1: Python ``re`` words
(marks split words), bigrams for CJK only; 2: marks inside words, bigrams for Thai, Lao,
Khmer and Myanmar too, words of other non-Latin scripts truncated to 5 characters, Turkish
``İ`` lowercased to ``i``. Raise it
whenever any text's terms change."""


def is_bigram_script(text: str) -> bool:
    """Tell whether ``text`` starts with a character of a script analysed into bigrams (CJK,
    Thai, Lao, Khmer, Myanmar).

    Args:
        text: Any string.

    Returns:
        True if the first character is of such a script; False for ``""``.
    """
    return bool(text) and _BIGRAM_CHAR.match(text) is not None


def _bigrams(run: str) -> list[tuple[str, int, int]]:
    """Overlapping bigrams of a bigram-script run as ``(text, start, end)`` offsets in ``run``.

    The unit is the grapheme cluster (Unicode UAX #29, the ``regex`` package's ``\\X``): a
    Thai consonant with its vowel and tone marks is one unit (``ข้`` of ``ข้าว``), so no bigram
    is made of marks alone and tone marks stay with their letter (``ข้าว`` rice, ``ข่าว``
    news and ``ขาว`` white stay apart). Runs without marks (CJK as a rule) have one code
    point per cluster and take the fast path. A run of one unit is that unigram.
    """
    if _MARK.search(run) is None:
        if len(run) == 1:
            return [(run, 0, 1)]
        return [(run[i : i + 2], i, i + 2) for i in range(len(run) - 1)]
    bounds = [m.span() for m in _CLUSTER.finditer(run)]
    if len(bounds) == 1:
        return [(run, 0, len(run))]
    return [(run[a[0] : b[1]], a[0], b[1]) for a, b in itertools.pairwise(bounds)]


class MixedScriptTokenizer(Tokenizer):
    """Whoosh tokenizer: words for spaced scripts, overlapping bigrams for CJK, Thai, Lao, Khmer, Myanmar.

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
            grams = [(run, 0, len(run))] if match.lastgroup == "word" else _bigrams(run)
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


class DottedLowercaseFilter(LowercaseFilter):
    """Whoosh ``LowercaseFilter`` whose lowercase of the Turkish capital dotted I (``İ``) is
    ``i``: Python lowercases it to ``i`` + U+0307 (combining dot above), so ``İtalya`` would
    never meet ``italya`` (Lucene's ``TurkishLowerCaseFilter`` does the same, there for Turkish
    text only; elsewhere ``İ`` hardly occurs)."""

    def __call__(self, tokens: Iterator[Token]) -> Iterator[Token]:
        for token in tokens:
            token.text = token.text.lower().replace("i\u0307", "i")
            yield token


TRUNCATE_LENGTH = 5
"""Words of spaced scripts other than Latin (Cyrillic, Greek, Arabic, Hebrew, Devanagari,
Bengali, Tamil, …) are cut to their first 5 characters (code points): *truncation stemming*,
the language-independent conflation of inflected forms of McNamee, Nicholas & Mayfield 2009
("Addressing morphological variation in alphabetic languages", SIGIR), whose n = 5 came
close to Snowball stemmers and character n-grams over 18 languages. The length is theirs,
not tuned here. Measured on ``bench/other_scripts.tsv`` (BM25 alone, 128 questions in eight
such scripts, own-language corpora): recall@1 0.71 → 0.81, recall@5 0.90 → 0.96, no
language lower (``python -m bench.other_scripts``)."""

_LATIN_OR_DIGIT = regex.compile(r"[\p{Latin}\p{N}_]")


class ScriptStemFilter(StemFilter):
    """Whoosh ``StemFilter`` by script: Snowball English ("Porter2") for words with a Latin
    letter or a digit (``βklotho`` in a SciFact abstract stays English), truncation to
    :data:`TRUNCATE_LENGTH` characters for words of other spaced scripts, nothing for
    bigram-script tokens.

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
            text = token.text
            if token.stopped or is_bigram_script(text):
                pass
            elif _LATIN_OR_DIGIT.search(text):
                token.text = stem(text)
            else:
                token.text = text[:TRUNCATE_LENGTH]
            yield token


LatinStemFilter = ScriptStemFilter
"""The filter's name before analyzer version 2, kept: Whoosh pickles the analyzer into an
index's table of contents, and a version-1 index names this class when opened to be
re-created (:class:`retrieval.lexical.whoosh_index.WhooshIndex`)."""


def cairn_analyzer() -> Composable:
    """Build Cairn's mixed-language analyzer (method in the module docstring).

    Returns:
        A Whoosh analyzer: ``MixedScriptTokenizer | DottedLowercaseFilter |
        StopFilter(English, minsize=1) | ScriptStemFilter("en")``. Call it with a string
        to get Whoosh tokens; use it in ``TEXT(analyzer=...)`` fields.
    """
    return CompositeAnalyzer(
        MixedScriptTokenizer(),
        DottedLowercaseFilter(),
        StopFilter(stoplist=STOP_WORDS, minsize=1),
        ScriptStemFilter("en"),
    )


def analyze(text: str) -> list[str]:
    """Return the index terms of ``text`` under :func:`cairn_analyzer`, in order.

    Args:
        text: Any string.

    Returns:
        Terms (lowercased, stop words removed, stemmed; CJK, Thai, Lao, Khmer, Myanmar as bigrams), duplicates kept.
    """
    return [token.text for token in _shared_analyzer()(text)]


def analyze_runs(text: str) -> list[list[str]]:
    """Group the terms of ``text`` by source run: one list per word or bigram-script run.

    Used by query building: a Latin word yields ``[term]``, a CJK (or Thai, …) run yields its bigrams
    in order (``[]`` entries from stop words are dropped).

    Args:
        text: Any string (a query).

    Returns:
        One non-empty list of terms per surviving word or bigram-script run, in text order.
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
