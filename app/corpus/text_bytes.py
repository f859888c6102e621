"""Bytes to text for ingest: UTF-8 (or the encoding a byte-order mark names), never binary.

Content decides, not the extension: :func:`decode_text` refuses a PDF, a ZIP/.docx, an image
or NUL bytes whatever the file is called, naming what the magic number shows.
"""

from __future__ import annotations

import codecs

import filetype


class NotText(ValueError):
    """A file's bytes are not text (``reason`` names what was detected)."""


_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def detected(head: bytes) -> str | None:
    """What the magic number at the start says (``filetype``: PDF, ZIP/.docx, images, …), or None."""
    kind = filetype.guess(head[:8192])
    return None if kind is None else f"a {kind.extension.upper()} file ({kind.mime})"


def decode_text(data: bytes) -> str:
    """The text of a file's bytes: UTF-8 (a BOM selects UTF-8/16/32), never binary.

    Content decides, not the extension: a ``%PDF-`` header is refused even when the rest
    would decode; NUL bytes or invalid UTF-8 are refused, naming the type the magic number
    shows (``filetype``) when it shows one. A magic number alone does not refuse valid text
    (a note starting "BMW …" matches the BMP signature).

    Raises:
        NotText: with the reason, e.g. "a PDF file (application/pdf)".
    """
    if data.startswith(b"%PDF-"):
        raise NotText(detected(data) or "a PDF file")
    for bom, codec in _BOMS:
        if data.startswith(bom):
            try:
                return data.decode(codec)
            except UnicodeDecodeError as exc:
                raise NotText(f"not {codec.upper()} text despite its byte-order mark ({exc.reason})") from None
    if b"\x00" in data:
        raise NotText(detected(data) or "binary data (NUL bytes)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NotText(
            detected(data)
            or f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); convert it to UTF-8"
        ) from None
