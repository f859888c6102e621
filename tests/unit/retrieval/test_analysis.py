"""Mixed-language analyzer: English words stemmed, CJK as overlapping bigrams."""

from __future__ import annotations

import pickle

from cairn.retrieval.analysis import analyze, analyze_runs, cairn_analyzer, is_cjk


def _terms_and_positions(text: str) -> list[tuple[str, int]]:
    return [(t.text, t.pos) for t in cairn_analyzer()(text, positions=True)]


def test_english_lowercased_stopped_and_stemmed():
    assert analyze("The Running DOGS are jumping over fences") == ["run", "dog", "jump", "over", "fenc"]


def test_cjk_runs_become_overlapping_bigrams_at_consecutive_positions():
    assert _terms_and_positions("ベクトル検索") == [("ベク", 0), ("クト", 1), ("トル", 2), ("ル検", 3), ("検索", 4)]
    assert _terms_and_positions("数据库") == [("数据", 0), ("据库", 1)]
    assert _terms_and_positions("한국어") == [("한국", 0), ("국어", 1)]


def test_single_cjk_character_is_a_unigram_and_punctuation_splits_runs():
    assert analyze("京") == ["京"]
    assert analyze("東京、京都。") == ["東京", "京都"]
    assert analyze("東京・大阪") == ["東京", "大阪"]  # the katakana middle dot separates


def test_mixed_text_positions_and_nfkc():
    assert _terms_and_positions("Python3のバージョンは３．１１ ＡＢＣ") == [
        ("python3", 0),
        ("のバ", 1),
        ("バー", 2),
        ("ージ", 3),
        ("ジョ", 4),
        ("ョン", 5),
        ("ンは", 6),
        ("3.11", 7),
        ("abc", 8),
    ]


def test_analyze_runs_groups_terms_by_source_run():
    assert analyze_runs("東京都の人口 running the fast") == [
        ["東京", "京都", "都の", "の人", "人口"],
        ["run"],
        ["fast"],
    ]
    assert analyze_runs("the of and") == []


def test_is_cjk():
    assert is_cjk("東") and is_cjk("か") and is_cjk("カ") and is_cjk("한")
    assert not is_cjk("a") and not is_cjk("") and not is_cjk("・")


def test_analyzer_pickles_for_the_whoosh_schema():
    clone = pickle.loads(pickle.dumps(cairn_analyzer()))
    assert [t.text for t in clone("jumping 東京都")] == ["jump", "東京", "京都"]
