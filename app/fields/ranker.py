"""The learned ranker: which candidate(s) fill a field in a document.

Method: every candidate of the field's type (:mod:`app.fields.finders`) becomes a bag of
string features — its finder (``kind``), the words before and after it (positions 1–3 and
a bag of 12 words each side), its own words, the line it is on starting words, its relative
position in the document (tenths), how often its value recurs, its rank among same-kind
candidates, its length in words, and how many words of the field's name and description
stand in its 12-word window. Features are hashed (2^18 columns) and an L2-regularised
logistic regression per field (C = 0.5, balanced classes; :mod:`app.fields.logistic`, which
reproduces scikit-learn's ``FeatureHasher`` and ``LogisticRegression(solver="liblinear")``)
scores each candidate; a value's score is its best candidate's probability. A ONE field takes the best
value when its score reaches the field's threshold; a MANY field takes every value at or
above it (at most 8). Thresholds are tuned by 3-fold cross-validation inside the training
documents (the F1-maximising one), so no document scores itself.

Without labelled documents a field is scored zero-shot: description/name words among the 5
words before and 2 after the candidate (weight 1.5) and in its 12-word window (0.5), minus
0.3 per earlier value of the same kind, intercept -1.2, logistic; threshold 0.5.

A trained model is plain JSON (:meth:`Ranker.to_json`: per field its non-zero hashed
weights, intercept and threshold) — stored in the database, never pickled.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from cairn.app.fields.finders import find_candidates
from cairn.app.fields.logistic import fit_logistic, hash_features
from cairn.app.fields.types import Candidate, Extracted, FieldSpec, FieldType, Multiplicity

N_FEATURES = 2**18
WINDOW = 12
MAX_VALUES = 8
_WORD = re.compile(r"[A-Za-z]+|\d+|[^\sA-Za-z\d]")
_STOP = {"the", "a", "an", "of", "and", "or", "to", "in", "by", "for", "this", "that", "is", "be", "as", "with", "on"}


def _words(s: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(s)]


def _desc_words(spec: FieldSpec) -> set[str]:
    words = set(_words(spec.name.replace("_", " ") + " " + spec.description))
    return {w for w in words if w.isalpha() and w not in _STOP and len(w) > 2}


@dataclass
class DocFeatures:
    """The candidates of one type in one document and their feature strings."""

    candidates: list[Candidate]
    features: list[list[str]]


def featurise(text: str, candidates: Sequence[Candidate], spec: FieldSpec) -> list[list[str]]:
    """Feature strings of each candidate (see the module docstring)."""
    n = max(len(text), 1)
    desc = _desc_words(spec)
    counts = Counter(c.key for c in candidates)
    first_rank: dict[str, int] = {}
    out: list[list[str]] = []
    kind_rank: Counter[str] = Counter()
    for c in candidates:
        left = _words(text[max(0, c.start - 120) : c.start])[-WINDOW:]
        right = _words(text[c.end : c.end + 120])[:WINDOW]
        own = _words(text[c.start : c.end])
        line_start = text.rfind("\n", 0, c.start) + 1
        line_head = _words(text[line_start : min(c.start, line_start + 60)])[:3]
        f = [f"k={c.kind}", f"pos={min(9, int(10 * c.start / n))}", f"early={c.start < 2000}"]
        for i, w in enumerate(reversed(left[-3:]), start=1):
            f.append(f"L{i}={w}")
        for i, w in enumerate(right[:3], start=1):
            f.append(f"R{i}={w}")
        f.extend(f"Lb={w}" for w in set(left))
        f.extend(f"Rb={w}" for w in set(right))
        f.extend(f"W={w}" for w in set(own) if w.isalpha())
        if own:
            f += [f"Wf={own[0]}", f"Wl={own[-1]}"]
        f += [f"KL1={c.kind}:{left[-1] if left else '^'}", f"KR1={c.kind}:{right[0] if right else '$'}"]
        f.append(f"KL2={c.kind}:{' '.join(left[-2:])}")
        f.append(f"KR2={c.kind}:{' '.join(right[:2])}")
        f.extend(f"H={w}" for w in line_head)
        f.append(f"len={min(len(own), 8)}")
        f.append(f"cnt={min(counts[c.key], 6)}")
        if c.key not in first_rank:
            first_rank[c.key] = kind_rank[c.kind]
            kind_rank[c.kind] += 1
        f.append(f"rank={min(first_rank[c.key], 5)}")
        f.append(f"caps={text[c.start : c.end].isupper()}")
        hits = len(desc & (set(left) | set(right)))
        f.append(f"desc={min(hits, 3)}")
        near = len(desc & (set(left[-5:]) | set(right[:2])))
        f.append(f"dnear={min(near, 3)}")
        f.extend(f"kdesc={c.kind}:{min(hits, 3)}" for _ in (0,))
        out.append(f)
    return out


def doc_features(text: str, spec: FieldSpec) -> DocFeatures:
    """Candidates of ``spec.type`` in ``text`` and their features."""
    cands = find_candidates(text, spec.type)
    return DocFeatures(cands, featurise(text, cands, spec))


@dataclass
class FieldModel:
    """One field's logistic-regression weights (sparse: hashed index → weight), intercept and
    decision threshold; ``trained`` is False for the zero-shot scorer."""

    weights: dict[int, float] = field(default_factory=dict)
    intercept: float = 0.0
    threshold: float = 0.5
    trained: bool = False
    documents: int = 0
    _dense: np.ndarray | None = field(default=None, repr=False, compare=False)

    def scores(self, features: list[list[str]]) -> np.ndarray:
        """The probability of each candidate (a float array, one per candidate)."""
        if not features:
            return np.zeros(0)
        if not self.trained:
            return np.array([_zero_shot(f) for f in features])
        if self._dense is None:
            self._dense = np.zeros(N_FEATURES)
            for i, v in self.weights.items():
                self._dense[i] = v
        z = hash_features(features, n_features=N_FEATURES).dot(self._dense) + self.intercept
        return 1.0 / (1.0 + np.exp(-z))


def _zero_shot(f: list[str]) -> float:
    desc = next((int(x.split("=")[1]) for x in f if x.startswith("desc=")), 0)
    near = next((int(x.split("=")[1]) for x in f if x.startswith("dnear=")), 0)
    rank = next((int(x.split("=")[1]) for x in f if x.startswith("rank=")), 5)
    z = -1.2 + 1.5 * near + 0.5 * desc - 0.3 * rank
    return 1.0 / (1.0 + math.exp(-z))


def _fit(features: list[list[str]], labels: list[int], c: float = 0.5) -> FieldModel:
    if not features or len(set(labels)) < 2:
        return FieldModel()
    fit = fit_logistic(hash_features(features, n_features=N_FEATURES), labels, c=c)
    return FieldModel({int(i): float(w) for i, w in zip(fit.columns, fit.coef) if w != 0.0}, fit.intercept, 0.5, True)


def choose(doc: DocFeatures, scores: np.ndarray, spec: FieldSpec, threshold: float) -> list[Extracted]:
    """The values of one field in one document: candidates grouped by key, a value's score its
    best candidate's, spans in text order; ONE → the best value at or above ``threshold``,
    MANY → every such value (best first, at most 8), leaving out a value whose key holds (or is
    held by) a better value's key as whole words ("LOGO WELLS FARGO SECURITIES LLC" after
    "WELLS FARGO SECURITIES LLC")."""
    best: dict[str, Extracted] = {}
    for c, s in zip(doc.candidates, scores):
        e = best.get(c.key)
        if e is None:
            best[c.key] = Extracted(spec.name, c.value, c.key, float(s), [(c.start, c.end)])
            continue
        e.spans.append((c.start, c.end))
        if s > e.score:
            e.score, e.value = float(s), c.value
            e.spans.insert(0, e.spans.pop())  # the best-scored span is the citation
    ranked = sorted(best.values(), key=lambda e: (-e.score, e.key))
    ranked = [e for e in ranked if e.score >= threshold]
    if spec.multiplicity == Multiplicity.ONE:
        return ranked[:1]
    kept: list[Extracted] = []
    for e in ranked:  # one entity once: a value whose words contain (or lie in) a better one's is a variant
        if spec.type != FieldType.TEXT or not any(_nested(e.key, k.key) for k in kept):
            kept.append(e)
    return kept[:MAX_VALUES]


def _nested(a: str, b: str) -> bool:
    wa, wb = f" {a} ", f" {b} "
    return wa in wb or wb in wa or a.startswith(b) or b.startswith(a)


def _labels(doc: DocFeatures, gold: set[str]) -> list[int]:
    return [int(c.key in gold) for c in doc.candidates]


def f1_counts(pred: list[set[str]], gold: list[set[str]]) -> tuple[int, int, int]:
    """(true positives, predicted, gold) summed over documents."""
    tp = sum(len(p & g) for p, g in zip(pred, gold))
    return tp, sum(len(p) for p in pred), sum(len(g) for g in gold)


def f1(tp: int, npred: int, ngold: int) -> float:
    """Micro-F1 from counts (0 when nothing was predicted or expected)."""
    if tp == 0:
        return 0.0
    p, r = tp / npred, tp / ngold
    return 2 * p * r / (p + r)


def _best_threshold(docs: list[DocFeatures], scores: list[np.ndarray], spec: FieldSpec, gold: list[set[str]]) -> float:
    best_t, best_f = 0.5, -1.0
    for t in np.arange(0.05, 0.96, 0.05):
        pred = [{e.key for e in choose(d, s, spec, float(t))} for d, s in zip(docs, scores)]
        f = f1(*f1_counts(pred, gold))
        if f > best_f + 1e-9:
            best_t, best_f = float(t), f
    return best_t


def train_field(spec: FieldSpec, docs: list[DocFeatures], gold: list[set[str]], tune_folds: int = 3) -> FieldModel:
    """A :class:`FieldModel` for ``spec`` from labelled documents (``gold[i]`` = the keys of
    document i's true values, empty = none). The threshold is tuned by ``tune_folds``-fold
    cross-validation inside these documents (0.5 with fewer than 6 documents)."""
    feats = [f for d in docs for f in d.features]
    labels = [y for d, g in zip(docs, gold) for y in _labels(d, g)]
    model = _fit(feats, labels)
    model.documents = len(docs)
    if not model.trained or len(docs) < 6:
        return model
    oof: list[np.ndarray] = [np.zeros(0)] * len(docs)
    for k in range(tune_folds):
        train_idx = [i for i in range(len(docs)) if i % tune_folds != k]
        test_idx = [i for i in range(len(docs)) if i % tune_folds == k]
        inner = _fit(
            [f for i in train_idx for f in docs[i].features],
            [y for i in train_idx for y in _labels(docs[i], gold[i])],
        )
        for i in test_idx:
            oof[i] = inner.scores(docs[i].features)
    model.threshold = _best_threshold(docs, oof, spec, gold)
    return model


@dataclass
class Ranker:
    """Per-field models; :meth:`extract` applies them to a text."""

    models: dict[str, FieldModel] = field(default_factory=dict)

    def extract(self, text: str, specs: Sequence[FieldSpec]) -> dict[str, list[Extracted]]:
        """The chosen values of each field in ``text`` (field name → values, best first)."""
        out: dict[str, list[Extracted]] = {}
        for spec in specs:
            model = self.models.get(spec.name, FieldModel())
            doc = doc_features(text, spec)
            out[spec.name] = choose(doc, model.scores(doc.features), spec, model.threshold)
        return out

    def to_json(self) -> dict:
        """A JSON-able form: ``{field: {weights: [[index, weight], …], intercept, threshold,
        trained, documents}}`` (weights rounded to 6 decimals)."""
        return {
            name: {
                "weights": [[i, round(w, 6)] for i, w in sorted(m.weights.items())],
                "intercept": m.intercept,
                "threshold": m.threshold,
                "trained": m.trained,
                "documents": m.documents,
            }
            for name, m in self.models.items()
        }

    @classmethod
    def from_json(cls, data: dict) -> Ranker:
        """The inverse of :meth:`to_json`."""
        return cls(
            {
                name: FieldModel(
                    {int(i): float(w) for i, w in m["weights"]},
                    float(m["intercept"]),
                    float(m["threshold"]),
                    bool(m["trained"]),
                    int(m.get("documents", 0)),
                )
                for name, m in data.items()
            }
        )


def train(specs: Sequence[FieldSpec], texts: Sequence[str], gold: Sequence[dict[str, set[str]]]) -> Ranker:
    """A :class:`Ranker` trained on labelled texts (``gold[i][field]`` = true value keys)."""
    ranker = Ranker()
    for spec in specs:
        docs = [doc_features(t, spec) for t in texts]
        ranker.models[spec.name] = train_field(spec, docs, [g.get(spec.name, set()) for g in gold])
    return ranker
