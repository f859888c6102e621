"""Subject terms: the words of a question that carry a word match, and the test that a task
has not swapped one of them for another (issue 32 item 12; method in
:mod:`~app.contextsets.matching`'s module doc, function words in
:mod:`~app.contextsets.function_words`)."""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable, Sequence
from fractions import Fraction

from whoosh.analysis import Composable, StopFilter
from whoosh.analysis.analyzers import CompositeAnalyzer

from cairn.app.contextsets.function_words import ENGLISH_FUNCTION_WORDS, strip_cjk_function_words
from cairn.retrieval.analysis import (
    DottedLowercaseFilter,
    MixedScriptTokenizer,
    ScriptStemFilter,
    analyze,
    is_bigram_script,
)

_WORD = re.compile(r"\w+", re.UNICODE)
_SPACE = re.compile(r"\s+")


def fold(text: str) -> str:
    """Case- and width-folded form: NFKC, casefold, whitespace runs → one space, stripped."""
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def terms(text: str) -> list[str]:
    """Analysed terms of ``text`` (module doc); stop-word-only text falls back to folded words."""
    out = analyze(text)
    if out:
        return out
    return _WORD.findall(fold(text))


@functools.lru_cache(maxsize=1)
def _subject_analyzer() -> Composable:
    """Cairn's analyser with the English function words as its stop list instead of Whoosh's
    (:mod:`~app.contextsets.function_words`: ``on``/``off``, ``not`` stay subject words)."""
    return CompositeAnalyzer(
        MixedScriptTokenizer(),
        DottedLowercaseFilter(),
        StopFilter(stoplist=ENGLISH_FUNCTION_WORDS, minsize=1),
        ScriptStemFilter("en"),
    )


def _subject_runs(text: str) -> list[list[str]]:
    """Subject terms of ``text`` grouped by run: ``[term]`` per word, the terms of a CJK run
    together (its bigrams overlap: each starts one character after the previous one); function
    words removed, no fallback."""
    runs: list[list[str]] = []
    last = -2
    for token in _subject_analyzer()(strip_cjk_function_words(fold(text)), chars=True):
        if is_bigram_script(token.text) and token.startchar == last + 1 and runs:
            runs[-1].append(token.text)
        else:
            runs.append([token.text])
        last = token.startchar if is_bigram_script(token.text) else -2
    return runs


def subject_terms(text: str) -> list[tuple[str, Fraction]]:
    """The subject (content) terms of ``text`` with their weights, in text order.

    ``text`` without its function words (:mod:`~app.contextsets.function_words`),
    analysed run by run (stemmed, CJK bigrams, no stop list): a Latin word is one term of
    weight 1, a CJK run's terms share weight 1 (``会議室`` → ``会議``, ``議室`` at 1/2 each;
    ``取`` alone → 1). A text made only of function words is its own subject: its
    :func:`terms`, each of weight 1 (``What is it?`` → ``what``).

    Returns:
        ``(term, weight)`` pairs, duplicates kept; ``[]`` only for a text without any word.
    """
    runs = _subject_runs(text)
    if not runs:
        return [(t, Fraction(1)) for t in terms(text)]
    return [(t, Fraction(1, len(run))) for run in runs for t in run]


def subject_words(text: str) -> list[str]:
    """Subject terms of one word or run of ``text``, without the function-word fallback."""
    return [t for run in _subject_runs(text) for t in run]


def with_characters(task: Sequence[str]) -> set[str]:
    """The asker's subject terms plus each character of its CJK terms: a question's one-character
    run (``取`` of 取り消し) matches the same character inside a bigram (``取消``)."""
    return set(task) | {c for t in task if is_bigram_script(t) for c in t}


def subject_or_terms(text: str) -> list[str]:
    """:func:`subject_words` then the :func:`terms` not among them (to report answer-text matches)."""
    return list(dict.fromkeys([*subject_words(text), *terms(text)]))


def surface(text: str, matched: set[str], split: Callable[[str], list[str]] = terms) -> list[str]:
    """The asker's words whose terms (``split``) matched, in text order, each once (CJK: the
    matched terms of the run)."""
    words: list[str] = []
    seen: set[str] = set()
    for raw in _WORD.findall(unicodedata.normalize("NFKC", text)):
        ts = split(raw)
        if len(ts) > 1:  # a CJK run: report its matched bigrams
            hits = [t for t in ts if t in matched]
        else:
            hits = [raw] if ts and ts[0] in matched else []
        for h in hits:
            if h not in seen:
                seen.add(h)
                words.append(h)
    return words


def stand_in(question: Sequence[str], task: Sequence[str]) -> bool:
    """Tell whether a subject word the task misses is replaced by another word (module doc).

    Args:
        question: The stored question's subject terms, in order.
        task: The asker's subject terms, in order.

    Returns:
        True when, for some question term missing from ``task``, a term next to it in the
        question (its flank) occurs in ``task`` beside a term that is not the question's. A CJK
        term made only of the question's characters is not a stand-in (``差旅费报销`` for
        ``报销差旅费`` adds the bigram ``费报``: a reordering, not another subject).
    """
    have, own = with_characters(task), set(question)
    chars = {c for t in question if is_bigram_script(t) for c in t}

    def foreign(term: str) -> bool:
        return term not in own and not (is_bigram_script(term) and set(term) <= chars)

    at: dict[str, list[int]] = {}
    for p, t in enumerate(task):
        at.setdefault(t, []).append(p)
    n = len(question)
    for i, t in enumerate(question):
        if t in have:
            continue
        for j in (i - 1, i + 1):
            if 0 <= j < n and question[j] in at:
                for p in at[question[j]]:
                    if any(0 <= q < len(task) and foreign(task[q]) for q in (p - 1, p + 1)):
                        return True
    return False


@functools.lru_cache(maxsize=1)
def _function_stems() -> frozenset[str]:
    """The analysed (stemmed) forms of the English function words (``does`` → ``doe``)."""
    stemmer = CompositeAnalyzer(MixedScriptTokenizer(), DottedLowercaseFilter(), ScriptStemFilter("en"))
    return frozenset(tok.text for w in ENGLISH_FUNCTION_WORDS for tok in stemmer(w))


def carries(shared: set[str]) -> bool:
    """Tell whether shared analysed terms can carry a match: one of them is not function
    material (an English function word's stem, or a CJK bigram made only of hiragana and Han
    function characters such as ``ます``, ``的``)."""
    stems = _function_stems()
    return any(t not in stems and strip_cjk_function_words(t).strip() for t in shared)
