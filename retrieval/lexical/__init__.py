"""The BM25 lexical leg: the :class:`LexicalIndex` protocol, :func:`open_lexical_index` and
its two backends — :class:`WhooshIndex` (a Whoosh index on disk, :mod:`.whoosh_index`, built
from :mod:`.directory`, :mod:`.schema`, :mod:`.writing`, :mod:`.query`, :mod:`.search` and
:mod:`.scoring`) and :class:`SparseBM25Index` (sparse BM25 vectors in Qdrant, :mod:`.sparse`,
cluster mode) — and the one Okapi BM25 every surface computes with (:mod:`.bm25`).
"""

from __future__ import annotations

from cairn.retrieval.lexical.bm25 import IDF, SPARSE_BM25, WHOOSH_BM25, BM25Params, idf, term_score
from cairn.retrieval.lexical.factory import BACKENDS, open_lexical_index
from cairn.retrieval.lexical.protocol import LexicalIndex
from cairn.retrieval.lexical.schema import IndexedPassage
from cairn.retrieval.lexical.sparse import BM25_VECTOR, TF_VECTOR, SparseBM25Index, sparse_config
from cairn.retrieval.lexical.whoosh_index import WhooshIndex

__all__ = [
    "BACKENDS",
    "BM25_VECTOR",
    "IDF",
    "SPARSE_BM25",
    "TF_VECTOR",
    "WHOOSH_BM25",
    "BM25Params",
    "IndexedPassage",
    "LexicalIndex",
    "SparseBM25Index",
    "WhooshIndex",
    "idf",
    "open_lexical_index",
    "sparse_config",
    "term_score",
]
