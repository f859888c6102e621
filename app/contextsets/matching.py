"""Word matching for context sets: no embeddings, only Cairn's lexical analyser.

Method (the same analyser as the BM25 index, :func:`retrieval.analysis.analyze`): text is
NFKC-normalised (``ＡＰＩ`` = ``API``, half-width katakana = full-width), lowercased, English
stop words dropped and Snowball-stemmed (``answers`` = ``answer``); CJK runs become
overlapping character bigrams (``東京都`` → ``東京``, ``京都``). A text made only of stop words
(``IT``, ``US``) falls back to its folded words, so such a term still matches itself.

* **Verified answers** (:class:`AnswerIndex`): BM25 (:data:`ANSWER_BM25`) of the asker's
  terms over each stored question, plus 0.3 × BM25 over its answer (paraphrases often share
  the answer's words); ties by position. Function words never carry a match: an answer is
  listed only when it shares with the asker a *subject term* of its question
  (:func:`subject_terms`: the text without its function words,
  :mod:`~app.contextsets.function_words`) or an analysed term of its answer that is not
  function material. ``coverage`` is the share of the stored question's subject weight
  present in the asker's subject terms (each Latin word weighs 1, each CJK run 1 shared by
  its bigrams, so a long katakana word does not outweigh a short one). The pack takes an
  answer only when it is :attr:`AnswerMatch.about` the task: coverage ≥
  :data:`PACK_MIN_COVERAGE` (docs/capabilities.md's 70 %, compared exactly) and no missing subject
  word has a stand-in — a task word outside the stored question right next to (in the
  task) the word that flanks the missing one in the question (``reset my VPN password on
  a Windows laptop`` vs ``… on a Windows desktop``: 5 of 6 words, ``desktop`` stands in for
  ``laptop``); a dropped word (``… on Windows``) is not replaced and may be missing. A
  negation in one of task and question but not the other (:mod:`~app.contextsets.negation`:
  ``How do I not reset …``, ``取り消しませんか``, ``不重置``) halves the coverage — same subject,
  opposite sense — so such an answer is listed (with that coverage) but never packed.
* **Definitions** (:class:`DefinitionIndex`): a lookup scores 1.0 for the same term or alias
  after case/width folding, 0.9 for the same analysed terms (``APIs`` ~ ``API``), else the
  Jaccard overlap of analysed terms × 0.8 (term/aliases) or × 0.3 (definition text). In a
  pack a definition is included only when its term or an alias occurs in the task as a
  contiguous run of analysed terms (a phrase match), so a 500-definition set adds only the
  terms the task uses. A term is its own subject: the exact and same-terms scores compare it
  whole (``IT``, ``The Who`` still find themselves), while an overlap made only of function
  material (``what``, ``how``, ``ます``) carries no Jaccard or definition-text match.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from cairn.app.contextsets.negation import negated
from cairn.app.contextsets.subjects import (
    carries,
    fold,
    stand_in,
    subject_or_terms,
    subject_terms,
    surface,
    terms,
    with_characters,
)
from cairn.retrieval.lexical import IDF, BM25Params, idf, term_score

ANSWER_BM25 = BM25Params(k1=1.2, b=0.75, idf=IDF.LUCENE)
"""Okapi BM25 of verified answers (:mod:`retrieval.lexical.bm25`): Lucene's defaults (k1 1.2,
b 0.75) and its IDF, positive over the few questions of one context set. Not tuned: coverage,
not the score, decides whether an answer joins a pack (:data:`PACK_MIN_COVERAGE`)."""
ANSWER_WEIGHT = 0.3
PACK_MIN_COVERAGE = 0.7
"""A verified answer joins a pack when the task holds ≥ 70 % of its question's subject weight
(module doc). docs/capabilities.md's context-set section states this number; a unit test reads both."""
_MIN_COVERAGE = Fraction(str(PACK_MIN_COVERAGE))  # 7/10 exactly: 7 of 10 words is in, not 0.6999…

__all__ = [
    "INDEXES",
    "AnswerIndex",
    "AnswerMatch",
    "DefinitionIndex",
    "DefinitionMatch",
    "fold",
    "subject_terms",
    "terms",
]


@dataclass(frozen=True)
class AnswerMatch:
    """One ranked verified answer: index into the indexed list, BM25 score, coverage (0–1,
    rounded to 6 places), matched subject words, and ``about``: the pack's test (module doc)."""

    index: int
    score: float
    coverage: float
    matched_words: tuple[str, ...]
    about: bool


class _Field:
    """A BM25 field over a list of texts (inverted index of term → [(doc, tf)])."""

    def __init__(self, texts: Sequence[str]) -> None:
        self.n = len(texts)
        self.lengths: list[int] = []
        self.postings: dict[str, list[tuple[int, int]]] = {}
        self.doc_terms: list[set[str]] = []
        for i, text in enumerate(texts):
            ts = terms(text)
            self.lengths.append(len(ts))
            counts: dict[str, int] = {}
            for t in ts:
                counts[t] = counts.get(t, 0) + 1
            for t, c in counts.items():
                self.postings.setdefault(t, []).append((i, c))
            self.doc_terms.append(set(counts))
        self.avg = (sum(self.lengths) / self.n) if self.n else 0.0
        self.idf = {t: idf(n_docs=self.n, df=len(p), variant=ANSWER_BM25.idf) for t, p in self.postings.items()}

    def score(self, qterms: set[str], into: dict[int, float], weight: float) -> None:
        for t in qterms:
            plist = self.postings.get(t)
            if not plist:
                continue
            weighted = self.idf[t] * weight
            avg = self.avg or 1.0
            for i, tf in plist:
                into[i] = into.get(i, 0.0) + term_score(
                    tf=tf, length=self.lengths[i], avg_length=avg, idf=weighted, params=ANSWER_BM25
                )


class AnswerIndex:
    """BM25 over verified answers' questions (and, weighted 0.3, their answers), with the
    subject terms that gate a match (module doc).

    Args:
        questions: Stored questions, in entry order.
        answers: Their answers (same length).
    """

    def __init__(self, questions: Sequence[str], answers: Sequence[str]) -> None:
        self.questions = _Field(questions)
        self.answers = _Field(answers)
        self.subjects = [subject_terms(q) for q in questions]
        self.subject_sets = [{t for t, _ in sub} for sub in self.subjects]
        self.negated = [negated(q) for q in questions]

    def coverage(self, index: int, task: set[str]) -> Fraction:
        """Share of stored question ``index``'s subject weight whose terms are in ``task`` (the
        asker's subject terms), exact (0–1)."""
        own = self.subjects[index]
        total = sum((w for _t, w in own), Fraction(0))
        if total == 0:
            return Fraction(0)
        return sum((w for t, w in own if t in task), Fraction(0)) / total

    def match(self, text: str, limit: int) -> list[AnswerMatch]:
        """The ``limit`` best answers for ``text`` sharing a subject term with it, best BM25 first;
        ties by position."""
        qterms = set(terms(text))
        task = [t for t, _ in subject_terms(text)]
        tset = with_characters(task)
        scores: dict[int, float] = {}
        self.questions.score(qterms, scores, 1.0)
        self.answers.score(qterms, scores, ANSWER_WEIGHT)
        ranked: list[tuple[int, float, set[str]]] = []
        for i, sc in sorted(scores.items(), key=lambda kv: (-kv[1], kv[0])):
            # function words carry no match: a subject term of the question, or a non-function
            # analysed term of the answer, must be shared
            matched = (tset & self.subject_sets[i]) | {t for t in qterms & self.answers.doc_terms[i] if carries({t})}
            if matched:
                ranked.append((i, sc, matched))
            if len(ranked) == limit:
                break
        out = []
        task_negated = negated(text)
        for i, sc, matched in ranked:
            cov = self.coverage(i, tset)
            if task_negated != self.negated[i]:
                cov /= 2  # opposite sense (module doc): at most 0.5, under the pack's 0.7
            about = cov >= _MIN_COVERAGE and not stand_in([t for t, _ in self.subjects[i]], task)
            words = tuple(surface(text, matched, subject_or_terms))
            out.append(AnswerMatch(i, round(sc, 6), round(float(cov), 6), words, about))
        return out


@dataclass(frozen=True)
class DefinitionMatch:
    """One definition hit: index into the indexed list, score (module doc), matched words."""

    index: int
    score: float
    matched_words: tuple[str, ...]


def _contains_run(hay: list[str], needle: list[str]) -> int:
    """Position of ``needle`` as a contiguous run in ``hay``, or -1."""
    n = len(needle)
    if n == 0 or n > len(hay):
        return -1
    first = needle[0]
    for i, t in enumerate(hay):
        if t == first and hay[i : i + n] == needle:
            return i
    return -1


class DefinitionIndex:
    """Definitions by term and aliases (module doc for the scores).

    Args:
        items: ``(term, aliases, definition)`` per definition, in entry order.
    """

    def __init__(self, items: Sequence[tuple[str, Sequence[str], str]]) -> None:
        self.names: list[list[tuple[str, list[str]]]] = []  # per definition: (folded, terms) of term + aliases
        self.body: list[set[str]] = []
        self.first: dict[str, list[int]] = {}  # first analysed term of a name → definitions (phrase search)
        for i, (term, aliases, definition) in enumerate(items):
            names = [(fold(n), terms(n)) for n in (term, *aliases)]
            self.names.append(names)
            self.body.append(set(terms(definition)))
            for _f, ts in names:
                if ts and i not in self.first.setdefault(ts[0], []):
                    self.first[ts[0]].append(i)

    def lookup(self, text: str, limit: int) -> list[DefinitionMatch]:
        """Definitions for a looked-up term, best first (score > 0); ties by position."""
        folded, qterms = fold(text), terms(text)
        qset = set(qterms)
        scored: list[tuple[float, int, set[str]]] = []
        for i, names in enumerate(self.names):
            best, words = 0.0, set()
            for f, ts in names:
                if f == folded:
                    best, words = 1.0, set(ts)
                    break
                if ts and ts == qterms:
                    best, words = max(best, 0.9), set(ts)
                    continue
                union = qset | set(ts)
                inter = qset & set(ts)
                if carries(inter) and 0.8 * len(inter) / len(union) > best:
                    best, words = 0.8 * len(inter) / len(union), inter
            if best == 0.0 and qset:
                inter = qset & self.body[i]
                if carries(inter):
                    best, words = 0.3 * len(inter) / len(qset), inter
            if best > 0:
                scored.append((best, i, words))
        scored.sort(key=lambda x: (-x[0], x[1]))
        return [DefinitionMatch(i, round(sc, 6), tuple(surface(text, w))) for sc, i, w in scored[:limit]]

    def in_text(self, text: str) -> list[tuple[int, int]]:
        """Definitions whose term or an alias occurs in ``text`` as a phrase: ``(index, position)``
        pairs ordered by first occurrence, then index."""
        hay = terms(text)
        present = set(hay)
        hits: dict[int, int] = {}
        for t in present:
            for i in self.first.get(t, ()):
                if i in hits:
                    continue
                pos = min((p for _f, ts in self.names[i] if (p := _contains_run(hay, ts)) >= 0), default=-1)
                if pos >= 0:
                    hits[i] = pos
        return sorted(hits.items(), key=lambda kv: (kv[1], kv[0]))


class IndexCache:
    """A bounded LRU of built indexes keyed by ``(set id, set version, kind)``.

    Entries are immutable once built and a set's version changes on every write, so a
    stale index is never served; the bound keeps memory flat (default 64 indexes).
    """

    def __init__(self, size: int = 64) -> None:
        self.size = size
        self._data: OrderedDict[tuple[str, int, str], object] = OrderedDict()

    def get(self, key: tuple[str, int, str]) -> object | None:
        """The cached index, or None (marks it recently used)."""
        value = self._data.get(key)
        if value is not None:
            self._data.move_to_end(key)
        return value

    def put(self, key: tuple[str, int, str], value: object) -> None:
        """Store ``value``; evict the least recently used beyond the bound."""
        self._data[key] = value
        self._data.move_to_end(key)
        while len(self._data) > self.size:
            self._data.popitem(last=False)


INDEXES = IndexCache()
"""The process's index cache (pure memo of immutable data keyed by unique set ids)."""
