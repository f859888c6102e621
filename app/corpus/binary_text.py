"""Text of binary document formats: PDF (pypdf) and Word .docx (python-docx).

The extracted text is what gets versioned, chunked and cited: a citation's ``[start:end]``
points into this text, never into the file's bytes. Content decides, as for text files: a
``.pdf`` that is not a PDF or a ``.docx`` that is not a Word document is refused with the
reason (:class:`app.corpus.sources.NotText`).

- PDF: ``pypdf.PdfReader``, ``page.extract_text()`` per page, pages joined by a blank line
  (``"\\n\\n"``). An encrypted PDF that opens with an empty password is read; otherwise
  refused. A PDF with no text layer (a scan) is refused as "no text layer".
- .docx: ``python-docx``, body paragraphs in order (one per line), then each table's rows
  (cells joined by a tab), joined by ``"\\n"``.

Each also gives the title the file states (:func:`binary_document`): a PDF's document
information ``/Title``, else its XMP ``dc:title``; a .docx's core properties title; cleaned by
:func:`app.corpus.titles.clean_title` (None when the file states none).

Both are containers of compressed parts, inflated through counters before or while parsing
(:mod:`app.corpus.read_limits`): a .docx's parts are inflated once, counted, before
python-docx sees them (XML parts at most 64,000,000 bytes, all parts 128,000,000; a part
inflating past its declared size is refused); a PDF is
read with pypdf's per-stream output limits lowered to 64,000,000 bytes, at most 10,000 pages,
and every stream text extraction may decode (page contents, form XObjects, font maps and
files) is decoded and counted before its page is extracted, 64,000,000 bytes in all; the
text stops at the 2,000,000-character document limit. Past a bound:
:class:`~app.corpus.read_limits.SourceTooLarge`.
"""

from __future__ import annotations

import io
import logging
import zipfile
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

import filetype

from cairn.app.corpus.documents import MAX_DOCUMENT_CHARS
from cairn.app.corpus.read_limits import (
    MARKUP_BOUND,
    MAX_MARKUP_BYTES,
    MAX_PDF_PAGES,
    SourceTooLarge,
    check_zip,
    too_large,
)
from cairn.app.corpus.titles import clean_title

if TYPE_CHECKING:  # pypdf is imported on use (only PDF ingest pays for it)
    from pypdf import PageObject, PdfReader

BINARY_SUFFIXES = {
    ".pdf": "application/pdf",
    ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
}


@dataclass(frozen=True)
class BinaryDocument:
    """What a binary file gives: its extracted ``text`` and the ``title`` its metadata states
    (cleaned, at most :data:`app.corpus.titles.MAX_DERIVED_TITLE_CHARS` characters; None when
    it states none)."""

    text: str
    title: str | None


class BinaryTextError(ValueError):
    """The file's bytes are not the format its extension names, or cannot be read (the message
    says why, e.g. "not a PDF: a PNG file (image/png)")."""


def _what(data: bytes) -> str:
    kind = filetype.guess(data[:8192])
    return "unrecognised bytes" if kind is None else f"a {kind.extension.upper()} file ({kind.mime})"


# pypdf's own per-stream output limits (75 MB by default), lowered to one document's markup
_PYPDF_LIMITS = {
    f"{name}_maximum_output_length": MAX_MARKUP_BYTES
    for name in ("zlib", "lzw", "run_length", "brotli", "jbig2", "array_based_stream")
}
# what text extraction may decode under a page: contents, form XObjects, fonts and their maps
_PDF_KEYS = (
    "/Contents", "/Resources", "/XObject", "/Font", "/DescendantFonts", "/FontDescriptor",
    "/FontFile", "/FontFile2", "/FontFile3", "/ToUnicode", "/Encoding",
)  # fmt: skip


def _decode_page_streams(page: PageObject, seen: set[int], decoded: int) -> int:
    """Decode (pypdf caches it) every stream text extraction of ``page`` may read and that no
    earlier page reached (``seen``: ids of the objects walked), counting; returns the new total
    of decoded bytes. Image XObjects are skipped: text extraction does not decode them.

    Raises:
        SourceTooLarge: the total passes :data:`MAX_MARKUP_BYTES` (checked after each stream;
            pypdf's configured limits keep one stream within that much).
    """
    import pypdf.generic as g

    stack = [(page, False)]
    while stack:
        item, by_name = stack.pop()
        node = item.get_object()
        if id(node) in seen or not isinstance(node, g.DictionaryObject | g.ArrayObject):
            continue
        seen.add(id(node))
        if isinstance(node, g.ArrayObject) or by_name:  # an array, or a /XObject or /Font name map
            stack.extend((v, False) for v in (node if isinstance(node, g.ArrayObject) else node.values()))
            continue
        if node.get("/Subtype") == "/Image":
            continue
        if isinstance(node, g.StreamObject):
            decoded += len(node.get_data())
            if decoded > MAX_MARKUP_BYTES:
                raise too_large("the PDF's decoded content", MAX_MARKUP_BYTES, decoded, MARKUP_BOUND)
        stack.extend((node.raw_get(k), k in ("/XObject", "/Font")) for k in _PDF_KEYS if k in node)
    return decoded


def _pdf_title(reader: PdfReader) -> str | None:
    """The document information ``/Title``, else XMP ``dc:title`` (its ``x-default`` entry, else
    the first); None when neither is readable or visible. A broken metadata object costs the
    title, never the text."""
    try:
        info = reader.metadata
        title = clean_title(info.title if info is not None else None)
    except Exception:  # noqa: BLE001 - pypdf raises many types for broken objects
        title = None
    if title:
        return title
    try:
        xmp = reader.xmp_metadata
        titles = (xmp.dc_title if xmp is not None else None) or {}
    except Exception:  # noqa: BLE001 - XMP is XML inside the PDF: anything may be wrong with it
        return None
    return clean_title(titles.get("x-default") or next(iter(titles.values()), None))


def pdf_text(data: bytes) -> str:
    """The text of a PDF's pages (:func:`pdf_document`'s ``text``; the same errors)."""
    return pdf_document(data).text


def pdf_document(data: bytes) -> BinaryDocument:
    """The text of a PDF's pages, joined by ``"\\n\\n"`` (pypdf's layout-free extraction), and
    the title its metadata states (:func:`_pdf_title`).

    Raises:
        BinaryTextError: not a PDF (no ``%PDF-`` header), encrypted with a password,
            unreadable (pypdf's error, e.g. a stream past its configured limit), or no text layer.
        SourceTooLarge: more than :data:`MAX_PDF_PAGES` pages, decoded streams past
            :data:`MAX_MARKUP_BYTES`, or text past the 2,000,000-character document limit.
    """
    import pypdf  # imported on use: only PDF ingest pays for it

    if not data.startswith(b"%PDF-"):
        raise BinaryTextError(f"not a PDF: {_what(data)}")
    logging.getLogger("pypdf").setLevel(logging.ERROR)  # malformed-but-readable warnings are noise
    try:
        with pypdf.apply_configuration(None, **_PYPDF_LIMITS):
            reader = pypdf.PdfReader(io.BytesIO(data))
            if reader.is_encrypted and not reader.decrypt(""):
                raise BinaryTextError("an encrypted PDF (a password is needed)")
            if len(reader.pages) > MAX_PDF_PAGES:
                raise SourceTooLarge(
                    f"too large: {len(reader.pages):,} pages; at most {MAX_PDF_PAGES:,} are read",
                    limit=MAX_PDF_PAGES,
                    inflated=len(reader.pages),
                )
            title = _pdf_title(reader)
            pages: list[str] = []
            seen: set[int] = set()
            decoded = chars = 0
            for n, page in enumerate(reader.pages, start=1):
                decoded = _decode_page_streams(page, seen, decoded)
                pages.append((page.extract_text() or "").replace("\x00", ""))
                chars += len(pages[-1]) + 2
                if chars > MAX_DOCUMENT_CHARS + 2:
                    raise SourceTooLarge(
                        f"too large: the text passes {MAX_DOCUMENT_CHARS:,} characters, the document limit, "
                        f"at page {n:,}",
                        limit=MAX_DOCUMENT_CHARS,
                        inflated=chars,
                    )
    except (BinaryTextError, SourceTooLarge):
        raise
    except pypdf.errors.LimitReachedError:  # one stream past the limits configured above
        raise too_large("a stream of the PDF", MAX_MARKUP_BYTES, MAX_MARKUP_BYTES, MARKUP_BOUND) from None
    except Exception as exc:  # noqa: BLE001 - pypdf raises many types for broken files
        raise BinaryTextError(f"unreadable PDF ({type(exc).__name__}: {exc})") from None
    text = "\n\n".join(p.strip("\n") for p in pages)
    if not text.strip():
        raise BinaryTextError(f"a PDF with no text layer ({len(pages)} page(s); a scan needs OCR first)")
    return BinaryDocument(text, title)


def docx_text(data: bytes) -> str:
    """The text of a Word .docx (:func:`docx_document`'s ``text``; the same errors)."""
    return docx_document(data).text


def docx_document(data: bytes) -> BinaryDocument:
    """The text of a Word .docx: paragraphs, then table rows (cells tab-separated), one per
    line; and its core properties' title (``docProps/core.xml``, ``dc:title``).

    Raises:
        BinaryTextError: not a ZIP with ``word/document.xml``, or unreadable (a part's CRC
            fails, e.g. a part inflating past its declared size).
        SourceTooLarge: the parts inflate past their bounds (:func:`~app.corpus.read_limits.check_zip`).
    """
    import docx  # python-docx

    try:
        z = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        raise BinaryTextError(f"not a Word .docx: {_what(data)}") from None
    with z:
        if "word/document.xml" not in z.namelist():
            raise BinaryTextError("not a Word .docx (a ZIP without word/document.xml)")
        try:
            check_zip(data, z, "the .docx's content")  # before python-docx inflates (and parses) them
        except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
            raise BinaryTextError(f"unreadable .docx ({type(exc).__name__}: {exc})") from None
    try:
        document = docx.Document(io.BytesIO(data))
    except Exception as exc:  # noqa: BLE001 - python-docx/lxml raise many types
        raise BinaryTextError(f"unreadable .docx ({type(exc).__name__}: {exc})") from None
    lines = [p.text for p in document.paragraphs]
    for table in document.tables:
        for row in table.rows:
            lines.append("\t".join(cell.text for cell in row.cells))
    try:
        title = clean_title(document.core_properties.title)
    except Exception:  # noqa: BLE001 - a malformed core.xml costs the title, never the text
        title = None
    return BinaryDocument("\n".join(lines).replace("\x00", ""), title)


def binary_document(suffix: str, data: bytes) -> BinaryDocument:
    """The text and title of a ``.pdf`` or ``.docx`` file's bytes (see :func:`pdf_document`,
    :func:`docx_document`; the same errors)."""
    return pdf_document(data) if suffix == ".pdf" else docx_document(data)


def binary_text(suffix: str, data: bytes) -> str:
    """The text of a ``.pdf`` or ``.docx`` file's bytes (:func:`binary_document`'s ``text``)."""
    return binary_document(suffix, data).text
