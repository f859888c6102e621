"""Memory ranking legs (app.memory.rank): BM25, cosine, entities, fusion."""

from __future__ import annotations

import numpy as np

from cairn.app.memory import rank


def test_entities_are_names_numbers_and_terms():
    text = "Hey Mel! Alice Smith moved the GraphQL gateway to Frankfurt in 2023. The [EMAIL_1] bounced."
    assert rank.extract_entities(text) == ["2023", "alice", "alice smith", "frankfurt", "graphql", "mel", "smith"]
    assert rank.extract_entities("東京のチーム") == []


def test_query_ngrams():
    assert rank.query_ngrams("Where is Alice Smith?") >= {"alice smith", "alice", "where is alice smith"}


def test_bm25_prefers_rare_terms_and_drops_non_matches():
    docs = [
        ("new", "the billing service moved"),
        ("mid", "Frankfurt billing region"),
        ("old", "Frankfurt Frankfurt office"),
    ]
    assert rank.bm25_rank("Frankfurt office", docs) == ["old", "mid"]
    assert rank.bm25_rank("nothing here matches", docs) == []
    assert rank.bm25_rank("", docs) == []


def test_cosine_and_entity_legs_keep_input_order_on_ties():
    q = np.array([1.0, 0.0], dtype=np.float32)
    vecs = [("a", np.array([0.0, 1.0])), ("b", np.array([1.0, 0.0])), ("c", np.array([1.0, 0.0]))]
    assert rank.cosine_rank(q, vecs) == ["b", "c", "a"]
    ents = [("x", {"alice"}), ("y", {"alice", "frankfurt"}), ("z", {"bob"})]
    assert rank.entity_rank("Did Alice go to Frankfurt?", ents) == ["y", "x"]


def test_fusion_uses_rrf_k60_with_leg_weights():
    fused = rank.fuse({"bm25": ["a", "b"], "vector": ["b"]}, {"bm25": 1.0, "vector": 1.0})
    assert [f.id for f in fused] == ["b", "a"]
    assert abs(fused[0].score - (1 / 62 + 1 / 61)) < 1e-12 and fused[0].ranks == {"bm25": 2, "vector": 1}


def test_vectors_round_trip_as_float32_bytes():
    v = np.array([0.25, -1.5, 3.0], dtype=np.float32)
    blob = rank.pack_vector(v)
    assert len(blob) == 12 and np.array_equal(rank.unpack_vector(blob), v)


def test_bm25_numbers_are_those_of_the_code_before_the_one_bm25():
    """Memory recall's BM25 through retrieval.lexical.bm25 (MEMORY_BM25: k1 1.2, b 0.75, Lucene's
    IDF). Expected: the inline formula of commit 2c2adb9 on the same memories. The rankings are
    identical; the scores equal to 1e-15 relative, not bit for bit: the old code multiplied
    (idf·tf)·(k1 + 1), the one function idf·(tf·(k1 + 1)) as Whoosh's leg does (1 ulp on
    ``gateway`` ×3), and a query's terms are summed in set order, which varies with the hash seed."""
    import pytest

    assert (rank.MEMORY_BM25.k1, rank.MEMORY_BM25.b, rank.MEMORY_BM25.idf.value) == (1.2, 0.75, "lucene")
    memories = [
        ("m1", "Alice moved the billing gateway to Frankfurt in 2023."),
        ("m2", "Frankfurt Frankfurt Frankfurt office opened; billing billing team moved there."),
        ("m3", "Bob prefers vegetarian lunches."),
        (
            "m4",
            "The gateway gateway gateway timeout was raised for billing exports in the Frankfurt region last spring.",
        ),
    ]
    expected = {
        "billing gateway Frankfurt": [("m4", 1.576036805922492), ("m1", 1.566730911677115), ("m2", 0.9901998938494563)],
        "vegetarian lunch": [("m3", 3.027131622305211)],
        "gateway timeout": [("m4", 1.9833463969363172), ("m1", 0.7721133150541163)],
    }
    for query, pairs in expected.items():
        scored = rank.bm25_scored(query, memories)
        assert [mid for mid, _ in scored] == [mid for mid, _ in pairs] == rank.bm25_rank(query, memories)
        assert [score for _, score in scored] == pytest.approx([score for _, score in pairs], rel=1e-15)
