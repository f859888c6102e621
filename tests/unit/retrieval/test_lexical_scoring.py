"""Term-at-a-time BM25 equals Whoosh's own BM25F search: segments, deletions, filters, ties."""

from __future__ import annotations

import random

import pytest
from whoosh import query as wq

from cairn.retrieval.lexical import IndexedPassage, WhooshIndex
from cairn.retrieval.lexical.query import filter_query
from cairn.retrieval.lexical.scoring import disjunction_terms

WORDS = [
    "cell",
    "protein",
    "gene",
    "expression",
    "tumour",
    "patient",
    "dose",
    "vaccine",
    "immune",
    "response",
    "virus",
    "infection",
    "blood",
    "pressure",
    "heart",
    "muscle",
    "brain",
    "neuron",
    "memory",
    "sleep",
    "diet",
    "sugar",
]
KANA = "東京大阪検索文書意味細胞遺伝子患者免疫"


def whoosh_reference(ix: WhooshIndex, text: str, workspace_id: str, collection_ids=None, limit: int = 20):
    """Whoosh's own search (document-at-a-time matchers), ordered like WhooshIndex.search."""
    s = ix._searcher
    q = ix.build_query(text, s)
    comb = s._filter_to_comb(filter_query(workspace_id, collection_ids))
    if q is None or not comb:
        return []
    r = s.search(q, limit=None, filter=comb)
    scored = sorted(
        ((s.stored_fields(d)["passage_id"], round(float(x), 9)) for d, x in r.items()), key=lambda i: (-i[1], i[0])
    )
    return scored[:limit]


def _many_segments(folder) -> WhooshIndex:
    """An index of 160 random passages in four commits (several segments), with deletions in
    every segment and one update."""
    rng = random.Random(3)
    ix = WhooshIndex(folder)
    n = 0
    for batch in range(4):  # four commits → several segments
        rows = []
        for _ in range(40):
            words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 25)))
            cjk = "".join(rng.choice(KANA) for _ in range(rng.randint(0, 8)))
            rows.append(IndexedPassage(f"p{n:04d}", f"w{n % 2}", f"c{n % 3}", f"d{n}", "", f"{words} {cjk}"))
            n += 1
        ix.add(rows)
    ix.delete([f"p{i:04d}" for i in range(0, 160, 7)])  # deletions in every segment
    ix.add([IndexedPassage("p0003", "w1", "c0", "d3", "", "cell cell cell replaced text")])  # an update
    return ix


@pytest.fixture
def many_segments(tmp_path):
    """A fresh index for a test that writes to it or swaps its caches."""
    ix = _many_segments(tmp_path / "lex")
    yield ix
    ix.close()


@pytest.fixture(scope="module")
def searched_segments(tmp_path_factory):
    """One index for the read-only tests (the comparisons with Whoosh and the segment count):
    built once instead of 22 times; the posting cache the searches fill carries across queries,
    so each comparison also checks what earlier queries left in it."""
    ix = _many_segments(tmp_path_factory.mktemp("lex"))
    yield ix
    ix.close()


def test_segments_are_several(searched_segments):
    assert len(searched_segments._searcher.ixreader.leaf_readers()) > 1


@pytest.mark.parametrize(
    "text",
    [
        "cell protein",
        "immune response to the vaccine",
        "brain neuron memory sleep diet",
        "東京 検索 cell",
        "遺伝子 患者 gene",
        "virus",
        "sugar sugar sugar",
    ],
)
@pytest.mark.parametrize("ws,colls", [("w0", None), ("w1", None), ("w1", ["c0", "c2"])])
def test_term_at_a_time_equals_whoosh(searched_segments, text, ws, colls):
    got = searched_segments.search(text, workspace_id=ws, collection_ids=colls, limit=20)
    want = whoosh_reference(searched_segments, text, ws, colls)
    assert got == want
    assert got, "the query should match something"
    assert not any(pid in {f"p{i:04d}" for i in range(0, 160, 7)} - {"p0003"} for pid, _ in got)


def test_only_plain_disjunctions_are_scored_here():
    assert disjunction_terms(wq.Or([wq.Term("body", "a"), wq.Term("body", "b")])) == ("body", ["a", "b"])
    assert disjunction_terms(wq.Term("body", "a")) == ("body", ["a"])
    assert disjunction_terms(wq.Or([wq.Term("body", "a"), wq.Term("title", "a", boost=0.5)])) is None
    assert disjunction_terms(wq.Or([wq.Term("body", "a"), wq.Phrase("body", ["a", "b"])])) is None


def test_cached_postings_and_passage_ids_stay_equal_to_whoosh_across_writes(many_segments):
    """The decoded posting lists and stored passage ids kept between searches never serve a
    segment or a document number of an earlier commit: after a write (new segment, deletion,
    a merge that renumbers documents) every search still equals Whoosh's own."""
    ix, text = many_segments, "cell protein immune response"
    first = ix.search(text, workspace_id="w1", limit=30)
    assert first == whoosh_reference(ix, text, "w1", limit=30)
    assert ix._segment_arrays._postings and ix._passage_ids  # both were filled
    ix.add([IndexedPassage("p9000", "w1", "c0", "d9000", "", "cell cell protein protein immune response")])
    ix.delete(["p0001", "p0005"])
    ix._index.optimize()  # one segment without the deleted documents: document numbers shift
    ix._refresh()
    assert len(ix._searcher.ixreader.leaf_readers()) == 1
    again = ix.search(text, workspace_id="w1", limit=30)
    assert again == whoosh_reference(ix, text, "w1", limit=30)
    assert again[0][0] == "p9000" and "p0001" not in dict(again) and "p0005" not in dict(again)
    live = {leaf.segment().segment_id() for leaf, _ in ix._searcher.ixreader.leaf_readers()}
    assert {key[0] for key in ix._segment_arrays._postings} <= live  # merged-away segments dropped


def test_the_posting_cache_keeps_at_most_its_bound(many_segments):
    from cairn.retrieval.lexical.scoring import SegmentArrays

    arrays = SegmentArrays(max_postings=25)
    many_segments._segment_arrays = arrays
    for text in ("cell protein", "immune response", "brain neuron memory", "virus infection blood"):
        got = many_segments.search(text, workspace_id="w0", limit=20)
        assert got == whoosh_reference(many_segments, text, "w0")
        assert arrays._held == sum(len(ids) + 1 for ids, _ in arrays._postings.values()) <= 25
    # terms a segment lacks are not kept (they counted nothing and would never leave)
    for i in range(200):
        many_segments.search(f"absentterm{i}", workspace_id="w0", limit=5)
    assert all(len(ids) for ids, _ in arrays._postings.values()) and len(arrays._postings) <= 25
    assert not any(tf.flags.writeable or ids.flags.writeable for ids, tf in arrays._postings.values())
    with pytest.raises(ValueError, match="max_postings must be >= 0"):
        SegmentArrays(max_postings=-1)


def test_scores_are_those_of_the_code_before_the_one_bm25(tmp_path):
    """The Whoosh leg's numpy BM25 through retrieval.lexical.bm25 (WHOOSH_BM25: k1 1.5, b 0.75,
    Whoosh's IDF): the exact floats the inline formula and ``searcher.idf`` gave before,
    recorded from commit 2c2adb9 (raw ``bm25_top`` and the rounded ``search`` scores)."""
    import numpy as np

    from cairn.retrieval.lexical.bm25 import WHOOSH_BM25
    from cairn.retrieval.lexical.scoring import bm25_top

    corpus = [
        ("a", "Graphite electrodes wear faster in arc furnaces than in ladle furnaces."),
        ("b", "Arc furnace arc arc stability depends on electrode position."),
        ("c", "Ladle metallurgy refines steel after the furnace tap."),
        (
            "d",
            "Electrode electrode electrode consumption per tonne of steel, measured over a long campaign "
            "in an electric arc furnace shop.",
        ),
        ("e", "Steel scrap melting."),
    ]
    ix = WhooshIndex(tmp_path / "old")
    ix.add([IndexedPassage(pid, "w1", "c1", "d1", "", text) for pid, text in corpus])
    assert ix.search("arc furnace electrode", workspace_id="w1") == [
        ("b", 4.334959228),
        ("a", 3.76661388),
        ("d", 3.242424186),
        ("c", 1.081081081),
    ]
    assert ix.search("ladle steel", workspace_id="w1") == [
        ("c", 2.955642351),
        ("e", 1.721006002),
        ("a", 1.463775691),
        ("d", 0.869239072),
    ]
    assert ix.search("electrode consumption campaign", workspace_id="w1") == [
        ("d", 4.386187169),
        ("b", 1.249927717),
        ("a", 1.185052576),
    ]
    s = ix._searcher
    field, terms = disjunction_terms(ix.build_query("arc furnace electrode", s))
    mask = np.ones(s.doc_count_all(), dtype=bool)
    raw = bm25_top(s, field, terms, mask, params=WHOOSH_BM25, limit=10, arrays=ix._segment_arrays)
    assert raw is not None
    assert [(s.stored_fields(d)["passage_id"], v) for d, v in raw] == [
        ("b", 4.334959227902353),
        ("a", 3.766613879515045),
        ("d", 3.242424185855641),
        ("c", 1.0810810810810811),
    ]
    ix.close()
