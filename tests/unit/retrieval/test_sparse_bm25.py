"""The lexical leg as sparse BM25 in Qdrant (qdrant-client local mode) vs Whoosh; a collection
shared with the dense vectors; visibility filters in Qdrant; deletes and replaced text."""

from __future__ import annotations

import numpy as np
import pytest
from qdrant_client import QdrantClient

from cairn.retrieval.lexical import WhooshIndex
from cairn.retrieval.lexical.bm25 import IDF, SPARSE_BM25, BM25Params
from cairn.retrieval.lexical.sparse import (
    BM25_VECTOR,
    TF_VECTOR,
    SparseBM25Index,
    document_vector,
    query_vector,
    sparse_config,
    term_index,
)
from cairn.retrieval.vectors import VectorPoint
from cairn.retrieval.vectors.client import ClientVectorIndex
from tests.unit.retrieval.lexical_corpus import CORPUS, QUERIES, P


@pytest.fixture
def whoosh(tmp_path):
    ix = WhooshIndex(tmp_path / "lex")
    ix.add(CORPUS)
    yield ix
    ix.close()


@pytest.fixture
def sparse():
    client = QdrantClient(location=":memory:")
    ix = SparseBM25Index(client=client, collection="passages")
    ix.add(CORPUS)
    yield ix
    client.close()


def ids(hits: list[tuple[str, float]]) -> list[str]:
    return [pid for pid, _ in hits]


@pytest.mark.parametrize("query", QUERIES)
def test_the_sparse_leg_ranks_like_whoosh(whoosh, sparse, query):
    expected = ids(whoosh.search(query, workspace_id="w1"))
    assert expected  # every query matches something
    assert ids(sparse.search(query, workspace_id="w1")) == expected


def test_japanese_bigrams_find_the_passage_and_not_the_other_workspace(sparse):
    assert ids(sparse.search("東京", workspace_id="w1"))[:1] == ["ja-tokyo"]
    assert ids(sparse.search("ベクトル検索", workspace_id="w1")) == ["ja-vec"]
    assert ids(sparse.search("数据库", workspace_id="w1")) == ["zh-db"]
    assert "other-ws" not in ids(sparse.search("dogs running", workspace_id="w1"))
    assert ids(sparse.search("dogs running", workspace_id="w2")) == ["other-ws"]


def test_collection_and_document_filters_run_in_qdrant(sparse):
    assert set(ids(sparse.search("日本", workspace_id="w1", collection_ids=["c-ja"]))) == {"ja-kyoto", "ja-tokyo"}
    assert ids(sparse.search("日本", workspace_id="w1", collection_ids=["c-zh", "c1"])) == []
    assert ids(sparse.search("dogs", workspace_id="w1", document_ids=["d-en3"])) == ["en-mix"]
    assert sparse.search("dogs", workspace_id="w1", collection_ids=["c-zh"]) == []
    assert sparse.search("dogs", workspace_id="w1", document_ids=[]) == []
    assert sparse.search("the and of", workspace_id="w1") == []  # only stop words: no terms


def test_deletes_and_replaced_text_are_respected(sparse, whoosh):
    assert "en-cats" in ids(sparse.search("cats", workspace_id="w1"))
    sparse.delete(["en-cats"])
    whoosh.delete(["en-cats"])
    assert ids(sparse.search("cats", workspace_id="w1")) == ids(whoosh.search("cats", workspace_id="w1")) == ["en-mix"]
    assert sparse.has(["en-cats", "en-mix"]) == {"en-mix"} and sparse.count() == len(CORPUS) - 1
    # new text under the same passage id replaces the old terms (upsert by passage id)
    replaced = P("en-dogs", "Penguins huddle on the ice.", doc="d-en")
    sparse.add([replaced])
    whoosh.add([replaced])
    assert ids(sparse.search("penguins", workspace_id="w1")) == ["en-dogs"]
    assert "en-dogs" not in ids(sparse.search("morning", workspace_id="w1"))
    for query in ("dogs running", "morning", "penguins ice"):
        assert ids(sparse.search(query, workspace_id="w1")) == ids(whoosh.search(query, workspace_id="w1"))


def test_document_weights_are_bm25_of_the_analysed_terms():
    indices, values = document_vector("dog dogs cat", params=SPARSE_BM25, avg_length=3.0)
    # "dog" twice (stemmed), "cat" once; len = 3 = avg_length, so norm = k1
    weight = dict(zip(indices, values))
    assert weight[term_index("dog")] == pytest.approx(2 * 2.5 / (2 + 1.5))
    assert weight[term_index("cat")] == pytest.approx(1 * 2.5 / (1 + 1.5))
    q_indices, q_values = query_vector("Dogs dog 東京都")
    assert q_indices == sorted({term_index("dog"), term_index("東京"), term_index("京都")}) and set(q_values) == {1.0}
    import hashlib

    assert term_index("dog") == int.from_bytes(hashlib.blake2b(b"dog", digest_size=4).digest(), "big") < 2**32


def test_the_collection_is_shared_with_the_dense_vectors_without_clobbering():
    client = QdrantClient(location=":memory:")
    try:
        dense = ClientVectorIndex(client=client, collection="shared", dim=4, sparse_vectors=sparse_config())
        lexical = SparseBM25Index(client=client, collection="shared")
        config = client.get_collection("shared").config.params
        sparse_params = config.sparse_vectors or {}
        assert {name: str(p.modifier) for name, p in sparse_params.items()} == {BM25_VECTOR: "idf", TF_VECTOR: "None"}
        lexical.add(CORPUS[:3])  # BM25 first (ingest order), the embedding later
        assert dense.count() == 0 and lexical.count() == 3 and dense.has(["en-dogs"]) == set()
        v = np.array([1, 0, 0, 0], dtype=np.float32)
        dense.upsert([VectorPoint("en-dogs", v, "w1", "c1", "d-en"), VectorPoint("new", v, "w1", "c1", "d-x")])
        assert dense.count() == 2 and lexical.count() == 3  # the dense write kept the sparse vector
        assert ids(lexical.search("dogs running", workspace_id="w1")) == ["en-dogs2", "en-dogs"]
        assert ids(dense.search(v, workspace_id="w1")) == ["en-dogs", "new"]
        lexical.add([CORPUS[0]])  # re-indexing BM25 keeps the dense vector
        assert set(dense.vectors(["en-dogs"])) == {"en-dogs"}
        lexical.clear()  # a lexical rebuild leaves the dense leg alone, and vice versa
        assert (lexical.count(), dense.count()) == (0, 2)
        lexical.add(CORPUS[:3])
        dense.clear()
        assert (lexical.count(), dense.count()) == (3, 0)
    finally:
        client.close()


def test_a_collection_without_the_bm25_vector_is_refused_with_the_fix():
    client = QdrantClient(location=":memory:")
    try:
        ClientVectorIndex(client=client, collection="old", dim=4)  # made by an older Cairn: dense only
        with pytest.raises(ValueError, match=r"no sparse vector .bm25.*cairn reindex"):
            SparseBM25Index(client=client, collection="old")
        with pytest.raises(ValueError, match="without the sparse vector"):
            ClientVectorIndex(client=client, collection="old", dim=4, sparse_vectors=sparse_config())
    finally:
        client.close()


def test_the_remote_client_path_ranks_like_whoosh_and_keeps_the_dense_vectors(whoosh):
    """qdrant-client's REST path (``url=``) against a REST endpoint backed by local mode
    (tests/qdrant_rest.py): request serialisation and the server-only branches, not a server."""
    from tests.qdrant_rest import qdrant_rest

    with qdrant_rest() as (url, calls):
        dense = ClientVectorIndex(url=url, collection="remote", dim=4, sparse_vectors=sparse_config())
        lexical = SparseBM25Index(client=dense.client, collection="remote")
        lexical.add(CORPUS)
        v = np.array([0, 1, 0, 0], dtype=np.float32)
        dense.upsert([VectorPoint("ja-tokyo", v, "w1", "c-ja", "d-ja2")])
        for query in QUERIES:
            assert ids(lexical.search(query, workspace_id="w1")) == ids(whoosh.search(query, workspace_id="w1"))
        assert ids(lexical.search("東京", workspace_id="w1", collection_ids=["c-zh"])) == []
        assert (lexical.count(), dense.count(), dense.has(["ja-tokyo", "ja-vec"])) == (len(CORPUS), 1, {"ja-tokyo"})
        lexical.delete(["ja-tokyo"])
        assert "ja-tokyo" not in ids(lexical.search("東京", workspace_id="w1")) and dense.count() == 1
        dense.close()
        assert ("PUT", "/collections/remote/index") in calls  # payload indexes: the server-only branch


def test_named_dense_spaces_share_the_collection_and_an_unnamed_one_is_re_created_with_bm25():
    """Two dense models' named vectors (``minilm``, ``e5``) beside ``bm25``/``bm25_tf``: each
    index sees only its own vectors; a collection of the layout before named vectors is
    re-created with the sparse vectors (their data gone: the caller re-applies both legs)."""
    from qdrant_client import models

    client = QdrantClient(location=":memory:")
    try:
        client.create_collection(
            "old",
            vectors_config=models.VectorParams(size=4, distance=models.Distance.COSINE),
            sparse_vectors_config=sparse_config(),
        )
        SparseBM25Index(client=client, collection="old").add(CORPUS[:2])
        spaces = {"minilm": 4, "e5": 4}
        dense = ClientVectorIndex(client=client, collection="old", spaces=spaces, sparse_vectors=sparse_config())
        assert dense.migrated is not None and "one unnamed vector (4 dims" in dense.migrated
        assert "sparse BM25" in dense.migrated
        params = client.get_collection("old").config.params
        assert set(params.vectors) == {"minilm", "e5"} and set(params.sparse_vectors or {}) == {BM25_VECTOR, TF_VECTOR}
        lexical = SparseBM25Index(client=client, collection="old")
        assert lexical.count() == 0  # the BM25 data went with the old collection
        lexical.add(CORPUS[:3])  # BM25 first: these points have no "space" payload
        en, ja = np.array([1, 0, 0, 0], dtype=np.float32), np.array([0, 1, 0, 0], dtype=np.float32)
        dense.upsert(
            [
                VectorPoint(CORPUS[0].passage_id, en, "w1", "c1", "d-en", space="minilm"),
                VectorPoint(CORPUS[1].passage_id, ja, "w1", "c1", "d-ja", space="e5"),
            ]
        )
        assert (dense.count(), lexical.count()) == (2, 3)
        assert dense.has([p.passage_id for p in CORPUS[:3]]) == {CORPUS[0].passage_id, CORPUS[1].passage_id}
        assert dense.has_space("e5", workspace_id="w1") and not dense.has_space("e5", workspace_id="w2")
        assert ids(dense.search(ja, workspace_id="w1", space="e5")) == [CORPUS[1].passage_id]
        assert ids(dense.search(ja, workspace_id="w1", space="minilm")) == [CORPUS[0].passage_id]
        stored = dense.vectors([CORPUS[0].passage_id, CORPUS[1].passage_id, CORPUS[2].passage_id])
        assert set(stored) == {CORPUS[0].passage_id, CORPUS[1].passage_id}
        assert np.allclose(stored[CORPUS[1].passage_id], ja)
        dense.delete([CORPUS[1].passage_id])  # its e5 vector only: the BM25 vectors stay
        assert (dense.count(), lexical.count()) == (1, 3) and not dense.has_space("e5", workspace_id="w1")
        dense.clear()
        assert (dense.count(), lexical.count()) == (0, 3)
        again = ClientVectorIndex(client=client, collection="old", spaces=spaces, sparse_vectors=sparse_config())
        assert again.migrated is None  # the current layout: kept
    finally:
        client.close()


def test_document_weights_are_those_of_the_code_before_the_one_bm25():
    """The sparse leg's document weights through retrieval.lexical.bm25.term_score (IDF 1.0):
    the exact floats the inline formula wrote before (k1 1.5, b 0.75, quantised length / 100),
    recorded from commit 2c2adb9; equal bits, so stored vectors need no reindex."""
    expected = {
        "dog dogs cat": [(1787499195, 1.7746228926353151), (4148064672, 2.075765438505449)],
        "Electrode electrode electrode consumption per tonne of steel": [
            (361857152, 1.7196904557179709),
            (721404991, 1.7196904557179709),
            (1049662387, 1.7196904557179709),
            (2580877013, 2.1715526601520088),
            (3133305409, 1.7196904557179709),
        ],
        "東京都の東京タワー": [
            (1000759654, 1.7064846416382253),
            (3179978821, 2.028397565922921),
            (3404495418, 1.7064846416382253),
            (3723420719, 1.7064846416382253),
            (3834432871, 1.7064846416382253),
            (3852209670, 1.7064846416382253),
            (4026093314, 1.7064846416382253),
        ],
    }
    for text, pairs in expected.items():
        assert list(zip(*document_vector(text))) == pairs
    with pytest.raises(ValueError, match="Qdrant's IDF plus one"):
        SparseBM25Index(client=QdrantClient(location=":memory:"), bm25=BM25Params(k1=1.5, b=0.75, idf=IDF.WHOOSH))
