"""Document titles from the document itself, for ingest (``cairn ingest``, file uploads).

Where a title comes from, by format (the first that gives a non-empty title wins; the file
name otherwise, :func:`title_or_name`):

- HTML: the first ``<title>`` (not one inside ``<svg>``, whose titles label pictures), then the
  first ``<h1>``;
- Markdown: a YAML front matter ``title:``, then the first level-1 heading, ATX (``# Title``)
  or setext (``Title`` over ``=====``), outside fenced code; inline markup is dropped (links
  keep their text, images their alt text, code spans and emphasis their content);
- PDF: the document information ``/Title``, then XMP ``dc:title``
  (:mod:`app.corpus.binary_text`);
- Word .docx: the core properties' title (:mod:`app.corpus.binary_text`);
- plain text, CSV rows and JSONL records: as before (file name; ``<file> row <n>``; the
  record's ``title``).

Every found title is cleaned by :func:`clean_title`: whitespace runs (newlines, tabs, NBSP)
collapse to one space, control, bidi-control and unpaired surrogate code points are dropped
(the title rules of :func:`app.core.text_rules.validate_name` would refuse them), placeholder
titles ("Untitled", "Document", …) count as none, and the result is cut to
:data:`MAX_DERIVED_TITLE_CHARS` characters.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

import yaml

MAX_DERIVED_TITLE_CHARS = 150
"""A derived title's length limit, in characters (code points), ellipsis included. Titles are
embedded with every passage of their document (``title + "\\n" + passage``,
:meth:`app.corpus.indexing.IndexWriter.embedding_input`) and MiniLM reads 256 word pieces with
passages up to 200 cl100k tokens, so a long title would push the passage's end out of the
window; 150 characters of English are about 30-40 word pieces. Longer titles are cut at the
last word boundary inside the limit (a word longer than that is cut) and end with "…"."""

# the title rules of text_rules.validate_name: C0/C1 controls, line/paragraph separators, bidi
# controls, unpaired surrogates (whitespace among them has been collapsed before)
_INVISIBLE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u061c\u202a-\u202e\u2066-\u2069\ud800-\udfff\ufeff]"
)
_PLACEHOLDERS = frozenset({"untitled", "untitled document", "document", "title", "no title", "new document"})
# what office suites write into a PDF made from a document ("Microsoft Word - contract.docx")
_PRODUCER_PREFIX = re.compile(r"^Microsoft (?:Word|PowerPoint|Excel) - ", re.IGNORECASE)


def clean_title(raw: str | None) -> str | None:
    """One line of visible text, at most :data:`MAX_DERIVED_TITLE_CHARS` characters, or None.

    Args:
        raw: A title as the document states it (any whitespace, any length), or None.

    Returns:
        The title with whitespace collapsed, invisible code points dropped, an office suite's
        "Microsoft Word - " prefix removed and cut to the limit; None when nothing visible is
        left or the title is a placeholder ("Untitled", "Document", "Title", …).
    """
    if raw is None:
        return None
    text = " ".join(_INVISIBLE.sub("", " ".join(str(raw).split())).split())
    text = _PRODUCER_PREFIX.sub("", text).strip()
    if not text or text.casefold() in _PLACEHOLDERS:
        return None
    if len(text) <= MAX_DERIVED_TITLE_CHARS:
        return text
    head = text[: MAX_DERIVED_TITLE_CHARS - 1]
    cut = head.rfind(" ")
    return (head[:cut] if cut > 0 else head).rstrip(" ,;:-–—") + "…"


def title_or_name(title: str | None, file_name: str) -> str:
    """The document's own title when it has one (see :func:`clean_title`), else ``file_name``."""
    return clean_title(title) or file_name


class _HtmlTitle(HTMLParser):
    """Collects the first ``<title>`` outside ``<svg>`` and the first ``<h1>``'s text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.svg = 0
        self.inside: str | None = None  # "title" or "h1" while collecting
        self.parts: list[str] = []
        self.title: str | None = None
        self.h1: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "svg":
            self.svg += 1
        elif (
            self.inside is None
            and not self.svg
            and ((tag == "title" and self.title is None) or (tag == "h1" and self.h1 is None))
        ):
            self.inside, self.parts = tag, []

    def handle_endtag(self, tag: str) -> None:
        if tag == "svg":
            self.svg = max(0, self.svg - 1)
        elif tag == self.inside:
            text = clean_title("".join(self.parts))
            if tag == "title":
                self.title = text or ""
            else:
                self.h1 = text or ""
            self.inside = None

    def handle_data(self, data: str) -> None:
        if self.inside is not None:
            self.parts.append(data)


_HTML_FEED = 65_536  # characters fed at a time: the parse stops once a <title> is complete


def html_title(html: str) -> str | None:
    """The title of an HTML document: its first ``<title>`` outside ``<svg>``, else its first
    ``<h1>``; entities unescaped, cleaned (:func:`clean_title`); None if neither gives one.

    The parse stops at the end of the first ``<title>`` (it usually sits in the first
    kilobytes), so a large page is read whole only when it has no title.
    """
    parser = _HtmlTitle()
    for start in range(0, len(html), _HTML_FEED):
        parser.feed(html[start : start + _HTML_FEED])
        if parser.title:
            return parser.title
    parser.close()
    return parser.title or parser.h1 or None


_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_ATX_H1 = re.compile(r"^ {0,3}#(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT_H1 = re.compile(r"^ {0,3}=+[ \t]*$")
_BLOCK_START = re.compile(r"^ {0,3}(?:[-*+>#|]|\d+[.)]|<)")
_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_REF_LINK = re.compile(r"\[([^\]]*)\]\[[^\]]*\]")
_CODE = re.compile(r"(`+)(.+?)\1")
_STRONG = re.compile(r"(\*\*|__)(\S(?:.*?\S)?)\1")
_EMPHASIS = re.compile(r"(?<![\w*])\*(\S(?:.*?\S)?)\*(?![\w*])|(?<![\w_])_(\S(?:.*?\S)?)_(?![\w_])")
_HEADING_ID = re.compile(r"\s*\{#[^}]*\}\s*$")
_TAG = re.compile(r"</?[A-Za-z][^>]*>")
_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")


def _inline_text(markdown: str) -> str:
    """A heading's text without inline markup (links keep their text, images their alt text)."""
    text = _HEADING_ID.sub("", markdown)
    text = _CODE.sub(lambda m: m.group(2).strip(), text)
    text = _IMAGE.sub(r"\1", text)
    text = _LINK.sub(r"\1", text)
    text = _REF_LINK.sub(r"\1", text)
    text = _TAG.sub("", text)
    text = _STRONG.sub(r"\2", text)
    text = _EMPHASIS.sub(lambda m: m.group(1) or m.group(2), text)
    return _ESCAPE.sub(r"\1", text)


def _front_matter_title(lines: list[str]) -> tuple[str | None, int]:
    """The ``title`` of a YAML front matter block (``---`` … ``---``/``...`` at the very top) and
    the index of the first line after it; (None, 0) without front matter (or unreadable YAML)."""
    if not lines or lines[0].rstrip() != "---":
        return None, 0
    for n, line in enumerate(lines[1:201], start=1):  # front matter is short; a stray --- is not one
        if line.rstrip() in ("---", "..."):
            try:
                meta = yaml.safe_load("\n".join(lines[1:n]))
            except yaml.YAMLError:
                return None, 0
            title = meta.get("title") if isinstance(meta, dict) else None
            if isinstance(title, bool) or not isinstance(title, str | int | float):
                return None, n + 1
            return str(title), n + 1
    return None, 0


def markdown_title(text: str) -> str | None:
    """The title of a Markdown document: its front matter ``title``, else its first level-1
    heading (ATX ``# Title`` or setext: a paragraph over ``===``) outside fenced code, without
    inline markup; cleaned (:func:`clean_title`). None if it has neither.
    """
    lines = text.splitlines()
    found, start = _front_matter_title(lines)
    if clean_title(found):
        return clean_title(found)
    fence: str | None = None
    paragraph: list[str] = []  # the lines of the paragraph above: a setext heading's text
    for line in lines[start:]:
        opened = _FENCE.match(line)
        if fence is not None:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = None
            continue
        if opened:
            fence, paragraph = opened.group(1), []
            continue
        atx = _ATX_H1.match(line)
        if atx:
            title = clean_title(_inline_text(atx.group(1) or ""))
            if title:
                return title
            paragraph = []
            continue
        if paragraph and _SETEXT_H1.match(line):
            title = clean_title(_inline_text(" ".join(paragraph)))
            if title:
                return title
        if not line.strip() or _BLOCK_START.match(line) or (not paragraph and line.startswith("    ")):
            paragraph = []
        else:
            paragraph.append(line.strip())
    return None


def text_title(media_type: str, raw: str) -> str | None:
    """The title a text document states (``text/html``: :func:`html_title` of the markup;
    ``text/markdown``: :func:`markdown_title`); None for plain text or when it states none."""
    if media_type == "text/html":
        return html_title(raw)
    if media_type == "text/markdown":
        return markdown_title(raw)
    return None
