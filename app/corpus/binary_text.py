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
"""

from __future__ import annotations

import io
import logging
import zipfile

import filetype

BINARY_SUFFIXES = {
    ".pdf": "application/pdf",
    ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
}


class BinaryTextError(ValueError):
    """The file's bytes are not the format its extension names, or cannot be read (the message
    says why, e.g. "not a PDF: a PNG file (image/png)")."""


def _what(data: bytes) -> str:
    kind = filetype.guess(data[:8192])
    return "unrecognised bytes" if kind is None else f"a {kind.extension.upper()} file ({kind.mime})"


def pdf_text(data: bytes) -> str:
    """The text of a PDF's pages, joined by ``"\\n\\n"`` (pypdf's layout-free extraction).

    Raises:
        BinaryTextError: not a PDF (no ``%PDF-`` header), encrypted with a password,
            unreadable (pypdf's error), or no text layer.
    """
    import pypdf  # imported on use: only PDF ingest pays for it

    if not data.startswith(b"%PDF-"):
        raise BinaryTextError(f"not a PDF: {_what(data)}")
    logging.getLogger("pypdf").setLevel(logging.ERROR)  # malformed-but-readable warnings are noise
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise BinaryTextError("an encrypted PDF (a password is needed)")
        pages = [(page.extract_text() or "").replace("\x00", "") for page in reader.pages]
    except BinaryTextError:
        raise
    except Exception as exc:  # noqa: BLE001 - pypdf raises many types for broken files
        raise BinaryTextError(f"unreadable PDF ({type(exc).__name__}: {exc})") from None
    text = "\n\n".join(p.strip("\n") for p in pages)
    if not text.strip():
        raise BinaryTextError(f"a PDF with no text layer ({len(pages)} page(s); a scan needs OCR first)")
    return text


def docx_text(data: bytes) -> str:
    """The text of a Word .docx: paragraphs, then table rows (cells tab-separated), one per line.

    Raises:
        BinaryTextError: not a ZIP with ``word/document.xml``, or unreadable.
    """
    import docx  # python-docx

    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            if "word/document.xml" not in z.namelist():
                raise BinaryTextError("not a Word .docx (a ZIP without word/document.xml)")
    except zipfile.BadZipFile:
        raise BinaryTextError(f"not a Word .docx: {_what(data)}") from None
    try:
        document = docx.Document(io.BytesIO(data))
    except Exception as exc:  # noqa: BLE001 - python-docx/lxml raise many types
        raise BinaryTextError(f"unreadable .docx ({type(exc).__name__}: {exc})") from None
    lines = [p.text for p in document.paragraphs]
    for table in document.tables:
        for row in table.rows:
            lines.append("\t".join(cell.text for cell in row.cells))
    return "\n".join(lines).replace("\x00", "")


def binary_text(suffix: str, data: bytes) -> str:
    """The text of a ``.pdf`` or ``.docx`` file's bytes (see :func:`pdf_text`, :func:`docx_text`)."""
    return pdf_text(data) if suffix == ".pdf" else docx_text(data)
