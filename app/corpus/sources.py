"""Reading sources for ingest: files, folders and JSONL into :class:`SourceDocument` values.


Sources (``iter_sources``):
- ``.txt`` / ``.md`` / ``.markdown``: the text as is (Markdown is readable as text);
- ``.html`` / ``.htm``: visible text (:func:`retrieval.chunking.html_to_text`);
- ``.jsonl`` (BEIR shape ``{"_id", "title", "text"}``, optional ``validFrom``/``validTo``
  ISO-8601), one document per line;
- ``.csv``: one document per data row (:func:`csv_rows`): the first row names the columns,
  each row's text is one ``header: value`` line per non-empty cell, its external id
  ``<path>#row=<n>`` (``n`` counts data rows from 1); a row with more cells than the header
  is skipped and reported;
- any of these ``.gz``-compressed; folders recursively, in sorted path order;
- ``.pdf`` (pypdf) and ``.docx`` (python-docx): their extracted text
  (:mod:`app.corpus.binary_text`); citations point into that text.

Content decides, not the extension (:func:`decode_text`): a PDF, a ZIP/.docx or an image
renamed ``.txt`` is skipped and reported, never indexed as binary garbage. Every skipped
file (unsupported type, binary, no text, hidden folder) is reported with its reason.

The external id is the JSONL ``_id`` or the file's path relative to the ingested folder.
Writing them into a collection is :func:`app.corpus.ingest.ingest_documents`.
"""

from __future__ import annotations

import codecs
import csv
import gzip
import io
import json
import logging
import os
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import filetype

from cairn.app.core.errors import BadInput
from cairn.app.core.text_rules import validate_path
from cairn.app.corpus.binary_text import BINARY_SUFFIXES, BinaryTextError, binary_text
from cairn.retrieval.chunking import html_to_text

TEXT_SUFFIXES = {
    ".txt": "text/plain",
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".html": "text/html",
    ".htm": "text/html",
}
log = logging.getLogger("cairn.ingest")


@dataclass(frozen=True)
class SkippedFile:
    """A file (or document) not ingested, and why (e.g. "not text: a PDF file (application/pdf)")."""

    path: str
    reason: str


@dataclass(frozen=True)
class SourceDocument:
    """One document read from a source, before versioning."""

    external_id: str
    title: str
    text: str
    media_type: str = "text/plain"
    valid_from: datetime | None = None
    valid_to: datetime | None = None


def _suffixes(path: Path) -> tuple[str, bool]:
    name = path.name.lower()
    gz = name.endswith(".gz")
    if gz:
        name = name[:-3]
    return Path(name).suffix, gz


class NotText(ValueError):
    """A file's bytes are not text (``reason`` names what was detected)."""


_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def _detected(head: bytes) -> str | None:
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
        raise NotText(_detected(data) or "a PDF file")
    for bom, codec in _BOMS:
        if data.startswith(bom):
            try:
                return data.decode(codec)
            except UnicodeDecodeError as exc:
                raise NotText(f"not {codec.upper()} text despite its byte-order mark ({exc.reason})") from None
    if b"\x00" in data:
        raise NotText(_detected(data) or "binary data (NUL bytes)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NotText(
            _detected(data)
            or f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); convert it to UTF-8"
        ) from None


def _read_bytes(path: Path, gz: bool) -> bytes:
    if not gz:
        return path.read_bytes()
    try:
        return gzip.decompress(path.read_bytes())
    except (OSError, EOFError, zlib.error) as exc:
        raise NotText(f"not gzip data ({exc})") from None


def _parse_time(value, where: str) -> datetime | None:
    if value in (None, ""):
        return None
    try:
        dt = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        raise BadInput(f"{where}: {value!r} is not an ISO-8601 time") from None
    if dt.tzinfo is None:
        raise BadInput(f"{where}: {value!r} needs a timezone (e.g. Z)")
    return dt


def _jsonl_lines(path: Path, gz: bool) -> Iterator[bytes]:
    """Raw lines; the first 8 KiB are sniffed first (NotText for a PDF, an image, an archive, NUL
    bytes; invalid UTF-8 in a text file is left to :func:`_jsonl`, which names the line)."""
    opener = gzip.open if gz else open
    try:
        with opener(path, "rb") as fh:
            head = fh.read(8192)
            binary = head.startswith(b"%PDF-") or b"\x00" in head
            try:
                head.decode("utf-8")
            except UnicodeDecodeError:  # a stray byte is reported with its line number below
                binary = binary or _detected(head) is not None
            if binary:
                decode_text(head)  # raises NotText naming the type
            if head and not head.endswith(b"\n"):
                head += fh.readline()
            yield from io.BytesIO(head)
            yield from fh
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
        raise NotText(f"not gzip data ({exc})") from None


def _jsonl(path: Path, gz: bool) -> Iterator[SourceDocument]:
    for n, raw in enumerate(_jsonl_lines(path, gz), start=1):
        where = f"{path.name}:{n}"
        try:
            line = raw.decode("utf-8-sig" if n == 1 else "utf-8")
        except UnicodeDecodeError as exc:
            raise BadInput(f"{where}: not UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})") from None
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise BadInput(f"{where}: not JSON ({exc.msg})") from None
        if not isinstance(row, dict) or "_id" not in row or "text" not in row:
            raise BadInput(f"{where}: expected an object with '_id' and 'text' (BEIR shape)")
        yield SourceDocument(
            external_id=str(row["_id"]),
            title=" ".join(str(row.get("title") or "").split()),  # a title is one line
            text=str(row["text"]),
            media_type="text/plain",
            valid_from=_parse_time(row.get("validFrom"), where),
            valid_to=_parse_time(row.get("validTo"), where),
        )


SUPPORTED = ".txt .md .markdown .html .htm .jsonl .csv (optionally .gz), .pdf .docx"


def _columns(header: list[str]) -> list[str]:
    """Header cells as column names: stripped, blanks named ``column <n>``, repeats ``name (2)``."""
    out: list[str] = []
    for i, raw in enumerate(header, start=1):
        name = " ".join(raw.split()) or f"column {i}"
        base, k = name, 2
        while name in out:
            name, k = f"{base} ({k})", k + 1
        out.append(name)
    return out


def csv_rows(text: str, rel: str, name: str, skipped: list[SkippedFile]) -> list[SourceDocument]:
    """The data rows of a CSV text as documents (module doc), with the stdlib :mod:`csv` reader
    (RFC 4180 quoting, so a quoted cell may hold commas and line breaks).

    The delimiter is sniffed from the first line among ``,`` ``;`` tab and ``|`` (``,`` when
    none is found). Cells are stripped; empty cells are left out of the text; blank lines are
    no rows. A title is ``<file name> row <n>``.

    Args:
        skipped: Receives a :class:`SkippedFile` ``<path>#row=<n>`` per row with more cells
            than the header.

    Raises:
        NotText: the text is not CSV the reader accepts (e.g. a cell over the reader's
            131,072-character field limit); ``reason`` names the line.
    """
    first = text.split("\n", 1)[0]
    counts = {d: first.count(d) for d in (",", ";", "\t", "|")}
    delimiter = max(counts, key=lambda d: counts[d]) if any(counts.values()) else ","
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=False)
    docs: list[SourceDocument] = []
    try:
        header: list[str] | None = None
        n = 0
        for cells in reader:
            if not any(c.strip() for c in cells):
                continue
            if header is None:
                header = _columns(cells)
                continue
            n += 1
            if len(cells) > len(header):
                skipped.append(
                    SkippedFile(f"{rel}#row={n}", f"{len(cells)} cells; the header has {len(header)} columns")
                )
                continue
            lines = [f"{h}: {' '.join(c.split())}" for h, c in zip(header, cells, strict=False) if c.strip()]
            docs.append(
                SourceDocument(
                    external_id=f"{rel}#row={n}", title=f"{name} row {n}", text="\n".join(lines), media_type="text/csv"
                )
            )
    except csv.Error as exc:
        raise NotText(f"not CSV at line {reader.line_num}: {exc}") from None
    return docs


def _files(path: Path, skipped: list[SkippedFile]) -> list[Path]:
    """Files under a folder in sorted order; hidden folders (.git, …) skipped as one entry each,
    symbolic links (to files or folders) skipped and reported: a folder's links may point
    outside it, and ingesting is reading what the caller handed over, nothing else."""
    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(path):
        here = Path(dirpath)
        for d in sorted(dirnames):
            if d.startswith("."):
                n = sum(len(f) for _, _, f in os.walk(here / d))
                skipped.append(
                    SkippedFile(
                        f"{(here / d).relative_to(path).as_posix()}/",
                        f"hidden folder, not read ({n} file{'' if n == 1 else 's'})",
                    )
                )
            elif (here / d).is_symlink():
                skipped.append(
                    SkippedFile(f"{(here / d).relative_to(path).as_posix()}/", "symbolic link, not followed")
                )
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and not (here / d).is_symlink())
        for f in filenames:
            if (here / f).is_symlink():  # it could point anywhere (/etc/passwd): never read through it
                skipped.append(SkippedFile((here / f).relative_to(path).as_posix(), "symbolic link, not followed"))
            elif (here / f).is_file():
                out.append(here / f)
    return sorted(out)


def iter_sources(path: Path, skipped: list[SkippedFile] | None = None) -> Iterator[SourceDocument]:
    """Documents under ``path`` (file or folder), in a stable order.

    Every file is sniffed: binary content (a PDF, a ZIP/.docx, an image, NUL bytes, invalid
    UTF-8) is never indexed, whatever its extension. In a folder, such files, unsupported
    types, files without text and hidden folders are skipped and each is reported.

    Args:
        path: A file or a folder (read recursively).
        skipped: Receives one :class:`SkippedFile` (path relative to the folder, reason) per
            skipped file; None logs each at WARNING on ``cairn.ingest`` instead.

    Raises:
        BadInput: the path does not exist; a single file is unsupported or not text; a
            folder holds no supported file; a JSONL line is bad.
    """
    validate_path(str(path), "path")
    path = Path(path)
    if not path.exists():
        raise BadInput(f"{path} does not exist")
    single = path.is_file()
    found: list[SkippedFile] = []

    def skip(rel: str, reason: str) -> None:
        if single:
            raise BadInput(f"{path.name}: {reason}")
        found.append(SkippedFile(rel, reason))
        if skipped is not None:
            skipped.append(found[-1])
        else:
            log.warning("ingest skipped %s: %s", rel, reason)

    hidden: list[SkippedFile] = []
    files = [path] if single else _files(path, hidden)
    for h in hidden:
        skip(h.path, h.reason)
    root = path.parent if single else path
    supported = False
    for f in files:
        rel = f.relative_to(root).as_posix()
        suffix, gz = _suffixes(f)
        if suffix in BINARY_SUFFIXES and not gz:
            supported = True
            try:
                text = binary_text(suffix, f.read_bytes())
            except BinaryTextError as exc:
                skip(rel, str(exc))
                continue
            if not text.strip():
                skip(rel, "no text")
                continue
            yield SourceDocument(external_id=rel, title=f.name, text=text, media_type=BINARY_SUFFIXES[suffix])
            continue
        if suffix not in TEXT_SUFFIXES and suffix not in (".jsonl", ".csv"):
            skip(rel, f"unsupported type {suffix or '(no extension)'}; supported: {SUPPORTED}")
            continue
        supported = True
        try:
            if suffix == ".jsonl":
                yield from _jsonl(f, gz)
                continue
            raw = decode_text(_read_bytes(f, gz))
            if suffix == ".csv":
                bad_rows: list[SkippedFile] = []
                rows = csv_rows(raw, rel, f.name, bad_rows)
        except NotText as exc:
            skip(rel, f"not text: {exc}")
            continue
        if suffix == ".csv":
            for row in bad_rows:  # a bad row skips that row, not the file (even a file named alone)
                found.append(row)
                if skipped is not None:
                    skipped.append(row)
                else:
                    log.warning("ingest skipped %s: %s", row.path, row.reason)
            if not rows:
                skip(rel, "no data rows (a CSV needs a header row and at least one row)")
            yield from rows
            continue
        media = TEXT_SUFFIXES[suffix]
        text = html_to_text(raw) if media == "text/html" else raw
        if not text.strip():
            skip(rel, "no text")
            continue
        yield SourceDocument(external_id=rel, title=f.name, text=text, media_type=media)
    if not supported:
        raise BadInput(f"{path}: no {SUPPORTED} files found ({len(found)} skipped)")
