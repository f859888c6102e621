"""BM25 over Whoosh on tmp_path: OR queries, CJK bigrams, filters, upserts, ties."""

from __future__ import annotations

import threading

import pytest

from cairn.retrieval.lexical import IDF, BM25Params, WhooshIndex
from cairn.retrieval.lexical.schema import IndexedPassage


def P(pid: str, text: str, *, ws: str = "w1", coll: str = "c1", doc: str = "d1", title: str = "") -> IndexedPassage:
    return IndexedPassage(pid, ws, coll, doc, title, text)


CORPUS = [
    P("en-dogs", "The dogs were running in the park every morning.", doc="d-en"),
    P("en-cats", "Cats sleep most of the day and hunt at night.", doc="d-en"),
    P("ja-vec", "ベクトル検索は埋め込みを使って似た文書を探す技術です。", coll="c-ja", doc="d-ja"),
    P("ja-tokyo", "東京都は日本の首都で、人口が最も多い都市です。", coll="c-ja", doc="d-ja2"),
    P("zh-db", "数据库是按照数据结构来组织和存储数据的仓库。", coll="c-zh", doc="d-zh"),
]


@pytest.fixture
def index(tmp_path):
    ix = WhooshIndex(tmp_path / "lex")
    ix.add(CORPUS)
    yield ix
    ix.close()


def ids(hits: list[tuple[str, float]]) -> list[str]:
    return [pid for pid, _ in hits]


def test_english_query_is_stemmed_and_disjunctive(index):
    assert ids(index.search("run dog", workspace_id="w1")) == ["en-dogs"]
    # OR, not AND: "zebra" matches nothing but does not veto the "cats" match.
    assert ids(index.search("zebra cats", workspace_id="w1")) == ["en-cats"]


@pytest.mark.parametrize(
    "query,expected",
    [
        ("ベクトル検索", ["ja-vec"]),
        ("数据库", ["zh-db"]),
        ("東京", ["ja-tokyo"]),
        ("日本の首都はどこですか", ["ja-tokyo"]),
    ],
)
def test_cjk_queries_find_only_their_passage(index, query, expected):
    hits = index.search(query, workspace_id="w1")
    assert ids(hits)[:1] == expected
    if query != "日本の首都はどこですか":  # a question shares "です" with other passages
        assert ids(hits) == expected


def test_query_text_is_not_query_syntax(index):
    assert ids(index.search('passage_id:en-cats AND "night* (', workspace_id="w1")) == ["en-cats"]


@pytest.mark.parametrize("query", ["", "   ", "the of and", "、。！"])
def test_queries_without_terms_return_nothing(index, query):
    assert index.search(query, workspace_id="w1") == []


def test_workspace_collection_and_document_filters(index):
    index.add([P("other-ws", "Cats sleep all day.", ws="w2")])
    assert ids(index.search("cats sleep", workspace_id="w2")) == ["other-ws"]
    assert ids(index.search("cats sleep", workspace_id="w1")) == ["en-cats"]
    assert ids(index.search("東京 数据库", workspace_id="w1", collection_ids=["c-zh"])) == ["zh-db"]
    assert ids(index.search("東京 数据库", workspace_id="w1", document_ids=["d-ja2", "nope"])) == ["ja-tokyo"]
    assert index.search("東京", workspace_id="w1", collection_ids=[]) == []
    assert index.search("東京", workspace_id="w1", document_ids=[]) == []
    assert index.search("東京", workspace_id="nobody") == []


def test_title_is_searched(index):
    index.add([P("titled", "Nothing relevant in the body.", title="Photosynthesis basics")])
    assert ids(index.search("photosynthesis", workspace_id="w1")) == ["titled"]


def test_upsert_replaces_and_last_duplicate_in_a_batch_wins(index):
    index.add([P("en-cats", "Bananas are yellow."), P("en-cats", "Kiwis are green.")])
    assert index.count() == 5
    assert index.search("cats", workspace_id="w1") == []
    assert index.search("banana", workspace_id="w1") == []
    assert ids(index.search("kiwi", workspace_id="w1")) == ["en-cats"]


def test_delete_has_count_clear(index):
    assert index.has(["en-dogs", "zh-db", "missing"]) == {"en-dogs", "zh-db"}
    index.delete(["en-dogs", "missing"])
    assert index.count() == 4
    assert index.has(["en-dogs"]) == set()
    assert index.search("dogs", workspace_id="w1") == []
    index.clear()
    assert index.count() == 0
    assert index.search("cats", workspace_id="w1") == []
    index.add([P("again", "Cats again.")])
    assert ids(index.search("cats", workspace_id="w1")) == ["again"]


def test_persistence_across_reopen(tmp_path):
    path = tmp_path / "lex"
    first = WhooshIndex(path)
    first.add(CORPUS)
    first.close()
    second = WhooshIndex(path)
    assert second.count() == len(CORPUS)
    assert ids(second.search("数据库", workspace_id="w1")) == ["zh-db"]
    second.close()
    with pytest.raises(ValueError):
        second.search("x", workspace_id="w1")


def test_equal_scores_order_by_passage_id_even_across_the_limit_cut(tmp_path):
    ix = WhooshIndex(tmp_path / "ties")
    names = [
        f"p{n:02d}"
        for n in (37, 5, 12, 29, 1, 33, 8, 20, 14, 3, 25, 18, 31, 9, 22, 16, 27, 2, 35, 11, 6, 30, 24, 19, 4)
    ]
    ix.add([P(name, "identical words here") for name in names])
    hits = ix.search("identical", workspace_id="w1", limit=5)
    assert ids(hits) == ["p01", "p02", "p03", "p04", "p05"]
    assert len({score for _, score in hits}) == 1
    assert ids(ix.search("identical", workspace_id="w1", limit=100)) == sorted(names)
    ix.close()


def test_scores_are_descending_and_more_matching_terms_rank_higher(index):
    index.add([P("both", "Cats and dogs sleep together."), P("one", "Dogs bark loudly at strangers.")])
    hits = index.search("dogs cats sleep", workspace_id="w1")
    assert ids(hits)[0] == "both"
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)


def test_concurrent_adds_and_searches(tmp_path):
    ix = WhooshIndex(tmp_path / "conc")
    ix.add(CORPUS)
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            for i in range(5):
                ix.add([P(f"t{n}-{i}", f"thread {n} item {i} cats")])
        except BaseException as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    def reader() -> None:
        try:
            for _ in range(30):
                assert "en-cats" in ids(ix.search("cats", workspace_id="w1", limit=100))
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(2)] + [
        threading.Thread(target=reader) for _ in range(2)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert ix.count() == len(CORPUS) + 10
    ix.close()


@pytest.mark.parametrize(
    "kwargs",
    [{"workspace_id": ""}, {"workspace_id": "w1", "limit": 0}, {"workspace_id": "w1", "collection_ids": "c1"}],
)
def test_invalid_search_arguments(index, kwargs):
    with pytest.raises(ValueError):
        index.search("cats", **kwargs)


def test_invalid_passages_and_options(tmp_path, index):
    with pytest.raises(ValueError):
        index.add([P("", "text")])
    with pytest.raises(ValueError):
        WhooshIndex(tmp_path / "x", cjk_mode="words")


def test_phrase_mode_requires_the_exact_cjk_string(tmp_path):
    ix = WhooshIndex(tmp_path / "phrase", cjk_mode="phrase")
    ix.add([P("kyoto", "京都は古い都です。"), P("tokyo", "東京都は大きい。")])
    assert ids(ix.search("東京都", workspace_id="w1")) == ["tokyo"]
    ix.cjk_mode = "or"
    assert ids(ix.search("東京都", workspace_id="w1")) == ["tokyo", "kyoto"]
    ix.close()


def test_title_field_scoring_without_title_in_body(tmp_path):
    ix = WhooshIndex(tmp_path / "t", title_in_body=False, title_boost=2.0)
    ix.add(
        [
            P("titled", "Nothing relevant in the body.", title="Photosynthesis"),
            P("plain", "Photosynthesis in the body."),
        ]
    )
    hits = ix.search("photosynthesis", workspace_id="w1")
    assert sorted(ids(hits)) == ["plain", "titled"]
    body_only = WhooshIndex(tmp_path / "b", title_in_body=False)
    body_only.add([P("titled", "Nothing relevant.", title="Photosynthesis")])
    assert body_only.search("photosynthesis", workspace_id="w1") == []
    ix.close()
    body_only.close()


@pytest.mark.parametrize(
    "kwargs",
    [
        {"bm25": BM25Params(k1=1.5, b=0.75, idf=IDF.LUCENE)},  # Whoosh's own search scores with its IDF
        {"title_boost": -1},
        {"procs": 0},
        {"prune_df_ratio": 0},
    ],
)
def test_invalid_options(tmp_path, kwargs):
    with pytest.raises(ValueError):
        WhooshIndex(tmp_path / "x", **kwargs)


def test_cached_filters_follow_every_commit(index):
    assert ids(index.search("cats sleep", workspace_id="w3")) == []
    index.add([P("w3-cats", "Cats sleep all day.", ws="w3")])
    assert ids(index.search("cats sleep", workspace_id="w3")) == ["w3-cats"]
    index.delete(["w3-cats"])
    assert ids(index.search("cats sleep", workspace_id="w3")) == []
