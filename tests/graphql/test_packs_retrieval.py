"""Context-pack retrieval legs end to end (real model): LEXICAL, DENSE and HYBRID modes and their
scores, Japanese and Chinese tasks (BM25 and the multilingual model), and the notes a pack
carries when nothing matches or an item is found by meaning only."""

from __future__ import annotations

import re

import pytest

from tests.graphql.pack_calls import pack


def test_lexical_mode_skips_the_embedding(live):
    p = pack(live, "Mount Etna stratovolcano", retrieval="LEXICAL")
    assert p["retrieval"] == "LEXICAL"
    assert p["items"][0]["citation"]["documentId"] == live.ids["doc:volcano"]
    assert all(i["ranks"]["dense"] is None for i in p["items"])
    assert p["timings"]["embedMs"] is None and p["timings"]["vectorMs"] is None
    _single_leg_scores(p)


def test_dense_mode_skips_bm25(live):
    # "volcano in Italy" shares no word with the Etna passage's stems except through meaning
    p = pack(live, "an active volcano in Italy", retrieval="DENSE")
    assert p["retrieval"] == "DENSE"
    assert p["items"][0]["citation"]["documentId"] == live.ids["doc:volcano"]
    assert all(i["ranks"]["lexical"] is None for i in p["items"])
    dense_ranks = [i["ranks"]["dense"] for i in p["items"]]
    assert dense_ranks[0] == 1 and dense_ranks == sorted(dense_ranks) and None not in dense_ranks
    assert p["timings"]["lexicalMs"] is None and p["timings"]["embedMs"] is not None
    _single_leg_scores(p)


def _single_leg_scores(p: dict) -> None:
    """One leg (retrieval.fusion.hybrid_fusion): the top item's normalised score is 1, so its
    score is the leg's weight, base 0.5 times (1 + β · confidence), confidence in [0, 1]."""
    from cairn.retrieval.fusion import HYBRID_CONFIDENCE_BOOST as beta

    scores = [i["score"] for i in p["items"]]
    assert 0.5 <= scores[0] <= 0.5 * (1 + beta) and scores == sorted(scores, reverse=True)


@pytest.mark.parametrize(
    "task,doc",
    [("ベクトル検索", "ja-search"), ("東京のチーム", "ja-search"), ("数据库索引", "zh-db"), ("全文检索", "zh-db")],
)
def test_japanese_and_chinese_are_searchable_lexically(live, task, doc):
    p = pack(live, task, retrieval="LEXICAL")
    assert p["items"] and p["items"][0]["citation"]["documentId"] == live.ids[f"doc:{doc}"]


def test_a_japanese_task_is_served_by_the_multilingual_model_and_the_pack_says_so(live):
    p = pack(live, "ベクトル検索は何を探す方法ですか")
    assert not any(n.startswith("dense leg skipped") for n in p["notes"]), p["notes"]
    assert [n for n in p["notes"] if n.startswith("dense leg: intfloat/multilingual-e5-small (the task is written")]
    assert p["items"][0]["citation"]["documentId"] == live.ids["doc:ja-search"]
    assert p["items"][0]["ranks"]["dense"] == 1
    # an English task: MiniLM for the English passages, e5 for the workspace's CJK passages
    english = pack(live, "Mount Etna volcano")
    assert [n for n in english["notes"] if "(cross-lingual)" in n], english["notes"]
    assert english["items"][0]["citation"]["documentId"] == live.ids["doc:volcano"]
    assert any(i["ranks"]["dense"] for i in english["items"])


@pytest.mark.parametrize(
    "mode,note",
    [
        ("HYBRID", "no passage matched any query word, and no passage is similar enough to the task"),
        ("LEXICAL", "no passage matched any query word (BM25)"),
        ("DENSE", "no passage is similar enough to the task"),
    ],
)
def test_a_nonsense_task_gets_no_items_and_a_note(live, mode, note):
    p = pack(live, "zzzz qqqq", retrieval=mode)
    assert p["items"] == [] and p["tokensUsed"] == 0
    assert [n for n in p["notes"] if n.startswith(note)], p["notes"]
    if mode != "LEXICAL":  # the note names each model's best similarity and what it missed
        # (this workspace has Japanese passages too: an English task's e5 matches are across
        # languages and join MiniLM's list only where they stand out of their own list enough)
        found = re.findall(r"(\d\.\d\d) for (\S+) against its floor (\d\.\d\d)", p["notes"][0])
        assert [(model, floor) for _, model, floor in found] == [("sentence-transformers/all-MiniLM-L6-v2", "0.30")]
        assert all(float(best) < float(floor) for best, _, floor in found)
        assert "for intfloat/multilingual-e5-small (another language: joins at 6 standard deviations" in p["notes"][0]


def test_a_task_found_by_meaning_only_is_flagged_and_a_real_task_is_not(live, monkeypatch):
    # no query word occurs in the corpus (Porter: sicilian ≠ sicili, eruption ≠ erupt…), so the
    # Etna passage comes from the dense leg alone, above the floor
    p = pack(live, "Sicilian eruptions")
    assert p["items"] and p["items"][0]["citation"]["documentId"] == live.ids["doc:volcano"]
    assert all(i["ranks"]["lexical"] is None for i in p["items"])
    assert [n for n in p["notes"] if n.startswith("no passage matched any query word: every item comes from dense")]
    # a real task: no note, and every item with lexical evidence is kept, in order, with its score
    from cairn.app.packs import evidence as pack_evidence

    task = "billing service region latency"
    floored = pack(live, task, budget={"maxTokens": 2000})
    monkeypatch.setitem(pack_evidence.DENSE_SIMILARITY_FLOOR, "sentence-transformers/all-MiniLM-L6-v2", -1.0)
    unfloored = pack(live, task, budget={"maxTokens": 2000})
    assert [n for n in floored["notes"] if not n.startswith("dense leg: ")] == []
    assert floored["items"][0] == unfloored["items"][0]
    lexical = [(i["text"], i["score"]) for i in unfloored["items"] if i["ranks"]["lexical"] is not None]
    assert [(i["text"], i["score"]) for i in floored["items"] if i["ranks"]["lexical"] is not None] == lexical
    assert len(floored["items"]) < len(unfloored["items"])  # unrelated dense-only passages dropped
