"""The BM25 lexical leg: a Whoosh index on disk (:class:`LexicalIndex`, :mod:`.whoosh_index`,
built from :mod:`.directory`, :mod:`.schema`, :mod:`.writing`, :mod:`.query`, :mod:`.search`
and :mod:`.scoring`) or sparse BM25 vectors in Qdrant (:class:`SparseBM25Index`,
:mod:`.sparse`, cluster mode).
"""

from __future__ import annotations

from cairn.retrieval.lexical.schema import IndexedPassage
from cairn.retrieval.lexical.sparse import BM25_VECTOR, TF_VECTOR, SparseBM25Index, sparse_config
from cairn.retrieval.lexical.whoosh_index import LexicalIndex

__all__ = ["BM25_VECTOR", "TF_VECTOR", "IndexedPassage", "LexicalIndex", "SparseBM25Index", "sparse_config"]
