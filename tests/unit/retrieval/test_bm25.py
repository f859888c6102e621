"""The one BM25 (retrieval.lexical.bm25): IDF variants, the term score, parameters as data.

Each surface's numbers before and after it moved onto this module are checked beside the
surface: tests/unit/retrieval/test_lexical_scoring.py (Whoosh leg), test_sparse_bm25.py (sparse
leg), tests/unit/memory/test_rank.py (memory recall), tests/unit/contextsets/test_matching.py
(verified answers)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from cairn.retrieval.lexical.bm25 import IDF, SPARSE_BM25, WHOOSH_BM25, BM25Params, idf, term_score


def test_idf_variants_are_the_published_formulas():
    # N = 10 documents, n = 3 hold the term
    assert idf(n_docs=10, df=3, variant=IDF.LUCENE) == math.log(1 + 7.5 / 3.5)  # ln(1 + (N − n + 0.5)/(n + 0.5))
    assert idf(n_docs=10, df=3, variant=IDF.WHOOSH) == math.log(10 / 4) + 1  # Whoosh: ln(N/(n + 1)) + 1
    assert idf(n_docs=10, df=3, variant=IDF.LUCENE_PLUS_ONE) == math.log(1 + 7.5 / 3.5) + 1
    # Lucene's never goes negative, even for a term in every document (classic RSJ: ln(0.5/10.5) < 0)
    assert 0 < idf(n_docs=10, df=10, variant=IDF.LUCENE) < idf(n_docs=10, df=1, variant=IDF.LUCENE)
    with pytest.raises(ValueError):
        idf(n_docs=0, df=0, variant=IDF.WHOOSH)
    with pytest.raises(ValueError):
        idf(n_docs=3, df=-1, variant=IDF.LUCENE)


def test_term_score_saturates_and_normalises_length():
    p = BM25Params(k1=1.2, b=0.75, idf=IDF.LUCENE)
    # at the mean length the denominator is tf + k1: 2 × 2.2 / 3.2
    assert term_score(tf=2, length=10, avg_length=10.0, idf=1.0, params=p) == pytest.approx(2 * 2.2 / 3.2)
    # saturation: the score approaches idf·(k1 + 1) as tf grows
    assert term_score(tf=1000, length=10, avg_length=10.0, idf=2.0, params=p) == pytest.approx(2 * 2.2, rel=2e-3)
    # longer than average lowers the score; b = 0 ignores length
    assert term_score(tf=1, length=20, avg_length=10.0, idf=1.0, params=p) < term_score(
        tf=1, length=5, avg_length=10.0, idf=1.0, params=p
    )
    flat = BM25Params(k1=1.2, b=0.0, idf=IDF.LUCENE)
    assert term_score(tf=1, length=20, avg_length=10.0, idf=1.0, params=flat) == term_score(
        tf=1, length=5, avg_length=10.0, idf=1.0, params=flat
    )
    # numpy arrays give element-wise the same bits as Python floats
    tf, lengths = np.array([1.0, 3.0, 7.0]), np.array([4.0, 9.0, 30.0])
    array = term_score(tf=tf, length=lengths, avg_length=11.5, idf=1.7, params=WHOOSH_BM25)
    assert array.tolist() == [
        term_score(tf=float(t), length=float(n), avg_length=11.5, idf=1.7, params=WHOOSH_BM25)
        for t, n in zip(tf, lengths)
    ]


def test_parameters_are_data_and_validated():
    assert (WHOOSH_BM25.k1, WHOOSH_BM25.b, WHOOSH_BM25.idf) == (1.5, 0.75, IDF.WHOOSH)
    assert (SPARSE_BM25.k1, SPARSE_BM25.b, SPARSE_BM25.idf) == (1.5, 0.75, IDF.LUCENE_PLUS_ONE)
    with pytest.raises(AttributeError):
        WHOOSH_BM25.k1 = 2.0  # type: ignore[misc]  # frozen
    for k1, b in ((0.0, 0.75), (1.2, 1.5), (1.2, -0.1)):
        with pytest.raises(ValueError, match="k1 > 0 and 0 <= b <= 1"):
            BM25Params(k1=k1, b=b, idf=IDF.LUCENE)
