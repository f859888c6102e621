"""The small mixed-language corpus both lexical backends are tested on
(tests/unit/retrieval/test_sparse_bm25.py, test_lexical_backends.py)."""

from __future__ import annotations

from cairn.retrieval.lexical import IndexedPassage


def P(pid: str, text: str, *, ws: str = "w1", coll: str = "c1", doc: str = "d1", title: str = "") -> IndexedPassage:
    return IndexedPassage(pid, ws, coll, doc, title, text)


CORPUS = [
    P("en-dogs", "The dogs were running in the park every morning.", doc="d-en"),
    P("en-dogs2", "Dogs and more dogs: a dog park guide for running dogs.", doc="d-en2", title="Dog parks"),
    P("en-cats", "Cats sleep most of the day and hunt at night.", doc="d-en"),
    P("en-mix", "Cats and dogs share the park at night in the morning fog.", doc="d-en3"),
    P("ja-vec", "ベクトル検索は埋め込みを使って似た文書を探す技術です。", coll="c-ja", doc="d-ja"),
    P("ja-tokyo", "東京都は日本の首都で、人口が最も多い都市です。", coll="c-ja", doc="d-ja2"),
    P("ja-kyoto", "京都は日本の古い都で、多くの寺があります。東京から新幹線で行けます。", coll="c-ja", doc="d-ja3"),
    P("zh-db", "数据库是按照数据结构来组织和存储数据的仓库。", coll="c-zh", doc="d-zh"),
    P("other-ws", "Dogs running in the park, in another workspace.", ws="w2", doc="d-w2"),
]
QUERIES = [
    "dogs running in the park",
    "cats at night",
    "morning fog park",
    "東京",
    "日本の首都はどこですか",
    "京都の寺",
]
"""Queries on which the two backends are meant to agree on :data:`CORPUS`: every one matches
several passages, with different term frequencies, lengths and document frequencies."""
