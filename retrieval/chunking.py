"""Split document text into passages with exact character offsets.

Method (deterministic, no model):

1. Paragraphs are the runs of text between blank lines (a line break, optional spaces
   or tabs, another line break).
2. A paragraph that fits ``max_tokens`` is one unit. A longer paragraph is split into
   sentences: after Latin ``. ! ?`` (plus closing quotes/brackets) followed by
   whitespace, after CJK ``。！？`` (no space needed), and at single line breaks. A
   sentence still longer than ``max_tokens`` is hard-split by tokens, preferring the last
   whitespace in the final fifth of the window so words stay whole.
3. Consecutive units are merged greedily, in order, while the merged span (including the
   original separators between them) still fits ``max_tokens``.
4. Each chunk is stripped of surrounding whitespace; offsets are adjusted so that
   ``source[chunk.start:chunk.end] == chunk.text`` always holds.
5. No tiny tails: a chunk of fewer than ``min_tokens`` tokens (default ``max_tokens // 5``,
   40 at the default 200) joins the chunk before it — or, when it is the first, the chunk
   after it — when the joined span fits ``max_tokens + min_tokens``. A 30-token tail
   embedded alone carries little dense evidence (issue 18: 712 SciFact-like abstracts left
   tails under 40 tokens, and their dense leg trailed whole-abstract MiniLM); joined, the
   sentence keeps its context. The joined span is still an exact source span, so citations
   stay exact.

Token counts are ``cl100k_base`` counts (:mod:`retrieval.tokens`), measured on the
exact chunk text, so every chunk satisfies ``count_tokens(chunk.text) <= max_tokens``,
except a chunk that absorbed a short tail: ``<= max_tokens + min_tokens``.

Formats: :func:`html_to_text` turns HTML into paragraph-separated plain text (stdlib
``html.parser``). :func:`markdown_to_text` returns Markdown unchanged on purpose:
Markdown is readable as is, embedding models and BM25 cope with its markup, and keeping
the source text means passage offsets point into exactly what the author wrote.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from html.parser import HTMLParser

from cairn.retrieval.tokens import count_tokens, token_boundaries

_PARAGRAPH_BREAK = re.compile(r"(\r?\n[ \t\r\f\v]*\r?\n\s*)")
# A sentence ends after Latin terminal punctuation (+ closing quotes/brackets) followed by
# whitespace, after CJK terminal punctuation (+ closing brackets), or at a line break. The
# last group of each alternative is the separator between the two sentences.
_SENTENCE_END = re.compile(
    r"[.!?][\"'\u201d\u2019)\]]*(\s+)"
    r"|[\u3002\uff01\uff1f][\u300d\u300f\uff09\u3011]*(\s*)"
    r"|(\n\s*)"
)
_WHITESPACE = re.compile(r"\s")


@dataclass(frozen=True)
class Chunk:
    """A passage of a source text.

    Attributes:
        start: Offset of the first character in the source (0-based, inclusive).
        end: Offset one past the last character (exclusive).
        text: ``source[start:end]``, never empty, no surrounding whitespace.
    """

    start: int
    end: int
    text: str


def _strip_span(text: str, start: int, end: int) -> tuple[int, int]:
    """Shrink ``[start, end)`` so that it has no leading or trailing whitespace."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _split_spans(text: str, start: int, end: int, pattern: re.Pattern[str]) -> list[tuple[int, int]]:
    """Split ``text[start:end]`` at the separator group of each match of ``pattern``.

    Returns stripped, non-empty spans; text between separators is never lost.
    """
    spans: list[tuple[int, int]] = []
    cursor = start
    for match in pattern.finditer(text, start, end):
        group = match.lastindex or 0
        span = _strip_span(text, cursor, match.start(group))
        if span[0] < span[1]:
            spans.append(span)
        cursor = match.end(group)
    span = _strip_span(text, cursor, end)
    if span[0] < span[1]:
        spans.append(span)
    return spans


def _hard_split(text: str, start: int, end: int, max_tokens: int) -> list[tuple[int, int]]:
    """Cut one over-long span into pieces of at most ``max_tokens`` tokens each."""
    pieces: list[tuple[int, int]] = []
    while start < end:
        segment = text[start:end]
        if count_tokens(segment) <= max_tokens:
            pieces.append((start, end))
            break
        offsets = token_boundaries(segment)
        cut = offsets[max_tokens]
        # Prefer a whitespace cut in the last fifth of the window (keeps words whole).
        window_floor = offsets[max(1, max_tokens - max_tokens // 5)]
        for i in range(cut, window_floor, -1):
            if _WHITESPACE.match(segment, i - 1):
                cut = i
                break
        while cut > 1 and count_tokens(segment[:cut]) > max_tokens:
            cut -= 1
        cut = max(cut, 1)  # always progress, even if one character exceeds the budget
        piece = _strip_span(text, start, start + cut)
        if piece[0] < piece[1]:
            pieces.append(piece)
        start = _strip_span(text, start + cut, end)[0]
    return pieces


def _merge(text: str, spans: list[tuple[int, int]], max_tokens: int) -> list[tuple[int, int]]:
    """Greedily merge consecutive spans while the merged source span fits ``max_tokens``."""
    merged: list[tuple[int, int]] = []
    for span in spans:
        if merged and count_tokens(text[merged[-1][0] : span[1]]) <= max_tokens:
            merged[-1] = (merged[-1][0], span[1])
        else:
            merged.append(span)
    return merged


def _split_paragraph(text: str, start: int, end: int, max_tokens: int) -> list[tuple[int, int]]:
    """Split an over-long paragraph at sentences, re-merged greedily; hard-split leftovers."""
    pieces: list[tuple[int, int]] = []
    for s_start, s_end in _split_spans(text, start, end, _SENTENCE_END):
        if count_tokens(text[s_start:s_end]) <= max_tokens:
            pieces.append((s_start, s_end))
        else:
            pieces.extend(_hard_split(text, s_start, s_end, max_tokens))
    return _merge(text, pieces, max_tokens)


def _join_tails(text: str, spans: list[tuple[int, int]], max_tokens: int, min_tokens: int) -> list[tuple[int, int]]:
    """Join each span under ``min_tokens`` tokens to its previous span (the first: to its
    next) when the joined source span fits ``max_tokens + min_tokens`` (step 5, module doc)."""
    if min_tokens < 1 or len(spans) < 2:
        return spans
    limit = max_tokens + min_tokens
    out: list[tuple[int, int]] = []
    for span in spans:
        if out and count_tokens(text[span[0] : span[1]]) < min_tokens:
            joined = (out[-1][0], span[1])
            if count_tokens(text[joined[0] : joined[1]]) <= limit:
                out[-1] = joined
                continue
        out.append(span)
    if len(out) >= 2 and count_tokens(text[out[0][0] : out[0][1]]) < min_tokens:
        joined = (out[0][0], out[1][1])
        if count_tokens(text[joined[0] : joined[1]]) <= limit:
            out[:2] = [joined]
    return out


def chunk_text(text: str, *, max_tokens: int = 200, min_tokens: int | None = None) -> list[Chunk]:
    """Split ``text`` into passages of at most ``max_tokens`` tokens (method: module doc).

    Whole paragraphs that fit are merged with their neighbours; the pieces of an
    over-long paragraph are merged only with each other, never with the next paragraph;
    then chunks under ``min_tokens`` join a neighbour (step 5).

    Args:
        text: The source text (a document version's full text).
        max_tokens: Largest chunk, in ``cl100k_base`` tokens; >= 1.
        min_tokens: Smallest chunk kept alone when a neighbour can take it, in tokens;
            default ``max_tokens // 5``; 0 turns tail joining off.

    Returns:
        Chunks in source order, non-overlapping, each with
        ``text[chunk.start:chunk.end] == chunk.text`` and at most ``max_tokens`` tokens
        (``max_tokens + min_tokens`` for a chunk that absorbed a short tail; a single
        character that alone exceeds the budget is one chunk). ``[]`` for empty or
        whitespace-only text.

    Raises:
        ValueError: If ``max_tokens`` < 1 or ``min_tokens`` < 0.
    """
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
    if min_tokens is None:
        min_tokens = max_tokens // 5
    if min_tokens < 0:
        raise ValueError(f"min_tokens must be >= 0, got {min_tokens}")
    if not text or text.isspace():
        return []
    spans: list[tuple[int, int]] = []
    run: list[tuple[int, int]] = []  # consecutive paragraphs that each fit
    for p_start, p_end in _split_spans(text, 0, len(text), _PARAGRAPH_BREAK):
        if count_tokens(text[p_start:p_end]) <= max_tokens:
            run.append((p_start, p_end))
            continue
        spans.extend(_merge(text, run, max_tokens))
        run = []
        spans.extend(_split_paragraph(text, p_start, p_end, max_tokens))
    spans.extend(_merge(text, run, max_tokens))
    spans = _join_tails(text, spans, max_tokens, min_tokens)
    return [Chunk(start, end, text[start:end]) for start, end in spans]


def markdown_to_text(markdown: str) -> str:
    """Return Markdown unchanged: it is indexed and cited as written (see module doc).

    Args:
        markdown: Markdown source.

    Returns:
        The same string, so passage offsets point into the author's own text.
    """
    return markdown


_DROP_TAGS = frozenset({"script", "style", "noscript", "template", "head", "svg", "iframe", "object"})
_BLOCK_TAGS = frozenset(
    {
        "address", "article", "aside", "blockquote", "body", "caption", "dd", "details",
        "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "h1",
        "h2", "h3", "h4", "h5", "h6", "header", "hr", "html", "li", "main", "nav", "ol",
        "p", "pre", "section", "summary", "table", "tbody", "td", "tfoot", "th", "thead",
        "title", "tr", "ul",
    }
)  # fmt: skip
_INLINE_SPACE = re.compile(r"[ \t\r\n\f\v]+")


class _TextExtractor(HTMLParser):
    """Collects paragraphs of visible text; see :func:`html_to_text`."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.paragraphs: list[str] = []
        self._parts: list[str] = []
        self._drop_depth = 0
        self._pre_depth = 0

    def _flush(self) -> None:
        raw = "".join(self._parts)
        self._parts = []
        lines = [
            _INLINE_SPACE.sub(" ", line).strip() if self._pre_depth == 0 else line.rstrip() for line in raw.split("\n")
        ]
        if self._pre_depth == 0:
            paragraph = "\n".join(line for line in lines if line)
        else:
            paragraph = "\n".join(lines).strip("\n")
        if paragraph.strip():
            self.paragraphs.append(paragraph)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "body":
            self._drop_depth = 0  # an unclosed <head> must not swallow the body
        if tag in _DROP_TAGS:
            self._drop_depth += 1
            return
        if self._drop_depth:
            return
        if tag in _BLOCK_TAGS:
            self._flush()
            if tag == "pre":
                self._pre_depth += 1
        elif tag == "br":
            self._parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _DROP_TAGS:
            self._drop_depth = max(0, self._drop_depth - 1)
            return
        if self._drop_depth:
            return
        if tag in _BLOCK_TAGS:
            self._flush()
            if tag == "pre":
                self._pre_depth = max(0, self._pre_depth - 1)

    def handle_data(self, data: str) -> None:
        if self._drop_depth:
            return
        if self._pre_depth == 0:
            # Inline whitespace (including source line breaks) collapses to one space.
            data = _INLINE_SPACE.sub(" ", data)
        self._parts.append(data)


def html_to_text(html: str) -> str:
    """Extract readable text from HTML: paragraphs separated by blank lines.

    ``script``, ``style``, ``noscript``, ``template``, ``head`` (so ``<title>`` too),
    ``svg``, ``iframe`` and ``object`` contents are dropped; block elements (``p``,
    ``div``, ``li``, ``h1``–``h6``, ``td``, ``tr``, ...) become paragraph breaks; ``<br>``
    becomes a line break; other whitespace collapses to single spaces except inside
    ``<pre>``; entities and character references are unescaped (``&amp;`` → ``&``).

    Args:
        html: An HTML document or fragment (malformed markup is tolerated).

    Returns:
        Plain text, paragraphs joined by ``"\\n\\n"``, no leading/trailing whitespace;
        ``""`` if nothing visible.
    """
    parser = _TextExtractor()
    parser.feed(html)
    parser.close()
    parser._flush()
    return "\n\n".join(parser.paragraphs)
