"""Chunking: exact offsets, paragraph merging, sentence and hard splits, HTML text."""

from __future__ import annotations

import pytest

from cairn.retrieval.chunking import Chunk, chunk_text, html_to_text, markdown_to_text
from cairn.retrieval.tokens import count_tokens

THREE = "Alpha one.\n\nBeta two.\n \n\nGamma three."  # 3 tokens per paragraph


def _check_invariants(source: str, chunks: list[Chunk], max_tokens: int, slack: int = 0) -> None:
    previous_end = 0
    for chunk in chunks:
        assert source[chunk.start : chunk.end] == chunk.text
        assert chunk.text == chunk.text.strip() and chunk.text
        assert count_tokens(chunk.text) <= max_tokens + slack
        assert chunk.start >= previous_end
        previous_end = chunk.end


def test_short_paragraphs_merge_while_they_fit():
    assert chunk_text(THREE, max_tokens=200) == [Chunk(0, 37, THREE)]
    assert chunk_text(THREE, max_tokens=7) == [
        Chunk(0, 21, "Alpha one.\n\nBeta two."),
        Chunk(25, 37, "Gamma three."),
    ]
    assert chunk_text(THREE, max_tokens=3) == [
        Chunk(0, 10, "Alpha one."),
        Chunk(12, 21, "Beta two."),
        Chunk(25, 37, "Gamma three."),
    ]


def test_surrounding_whitespace_is_stripped_with_exact_offsets():
    source = "   \n\n  Hello world.  \n"
    assert chunk_text(source) == [Chunk(7, 19, "Hello world.")]


@pytest.mark.parametrize("blank", ["", "   ", "\n\n\t \n"])
def test_empty_or_whitespace_input_gives_no_chunks(blank):
    assert chunk_text(blank) == []


def test_long_paragraph_splits_at_latin_sentences_keeping_closing_quotes():
    source = 'First sentence here. Second one! Third? "Quoted." Fourth.'
    chunks = chunk_text(source, max_tokens=5)
    assert chunks == [
        Chunk(0, 20, "First sentence here."),
        Chunk(21, 39, "Second one! Third?"),
        Chunk(40, 49, '"Quoted."'),
        Chunk(50, 57, "Fourth."),
    ]
    _check_invariants(source, chunks, 5)


def test_long_paragraph_splits_at_cjk_sentence_ends_without_spaces():
    source = "東京は「大きい。」大阪も大きい！京都は古い？"
    assert chunk_text(source, max_tokens=12) == [
        Chunk(0, 9, "東京は「大きい。」"),
        Chunk(9, 16, "大阪も大きい！"),
        Chunk(16, 22, "京都は古い？"),
    ]


def test_pieces_of_a_long_paragraph_do_not_merge_into_the_next_paragraph():
    source = "One. Two. Three.\n\nNext."
    # The first paragraph (6 tokens) is split at max_tokens=4; "Next." (2 tokens) would fit
    # beside "Three." but belongs to another paragraph.
    assert chunk_text(source, max_tokens=4) == [
        Chunk(0, 9, "One. Two."),
        Chunk(10, 16, "Three."),
        Chunk(18, 23, "Next."),
    ]


def test_over_long_sentence_is_hard_split_by_tokens():
    source = "abcdefghij" * 30  # no spaces, no punctuation
    chunks = chunk_text(source, max_tokens=10)
    assert [(c.start, c.end) for c in chunks] == [(i, i + 50) for i in range(0, 300, 50)]
    assert "".join(c.text for c in chunks) == source
    _check_invariants(source, chunks, 10)


def test_hard_split_prefers_whitespace_so_words_stay_whole():
    source = " ".join(["internationalization"] * 40)
    chunks = chunk_text(source, max_tokens=20)
    _check_invariants(source, chunks, 20)
    assert all(set(c.text.split(" ")) == {"internationalization"} for c in chunks)
    assert sum(len(c.text.split(" ")) for c in chunks) == 40


MIXED = (
    "Intro.\n\n"
    + "The cat sat on the mat. " * 40
    + "\n\n"
    + "東京は日本の首都です。" * 30
    + "\n\n"
    + "word " * 300
    + "\n\nTail."
)


def test_mixed_document_invariants_and_determinism():
    chunks = chunk_text(MIXED, max_tokens=50, min_tokens=0)  # tail joining off
    _check_invariants(MIXED, chunks, 50)
    assert chunks == chunk_text(MIXED, max_tokens=50, min_tokens=0)
    assert chunks[0] == Chunk(0, 6, "Intro.")
    assert chunks[-1].text == "Tail."
    assert not any("mat." in c.text and "東京" in c.text for c in chunks)


def test_tiny_tails_join_a_neighbour_within_the_limit_keeping_exact_offsets():
    plain = chunk_text(MIXED, max_tokens=50, min_tokens=0)
    joined = chunk_text(MIXED, max_tokens=50)  # min_tokens defaults to 50 // 5 = 10
    _check_invariants(MIXED, joined, 50, slack=10)
    assert joined == chunk_text(MIXED, max_tokens=50)
    # the leading "Intro." (first chunk) joins the chunk after it; the last "word" piece (6
    # tokens) and "Tail." (2) both join the chunk before them
    assert [count_tokens(c.text) for c in plain[-3:]] == [49, 6, 2]
    assert joined[0] == Chunk(0, plain[1].end, MIXED[0 : plain[1].end])
    assert joined[-1] == Chunk(plain[-3].start, len(MIXED), MIXED[plain[-3].start :])
    assert joined[-1].text.endswith("word \n\nTail.") and len(joined) == len(plain) - 3
    # every chunk under 10 tokens was absorbed
    assert [c for c in plain if count_tokens(c.text) < 10]
    assert not [c for c in joined if count_tokens(c.text) < 10]
    # nothing beyond the tails changed: each joined chunk is a run of whole plain chunks
    starts = {c.start for c in plain}
    ends = {c.end for c in plain}
    assert all(c.start in starts and c.end in ends for c in joined)
    assert sum(1 for p in plain for c in joined if c.start <= p.start and p.end <= c.end) == len(plain)


def test_the_tail_of_a_split_abstract_is_not_embedded_alone():
    sentence = "Reciprocal rank fusion combines the rankings of lexical and dense retrieval legs well. "
    n = count_tokens(sentence.strip())  # 15 tokens
    source = (sentence * (200 // n + 1)).strip()  # a little over 200 tokens: 200 + one sentence
    assert [count_tokens(c.text) for c in chunk_text(source, min_tokens=0)][-1] == n  # the old tiny tail
    chunks = chunk_text(source)
    assert chunks == [Chunk(0, len(source), source)] and count_tokens(source) <= 240
    many = (sentence * 40).strip()  # 600 tokens: three full chunks, no tail to join
    assert chunk_text(many) == chunk_text(many, min_tokens=0)


def test_invalid_min_tokens():
    with pytest.raises(ValueError):
        chunk_text("text", min_tokens=-1)


def test_invalid_max_tokens():
    with pytest.raises(ValueError):
        chunk_text("text", max_tokens=0)


def test_html_to_text():
    html = (
        "<html><head><title>Ignored</title><style>p {color: red}</style></head><body>"
        "<h1>Fish &amp; Chips</h1><p>Hello\n   <b>world</b>&nbsp;again<br>next line</p>"
        "<script>var x = '<p>no</p>';</script><pre>a  b\n  c</pre>"
        "<ul><li>one</li><li>two</li></ul><div>caf&eacute; &#x6771;&#20140;</div></body></html>"
    )
    assert html_to_text(html) == (
        "Fish & Chips\n\nHello world\xa0again\nnext line\n\na  b\n  c\n\none\n\ntwo\n\ncafé 東京"
    )


def test_html_unclosed_head_does_not_swallow_body_and_empty_html():
    assert html_to_text("<head><title>t</title><body><p>kept</p>") == "kept"
    assert html_to_text("<script>only()</script>") == ""


def test_markdown_is_kept_as_written():
    md = "# Title\n\n*Emphasis* and `code`."
    assert markdown_to_text(md) is md
