"""Query construction: distinct OR terms, CJK modes, title clauses, max_df pruning."""

from __future__ import annotations

import pytest
from whoosh import query as wq

from cairn.retrieval.lexical import IndexedPassage, WhooshIndex
from cairn.retrieval.lexical.query import bm25_query, filter_query


def test_terms_are_distinct_body_terms_in_first_occurrence_order():
    q = bm25_query("Dogs run; the dog RUNS 東京都")
    assert q == wq.Or([wq.Term("body", t) for t in ["dog", "run", "東京", "京都"]])


def test_cjk_modes_and_title_clauses():
    phrase = bm25_query("東京都 cats", cjk_mode="phrase")
    assert phrase == wq.Or([wq.Term("body", "cat"), wq.Phrase("body", ["東京", "京都"])])
    both = bm25_query("東京都", cjk_mode="or+phrase", title_boost=2.0)
    assert both == wq.Or(
        [
            wq.Term("body", "東京"),
            wq.Term("title", "東京", boost=2.0),
            wq.Term("body", "京都"),
            wq.Term("title", "京都", boost=2.0),
            wq.Phrase("body", ["東京", "京都"]),
            wq.Phrase("title", ["東京", "京都"], boost=2.0),
        ]
    )
    assert bm25_query("the of", cjk_mode="phrase") is None
    with pytest.raises(ValueError):
        bm25_query("x", cjk_mode="bigram")


def test_filter_query_sorts_and_deduplicates_ids():
    assert filter_query("w", ["c2", "c1", "c2"], None) == wq.And(
        [wq.Term("workspace_id", "w"), wq.Or([wq.Term("collection_id", "c1"), wq.Term("collection_id", "c2")])]
    )
    assert filter_query("w") == wq.And([wq.Term("workspace_id", "w")])


def test_max_df_pruning_drops_common_terms_but_never_all(tmp_path):
    ix = WhooshIndex(tmp_path / "ix", prune_df_ratio=0.5, prune_min_docs=1)
    ix.add([IndexedPassage(f"p{i}", "w", "c", "d", "", f"common words everywhere item{i}") for i in range(4)])
    searcher = ix._searcher
    assert ix.build_query("common item2", searcher) == wq.Or([wq.Term("body", "item2")])
    assert ix.build_query("common everywhere", searcher) == wq.Or(
        [wq.Term("body", "common"), wq.Term("body", "everywher")]
    )
    assert [pid for pid, _ in ix.search("common item2", workspace_id="w")] == ["p2"]
    ix.close()
