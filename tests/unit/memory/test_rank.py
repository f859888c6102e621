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
