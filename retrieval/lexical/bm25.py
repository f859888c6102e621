"""Okapi BM25, once: the IDF variants and the per-term score every BM25 surface of Cairn uses.

Method: Robertson & Zaragoza 2009, "The Probabilistic Relevance Framework: BM25 and Beyond"
(Foundations and Trends in IR 3(4)), eq. 3.15 with the usual length normalisation:

    score(q, d) = Σ_{t ∈ q} idf(t) · tf·(k1 + 1) / (tf + k1·(1 − b + b·len(d)/avg_len))

``tf`` the term's frequency in the document, ``len(d)`` the document's length in analysed terms,
``avg_len`` the mean length. The parameters are data (:class:`BM25Params`): ``k1`` (term-frequency
saturation), ``b`` (length normalisation) and the IDF variant (:class:`IDF`):

* :attr:`IDF.LUCENE` — ``ln(1 + (N − n + 0.5)/(n + 0.5))``: the Robertson–Spärck Jones weight
  with ``1 +`` inside the logarithm, as Lucene (since 6.0) and Qdrant compute it; never negative,
  unlike the classic RSJ form ``ln((N − n + 0.5)/(n + 0.5))``, which is not used here.
* :attr:`IDF.WHOOSH` — ``ln(N/(n + 1)) + 1``: Whoosh's (``whoosh.scoring.WeightingModel.idf``),
  ``N`` counting deleted documents until a merge drops them.
* :attr:`IDF.LUCENE_PLUS_ONE` — ``LUCENE + 1``: the sparse leg's, which Qdrant computes
  server-side (:mod:`retrieval.lexical.sparse`; the ``+ 1`` keeps Whoosh's floor for common terms).

``N`` is the number of documents, ``n`` the number holding the term. Each surface names its
parameters (the reasons are in the README's retrieval section):

* the Whoosh leg (:mod:`.whoosh_index`, :mod:`.scoring`): k1 1.5, b 0.75, WHOOSH — :data:`WHOOSH_BM25`;
* the sparse leg in Qdrant (:mod:`.sparse`): k1 1.5, b 0.75, LUCENE_PLUS_ONE — :data:`SPARSE_BM25`;
* memory recall (``app.memory.rank``): k1 1.2, b 0.75, LUCENE — ``MEMORY_BM25``;
* verified answers of context sets (``app.contextsets.matching``): k1 1.2, b 0.75, LUCENE —
  ``ANSWER_BM25``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from typing import TypeVar

import numpy as np

__all__ = ["IDF", "SPARSE_BM25", "WHOOSH_BM25", "BM25Params", "idf", "term_score"]


class IDF(StrEnum):
    """The IDF variants (module doc)."""

    LUCENE = "lucene"
    WHOOSH = "whoosh"
    LUCENE_PLUS_ONE = "lucene+1"


@dataclass(frozen=True)
class BM25Params:
    """The parameters of one BM25 surface.

    Attributes:
        k1: Term-frequency saturation, > 0.
        b: Length normalisation, in [0, 1].
        idf: The IDF variant.

    Raises:
        ValueError: ``k1`` <= 0 or ``b`` outside [0, 1].
    """

    k1: float
    b: float
    idf: IDF

    def __post_init__(self) -> None:
        if not self.k1 > 0 or not 0 <= self.b <= 1:
            raise ValueError(f"BM25 needs k1 > 0 and 0 <= b <= 1, got k1={self.k1}, b={self.b}")


WHOOSH_BM25 = BM25Params(k1=1.5, b=0.75, idf=IDF.WHOOSH)
"""The Whoosh leg's: k1 and b of the reference bm25s baseline (SciFact nDCG@10 0.690 here vs
bm25s 0.686; :mod:`retrieval.lexical.whoosh_index`), Whoosh's own IDF."""

SPARSE_BM25 = BM25Params(k1=1.5, b=0.75, idf=IDF.LUCENE_PLUS_ONE)
"""The sparse leg's: the Whoosh leg's k1 and b, so both backends rank alike; Qdrant's IDF plus one
(SciFact nDCG@10 0.7370 with Qdrant's IDF alone, 0.7483 with + 1, 0.7473 with Whoosh's:
:mod:`retrieval.lexical.sparse`)."""

Number = TypeVar("Number", float, np.ndarray)


def idf(*, n_docs: int, df: int, variant: IDF) -> float:
    """The inverse document frequency of a term (module doc for the variants).

    Args:
        n_docs: Documents in the collection (``N``), >= 0.
        df: Documents holding the term (``n``), 0 <= df.
        variant: Which formula.

    Returns:
        The IDF, a float (> 0 for LUCENE and LUCENE_PLUS_ONE; WHOOSH is negative only for
        a term in nearly every document of a tiny collection).

    Raises:
        ValueError: ``n_docs`` or ``df`` negative, or ``n_docs`` = 0 with WHOOSH.
    """
    if n_docs < 0 or df < 0:
        raise ValueError(f"n_docs and df must be >= 0, got {n_docs}, {df}")
    if variant is IDF.WHOOSH:
        if n_docs == 0:
            raise ValueError("Whoosh's IDF needs n_docs >= 1")
        return math.log(n_docs / (df + 1)) + 1
    lucene = math.log(1 + (n_docs - df + 0.5) / (df + 0.5))
    return lucene + 1 if variant is IDF.LUCENE_PLUS_ONE else lucene


def term_score(*, tf: Number, length: Number, avg_length: float, idf: float, params: BM25Params) -> Number:
    """One term's BM25 contribution to a document's score (module doc):
    ``idf · (tf·(k1 + 1)) / (tf + k1·((1 − b) + b·length/avg_length))``.

    Evaluated in exactly this order (IEEE rounding then gives the same bits on every surface: the
    Whoosh leg's numpy arrays, and Python floats elsewhere). ``idf = 1.0`` gives the document
    side of a sparse BM25 vector (the IDF applied by the engine).

    Args:
        tf: Term frequency in the document (> 0), or an array of them.
        length: Document length in analysed terms (same shape as ``tf``).
        avg_length: Mean document length, > 0 (callers use 1.0 for an empty collection).
        idf: The term's IDF (:func:`idf`), times any field weight.
        params: k1 and b.

    Returns:
        The contribution, a float or an array like ``tf``.
    """
    k1, b = params.k1, params.b
    return idf * (tf * (k1 + 1)) / (tf + k1 * ((1 - b) + b * length / avg_length))
