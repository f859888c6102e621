"""Lexical backends: Whoosh on tmp_path and sparse BM25 in Qdrant (qdrant-client local mode),
congruent on the same data: the same protocol, the same ids in the same order for the same
queries, filters, upserts, deletions and ties (their scores differ by design:
:mod:`retrieval.lexical.sparse`)."""

from __future__ import annotations

import pytest

from cairn.retrieval.lexical import LexicalIndex, SparseBM25Index, WhooshIndex, open_lexical_index
from tests.unit.retrieval.lexical_corpus import CORPUS, QUERIES, P


def ids(hits: list[tuple[str, float]]) -> list[str]:
    return [pid for pid, _ in hits]


def open_backend(name: str, tmp_path) -> LexicalIndex:
    if name == "whoosh":
        return open_lexical_index(backend="whoosh", path=tmp_path / "whoosh")
    return open_lexical_index(backend="qdrant", path=tmp_path / "qdrant", collection="passages")


@pytest.fixture(params=["whoosh", "sparse"])
def backend(request, tmp_path):
    index = open_backend(request.param, tmp_path)
    index.add(CORPUS)
    yield index
    index.close()


@pytest.fixture
def both(tmp_path):
    whoosh, sparse = open_backend("whoosh", tmp_path), open_backend("sparse", tmp_path)
    whoosh.add(CORPUS)
    sparse.add(CORPUS)
    yield whoosh, sparse
    whoosh.close()
    sparse.close()


def test_the_factory_builds_each_backend_and_both_implement_the_protocol(both):
    whoosh, sparse = both
    assert type(whoosh) is WhooshIndex and type(sparse) is SparseBM25Index
    assert isinstance(whoosh, LexicalIndex) and isinstance(sparse, LexicalIndex)
    assert whoosh.migrated is None and sparse.migrated is None


@pytest.mark.parametrize("query", QUERIES)
def test_both_backends_rank_the_same_ids_in_the_same_order(both, query):
    whoosh, sparse = both
    expected = ids(whoosh.search(query, workspace_id="w1"))
    assert len(expected) >= 2  # a ranking, not a lone hit
    assert ids(sparse.search(query, workspace_id="w1")) == expected
    assert ids(sparse.search(query, workspace_id="w1", limit=2)) == expected[:2]


def test_filters_and_workspaces(backend):
    assert ids(backend.search("dogs running", workspace_id="w2")) == ["other-ws"]
    assert "other-ws" not in ids(backend.search("dogs running", workspace_id="w1"))
    assert set(ids(backend.search("日本", workspace_id="w1", collection_ids=["c-ja"]))) == {"ja-kyoto", "ja-tokyo"}
    assert ids(backend.search("日本 数据库", workspace_id="w1", collection_ids=["c-zh"])) == ["zh-db"]
    assert ids(backend.search("dogs", workspace_id="w1", document_ids=["d-en3", "nope"])) == ["en-mix"]
    assert backend.search("dogs", workspace_id="w1", collection_ids=[]) == []
    assert backend.search("dogs", workspace_id="w1", document_ids=[]) == []
    assert backend.search("dogs", workspace_id="nobody") == []


@pytest.mark.parametrize("query", ["", "   ", "the of and", "、。！"])
def test_queries_without_terms_return_nothing(backend, query):
    assert backend.search(query, workspace_id="w1") == []


def test_query_text_is_not_query_syntax(backend):
    assert ids(backend.search('passage_id:x AND "sleep* (', workspace_id="w1")) == ["en-cats"]


def test_upsert_replaces_and_the_last_duplicate_in_a_batch_wins(backend):
    backend.add([P("en-cats", "Bananas are yellow.", doc="d-en"), P("en-cats", "Kiwis are green.", doc="d-en")])
    assert backend.count() == len(CORPUS)
    assert "en-cats" not in ids(backend.search("cats sleep", workspace_id="w1"))
    assert backend.search("banana", workspace_id="w1") == []
    assert ids(backend.search("kiwi", workspace_id="w1")) == ["en-cats"]


def test_delete_has_count_clear(backend):
    assert backend.has(["en-dogs", "zh-db", "missing"]) == {"en-dogs", "zh-db"}
    backend.delete(["en-dogs", "missing"])
    assert backend.count() == len(CORPUS) - 1 and backend.has(["en-dogs"]) == set()
    assert "en-dogs" not in ids(backend.search("dogs running", workspace_id="w1"))
    backend.clear()
    assert backend.count() == 0 and backend.search("cats", workspace_id="w1") == []
    backend.add([P("again", "Cats again.")])
    assert ids(backend.search("cats", workspace_id="w1")) == ["again"]


def test_equal_scores_order_by_passage_id_across_the_limit_cut(tmp_path):
    names = [f"p{n:02d}" for n in (37, 5, 12, 29, 1, 33, 8, 20, 14, 3, 25, 18, 31, 9, 22, 16, 27, 2, 35, 11, 6)]
    for name in ("whoosh", "sparse"):
        index = open_backend(name, tmp_path)
        index.add([P(pid, "identical words here") for pid in names])
        hits = index.search("identical", workspace_id="w1", limit=5)
        assert ids(hits) == ["p01", "p02", "p03", "p05", "p06"], name
        assert len({score for _, score in hits}) == 1, name
        assert ids(index.search("identical", workspace_id="w1", limit=100)) == sorted(names), name
        index.close()


@pytest.mark.parametrize(
    "kwargs",
    [{"workspace_id": ""}, {"workspace_id": "w1", "limit": 0}, {"workspace_id": "w1", "collection_ids": "c1"}],
)
def test_invalid_search_arguments(backend, kwargs):
    with pytest.raises(ValueError):
        backend.search("cats", **kwargs)


def test_invalid_passages(backend):
    with pytest.raises(ValueError, match="passage_id"):
        backend.add([P("", "text")])
    with pytest.raises(ValueError, match="workspace_id"):
        backend.add([P("x", "text", ws="")])
    with pytest.raises(ValueError):
        backend.delete("en-dogs")  # a str, not a list of ids


@pytest.mark.parametrize(
    "kwargs",
    [
        {"backend": "lucene", "path": "x"},
        {"backend": "whoosh"},
        {"backend": "whoosh", "path": "x", "url": "http://127.0.0.1:6333"},
        {"backend": "qdrant"},
        {"backend": "qdrant", "path": "x", "url": "http://127.0.0.1:6333"},
    ],
)
def test_open_lexical_index_rejects_bad_configuration(tmp_path, kwargs):
    if "path" in kwargs:
        kwargs = {**kwargs, "path": tmp_path / kwargs["path"]}
    with pytest.raises(ValueError):
        open_lexical_index(**kwargs)
