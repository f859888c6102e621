"""The dense floor and the weak-evidence notes of packs (pure functions; the GraphQL tests
exercise them through the real model in tests/graphql/test_packs_retrieval.py)."""

from __future__ import annotations

import pytest

from cairn.app.packs.evidence import (
    DENSE_HEAD,
    apply_floor,
    cosine_baseline,
    dense_evidence,
    dense_head_kept,
    evidence_notes,
    similarity_floor,
)
from cairn.retrieval.fusion import rrf

MODEL = "sentence-transformers/all-MiniLM-L6-v2"


class Named:
    def __init__(self, name: str) -> None:
        self.name = name


def test_only_dense_only_items_under_the_floor_are_dropped_and_nothing_is_re_ranked():
    fused = rrf({"lexical": ["a", "b"], "dense": ["c", "a", "d", "b"]})
    cosine = {"c": 0.31, "a": 0.10, "d": 0.29, "b": 0.05}
    kept = apply_floor(fused, cosine, 0.30)
    assert [f.id for f in kept] == [f.id for f in fused if f.id != "d"]  # a, b: BM25; c: 0.31
    assert kept == [f for f in fused if f.id != "d"]  # same scores and ranks
    assert apply_floor(fused, cosine, None) == fused


def test_the_floor_is_per_model():
    assert similarity_floor(Named(MODEL)) == 0.30
    assert similarity_floor(Named("text-embedding-3-small")) is None
    assert similarity_floor(None) is None


def test_notes_by_mode():
    cos = {"x": 0.21}
    # BM25 found something: no note, in any mode but DENSE
    assert evidence_notes("HYBRID", {"lexical": ["p"], "dense": ["x"]}, cos, 0.3, 0, MODEL) == []
    assert evidence_notes("LEXICAL", {"lexical": ["p"]}, {}, 0.3, 0, MODEL) == []
    # nothing lexical, nothing above the floor
    (note,) = evidence_notes("HYBRID", {"lexical": [], "dense": ["x"]}, cos, 0.3, 0, MODEL)
    assert note == (
        "no passage matched any query word, and no passage is similar enough to the task "
        f"(best cosine similarity 0.21, under the floor 0.30 for {MODEL}): no items"
    )
    # nothing lexical, dense items above the floor
    (note,) = evidence_notes("HYBRID", {"lexical": [], "dense": ["x"]}, {"x": 0.41}, 0.3, 1, MODEL)
    assert note.startswith("no passage matched any query word: every item comes from dense similarity alone")
    # a model without a floor still gets the note
    (note,) = evidence_notes("HYBRID", {"lexical": [], "dense": ["x"]}, cos, None, 1, "m")
    assert "no floor is known for m" in note
    assert evidence_notes("LEXICAL", {"lexical": []}, {}, None, 0, MODEL) == [
        "no passage matched any query word (BM25); try other words or HYBRID"
    ]
    # the dense leg skipped (task unreadable to the model) or unavailable
    assert evidence_notes("HYBRID", {"lexical": []}, {}, 0.3, 0, MODEL) == [
        "no passage matched any query word (BM25); try other words"
    ]
    # BM25 did not finish in time: the latency note speaks, not this one
    assert evidence_notes("HYBRID", {"dense": ["x"]}, cos, 0.3, 0, MODEL) == []
    # DENSE: a note only when nothing clears the floor
    assert evidence_notes("DENSE", {"dense": ["x"]}, {"x": 0.5}, 0.3, 1, MODEL) == []
    assert evidence_notes("DENSE", {"dense": ["x"]}, cos, 0.3, 0, MODEL)[0].endswith(": no items")
    assert evidence_notes("DENSE", {"dense": []}, {}, 0.3, 0, MODEL) == ["the dense leg found no passage: no items"]


E5 = "intfloat/multilingual-e5-small"


def test_dense_evidence_starts_at_each_models_unrelated_text_cosine():
    assert cosine_baseline(Named(E5)) == 0.75
    assert cosine_baseline(Named(E5), cross_lingual=True) == 0.70  # English × Japanese: lower
    assert cosine_baseline(Named(MODEL), cross_lingual=True) == 0.0
    assert cosine_baseline(Named(MODEL)) == 0.0 and cosine_baseline(Named("text-embedding-3-small")) == 0.0
    e5 = [("ja1", 0.91), ("ja2", 0.88), ("ja3", 0.80), ("ja4", 0.74)]
    scaled = dense_evidence(e5, Named(E5))
    # from 0.75, not from 0: without the baseline ja4 (an unrelated-level cosine) would keep 0.81
    assert scaled == [
        ("ja1", 1.0),
        ("ja2", pytest.approx(0.13 / 0.16)),
        ("ja3", pytest.approx(0.05 / 0.16)),
        ("ja4", 0.0),
    ]
    # MiniLM (baseline 0): its cosines divided by its top, as hybrid_fusion's own scale-to-top
    en = [("en1", 0.62), ("en2", 0.31), ("en3", -0.1)]
    assert dense_evidence(en, Named(MODEL)) == [("en1", 1.0), ("en2", 0.5), ("en3", 0.0)]
    # a merged list is on its lead model's scale (retrieval.dense.merge_spaces): one baseline for all
    assert dense_evidence([("en1", 0.62), ("ja1", 0.47)], Named(MODEL)) == [("en1", 1.0), ("ja1", 0.47 / 0.62)]


def test_the_dense_head_is_kept_across_scripts_and_in_dense_packs_with_evidence():
    ranked = [(f"p{i}", 0.84 - i * 0.001) for i in range(DENSE_HEAD + 5)]  # p0 0.84, p1 0.839, …
    head = {f"p{i}" for i in range(DENSE_HEAD)}
    assert dense_head_kept(ranked, 0.83, dense_only=False, cross_lingual=True) == head
    assert dense_head_kept(ranked, 0.84, dense_only=True, cross_lingual=False) == head
    # a DENSE pack whose best passage misses the floor keeps nothing ("zzzz qqqq": no items)
    assert dense_head_kept(ranked, 0.85, dense_only=True, cross_lingual=False) == set()
    # a head passage at the unrelated-text level carries no evidence: not kept
    assert dense_head_kept(ranked, 0.83, dense_only=False, cross_lingual=True, baseline=0.835) == {
        f"p{i}" for i in range(5)
    }
    # HYBRID in the task's own language: every dense-only passage must clear the floor
    assert dense_head_kept(ranked, 0.84, dense_only=False, cross_lingual=False) == set()
    fused = rrf({"dense": [pid for pid, _ in ranked]})
    kept = apply_floor(fused, dict(ranked), 0.84, head)
    assert [f.id for f in kept] == [f"p{i}" for i in range(DENSE_HEAD)]  # the rest: under the floor, past the head
