"""The ranker's hashing and logistic regression (app/fields/logistic.py) equal scikit-learn's
``FeatureHasher`` and ``LogisticRegression(solver="liblinear")``, which they replace at run time.
scikit-learn is in the dev extra for this comparison only."""

from __future__ import annotations

import numpy as np
import pytest

from cairn.app.fields import KLEISTER_NDA_FIELDS, doc_features
from cairn.app.fields.logistic import fit_logistic, hash_features
from cairn.app.fields.ranker import N_FEATURES

sklearn_hashing = pytest.importorskip("sklearn.feature_extraction", reason="scikit-learn (dev extra) is the reference")
sklearn_linear = pytest.importorskip("sklearn.linear_model", reason="scikit-learn (dev extra) is the reference")

_TEXTS = [
    f"This Non-Disclosure Agreement is made on March {d}, 20{10 + d} between Alpha{d} Corp., a Delaware "
    f"corporation, and Beta{d} LLC. It is governed by the laws of the State of {state}. The term of this "
    f"Agreement is {d} years from the Effective Date. Signed: Alpha{d} Corp. Date: April {d}, 20{10 + d}."
    for d, state in zip(range(1, 13), ["New York", "Delaware", "California", "Texas"] * 3)
]


def _rows(field: str) -> tuple[list[list[str]], list[int]]:
    spec = next(s for s in KLEISTER_NDA_FIELDS if s.name == field)
    feats: list[list[str]] = []
    labels: list[int] = []
    for d, text in enumerate(_TEXTS, start=1):
        doc = doc_features(text, spec)
        feats += doc.features
        gold = {"effective_date": f"20{10 + d}-03-{d:02d}", "jurisdiction": None}[field]
        labels += [int(c.key == gold) if gold else int("New" in c.value or "Texas" in c.value) for c in doc.candidates]
    return feats, labels


def test_hashed_columns_and_counts_equal_feature_hasher():
    feats, _ = _rows("effective_date")
    feats = [*feats, ["same", "same", "é ü 日本"], []]  # repeats add; non-ASCII is hashed as UTF-8
    ours = hash_features(feats, n_features=N_FEATURES)
    ref = sklearn_hashing.FeatureHasher(n_features=N_FEATURES, input_type="string", alternate_sign=False)
    dense_ref = ref.transform(feats).toarray()
    dense_ours = np.zeros_like(dense_ref)
    np.add.at(dense_ours, (ours.rows, ours.columns), ours.values)
    assert dense_ours.sum() == sum(len(f) for f in feats)
    assert np.array_equal(dense_ours, dense_ref)


@pytest.mark.parametrize("field", ["effective_date", "jurisdiction"])
def test_weights_equal_liblinear_balanced(field):
    feats, labels = _rows(field)
    assert 0 < sum(labels) < len(labels)
    fit = fit_logistic(hash_features(feats, n_features=N_FEATURES), labels, c=0.5)
    x = sklearn_hashing.FeatureHasher(n_features=N_FEATURES, input_type="string", alternate_sign=False).transform(feats)
    ref = sklearn_linear.LogisticRegression(
        C=0.5, class_weight="balanced", solver="liblinear", tol=1e-10, max_iter=10_000
    )
    ref.fit(x, labels)
    ours = np.zeros(N_FEATURES)
    ours[fit.columns] = fit.coef
    assert np.abs(ours - ref.coef_[0]).max() < 1e-4
    assert abs(fit.intercept - ref.intercept_[0]) < 1e-4
    probabilities = 1 / (1 + np.exp(-(x @ ours + fit.intercept)))
    assert np.allclose(probabilities, ref.predict_proba(x)[:, 1], atol=1e-5)


def test_bad_input_is_refused():
    x = hash_features([["a"], ["b"]], n_features=8)
    with pytest.raises(ValueError, match="both classes"):
        fit_logistic(x, [1, 1], c=0.5)
    with pytest.raises(ValueError, match="0/1, one per row"):
        fit_logistic(x, [1], c=0.5)
    with pytest.raises(ValueError, match="c must be > 0"):
        fit_logistic(x, [0, 1], c=0)
    with pytest.raises(ValueError, match="n_features"):
        hash_features([["a"]], n_features=0)
