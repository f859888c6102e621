"""Mixed-language analyzer: English words stemmed, CJK (and Thai, Lao, Khmer, Myanmar) as
overlapping bigrams, combining marks kept inside their words."""

from __future__ import annotations

import pickle

import pytest

from cairn.retrieval.analysis import analyze, analyze_runs, cairn_analyzer, is_bigram_script


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


def test_is_bigram_script():
    assert is_bigram_script("東") and is_bigram_script("か") and is_bigram_script("カ") and is_bigram_script("한")
    assert is_bigram_script("ไทย") and is_bigram_script("ລາວ") and is_bigram_script("ខ្មែរ") and is_bigram_script("မြန်")
    assert not is_bigram_script("a") and not is_bigram_script("") and not is_bigram_script("・")
    assert not is_bigram_script("हिन्दी") and not is_bigram_script("Москва")


@pytest.mark.parametrize(
    ("text", "terms"),
    [
        # vowel signs and viramas are combining marks: they stay inside the word (version 1 cut
        # हिन्दी into ह, न, द); words of non-Latin spaced scripts are then cut to 5 code points
        ("हिन्दी भाषा", ["हिन्द", "भाषा"]),
        ("বাংলা ভাষা", ["বাংলা", "ভাষা"]),
        ("தமிழ் மொழி", ["தமிழ்", "மொழி"]),
        ("ქართული ენა", ["ქართუ", "ენა"]),
        ("Москва — столица России", ["москв", "столи", "росси"]),
        ("Αθήνα, πρωτεύουσα", ["αθήνα", "πρωτε"]),
        ("اللغة العربية", ["اللغة", "العرب"]),
        ("שָׁלוֹם עולם", ["שָׁלו", "עולם"]),  # Hebrew points are marks too (and count as characters)
        ("naïve café", ["naïv", "café"]),  # Latin: Porter2 as before
        ("COVID-19 in 2024", ["covid", "19", "2024"]),  # digits: Porter2's no-op, not truncated
        ("می\u200cخواهم", ["می\u200cخو"]),  # a zero-width non-joiner stays inside a Persian word
        ("👨\u200d👩 family \u0301x", ["famili", "x"]),  # a joiner or a mark alone is no word
    ],
)
def test_words_keep_their_combining_marks(text, terms):
    assert analyze(text) == terms


def test_the_turkish_capital_dotted_i_lowercases_to_i():
    # Python's "İ".lower() is "i" + U+0307: "İtalya" would never meet "italya"
    assert analyze("İtalya İSTANBUL") == analyze("italya istanbul") == ["italya", "istanbul"]


def test_inflected_forms_of_other_scripts_meet_by_truncation():
    # Russian cases and Hindi/Tamil inflections share their first five characters
    assert analyze("столицы") == analyze("столицей") == analyze("столица")
    assert set(analyze("किलोमीटर")) == set(analyze("किलोमीटरों"))
    assert analyze("சித்தாரை") == analyze("சித்தார்")


def test_unspaced_scripts_become_bigrams_like_cjk():
    # Thai has no spaces between words: a run is bigrammed by grapheme cluster (a letter with
    # its vowel and tone marks is one unit: no bigram of marks alone)
    assert _terms_and_positions("กินข้าว") == [("กิน", 0), ("นข้", 1), ("ข้า", 2), ("าว", 3)]
    offsets = [(t.startchar, t.endchar) for t in cairn_analyzer()("กินข้าว", chars=True)]
    assert offsets == [(0, 3), (2, 5), (3, 6), (5, 7)]
    # tone marks keep words apart: rice (ข้าว) and news (ข่าว) share only the bigram าว
    assert set(analyze("ข้าว")) & set(analyze("ข่าว")) == {"าว"}
    assert analyze_runs("ภาษาไทย test") == [["ภา", "าษ", "ษา", "าไ", "ไท", "ทย"], ["test"]]
    # each script group is its own run: no bigram spans katakana and Thai
    assert analyze("トจุล") == ["ト", "จุล"]
    # a query's words meet the document's bigrams: the shared bigrams are the shared text
    assert set(analyze("ข้าว")) <= set(analyze("วันนี้กินข้าวแล้ว"))


def test_analyzer_pickles_for_the_whoosh_schema():
    clone = pickle.loads(pickle.dumps(cairn_analyzer()))
    assert [t.text for t in clone("jumping 東京都")] == ["jump", "東京", "京都"]
