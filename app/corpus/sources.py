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

Content decides, not the extension (:func:`app.corpus.text_bytes.decode_text`): a PDF, a
ZIP/.docx or an image renamed ``.txt`` is skipped and reported, never indexed as binary
garbage. Every skipped file (unsupported type, binary, no text, hidden folder, too large) is
reported with its reason.

Every file is read (and inflated) through a counter and refused as soon as it passes its bound
(:mod:`app.corpus.read_limits`, derived from the 2,000,000-character document limit): a
``.txt``/``.md`` text 8,000,000 bytes, HTML 64,000,000, any file 128,000,000, and 50,000
documents per JSONL or CSV file. A file named alone is refused with ``BadInput`` (naming it
and the ``limit``); in a folder it is skipped and reported, except that JSONL is refused as a
whole, as for a bad line.

The external id is the JSONL ``_id`` or the file's path relative to the ingested folder. The
title is the one the document states (HTML ``<title>``, Markdown heading, PDF and .docx
metadata: :mod:`app.corpus.titles`), else the file name; a JSONL record's ``title``; a CSV
row's ``<file name> row <n>``.
Writing them into a collection is :func:`app.corpus.ingest.ingest_documents`.
"""

from __future__ import annotations

import gzip
import io
import json
import logging
import os
import zlib
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

from cairn.app.core.errors import BadInput
from cairn.app.core.text_rules import validate_path
from cairn.app.corpus.binary_text import BINARY_SUFFIXES, BinaryTextError, binary_document
from cairn.app.corpus.csv_rows import csv_rows
from cairn.app.corpus.read_limits import (
    FILE_BOUND,
    MARKUP_BOUND,
    MAX_DOCUMENTS_PER_FILE,
    MAX_FILE_BYTES,
    MAX_MARKUP_BYTES,
    MAX_TEXT_BYTES,
    TEXT_BOUND,
    SourceTooLarge,
    read_capped,
    too_large,
    too_many_documents,
)
from cairn.app.corpus.source_document import SkippedFile, SourceDocument
from cairn.app.corpus.text_bytes import NotText, decode_text, detected
from cairn.app.corpus.titles import text_title, title_or_name
from cairn.retrieval.chunking import html_to_text

TEXT_SUFFIXES = {
    ".txt": "text/plain",
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".html": "text/html",
    ".htm": "text/html",
}
log = logging.getLogger("cairn.ingest")


def _suffixes(path: Path) -> tuple[str, bool]:
    name = path.name.lower()
    gz = name.endswith(".gz")
    if gz:
        name = name[:-3]
    return Path(name).suffix, gz


# the bound on a text file's bytes (read or inflated) by format: read_limits says why
_TEXT_LIMITS = {
    ".html": (MAX_MARKUP_BYTES, MARKUP_BOUND, "the HTML"),
    ".htm": (MAX_MARKUP_BYTES, MARKUP_BOUND, "the HTML"),
    ".csv": (MAX_FILE_BYTES, FILE_BOUND, "the file"),
}


def _read_bytes(path: Path, gz: bool, suffix: str) -> bytes:
    """The file's bytes (inflated when ``gz``), read through a counter: at most the bound of
    its format (:data:`_TEXT_LIMITS`; a ``.txt``/``.md`` text :data:`MAX_TEXT_BYTES`).

    Raises:
        NotText: not gzip data. SourceTooLarge: past the bound.
    """
    limit, bound, what = _TEXT_LIMITS.get(suffix, (MAX_TEXT_BYTES, TEXT_BOUND, "the text"))
    if not gz:
        with open(path, "rb") as fh:
            return read_capped(fh, limit, what, bound)
    try:
        with gzip.open(path, "rb") as fh:
            return read_capped(fh, limit, what, bound)
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
        raise NotText(f"not gzip data ({exc})") from None


def _parse_time(value: object, where: str) -> datetime | None:
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
    """Raw lines, each read with a bound (a line past :data:`MAX_MARKUP_BYTES` comes back as
    its first ``MAX_MARKUP_BYTES + 1`` bytes, which :func:`_jsonl` refuses); the first 8 KiB are
    sniffed first (NotText for a PDF, an image, an archive, NUL bytes; invalid UTF-8 in a text
    file is left to :func:`_jsonl`, which names the line).

    Raises:
        NotText: binary, or not gzip data. SourceTooLarge: past :data:`MAX_FILE_BYTES` in all.
    """
    opener = gzip.open if gz else open
    try:
        with opener(path, "rb") as fh:
            head = fh.read(8192)
            binary = head.startswith(b"%PDF-") or b"\x00" in head
            try:
                head.decode("utf-8")
            except UnicodeDecodeError:  # a stray byte is reported with its line number below
                binary = binary or detected(head) is not None
            if binary:
                decode_text(head)  # raises NotText naming the type
            if head and not head.endswith(b"\n"):
                head += fh.readline(MAX_MARKUP_BYTES + 1)
            total = len(head)
            yield from io.BytesIO(head)
            while line := fh.readline(MAX_MARKUP_BYTES + 1):
                total += len(line)
                if total > MAX_FILE_BYTES:
                    raise too_large("the file", MAX_FILE_BYTES, total, FILE_BOUND)
                yield line
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
        raise NotText(f"not gzip data ({exc})") from None


def _jsonl(path: Path, gz: bool, name: str) -> Iterator[SourceDocument]:
    """Documents of a JSONL file. Raises BadInput for a bad line (``<file>:<line>``), a line past
    :data:`MAX_MARKUP_BYTES`, or a file past :data:`MAX_FILE_BYTES` or
    :data:`MAX_DOCUMENTS_PER_FILE` (with ``limit``): the file is refused as a whole."""
    count = 0
    try:
        for n, raw in enumerate(_jsonl_lines(path, gz), start=1):
            where = f"{name}:{n}"
            if len(raw) > MAX_MARKUP_BYTES:
                err = too_large("the line", MAX_MARKUP_BYTES, len(raw), MARKUP_BOUND)
                raise BadInput(f"{where}: {err}", field="path", limit=MAX_MARKUP_BYTES)
            try:
                line = raw.decode("utf-8-sig" if n == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                msg = f"{where}: not UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})"
                raise BadInput(msg) from None
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise BadInput(f"{where}: not JSON ({exc.msg})") from None
            if not isinstance(row, dict) or "_id" not in row or "text" not in row:
                raise BadInput(f"{where}: expected an object with '_id' and 'text' (BEIR shape)")
            count += 1
            if count > MAX_DOCUMENTS_PER_FILE:
                raise too_many_documents(count)
            yield SourceDocument(
                external_id=str(row["_id"]),
                title=" ".join(str(row.get("title") or "").split()),  # a title is one line
                text=str(row["text"]),
                media_type="text/plain",
                valid_from=_parse_time(row.get("validFrom"), where),
                valid_to=_parse_time(row.get("validTo"), where),
            )
    except SourceTooLarge as exc:
        raise BadInput(f"{name}: {exc}", field="path", limit=exc.limit) from None


SUPPORTED = ".txt .md .markdown .html .htm .jsonl .csv (optionally .gz), .pdf .docx"


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


def is_supported(name: str) -> bool:
    """Whether ingest reads a file of this name (by its extension: :data:`SUPPORTED`); its
    content still decides whether it is text (module doc)."""
    suffix, gz = _suffixes(Path(name))
    return (suffix in BINARY_SUFFIXES and not gz) or suffix in TEXT_SUFFIXES or suffix in (".jsonl", ".csv")


def unsupported_reason(name: str) -> str:
    """The skip reason of a file :func:`is_supported` refuses (``unsupported type .mp4; supported: …``)."""
    suffix, _ = _suffixes(Path(name))
    return f"unsupported type {suffix or '(no extension)'}; supported: {SUPPORTED}"


def select_files(path: Path) -> tuple[list[tuple[Path, str]], list[SkippedFile]]:
    """The files ``cairn ingest`` opens under ``path`` (a file, or a folder read recursively in
    sorted path order), each with its path relative to the folder (its external id; a file
    named alone: its name), and what is passed over without opening: hidden folders and
    symbolic links, each with its reason. Unsupported types are among the files
    (:func:`is_supported` tells them; :func:`file_sources` skips them).

    Raises:
        BadInput: the path does not exist (or is not a valid path).
    """
    validate_path(str(path), "path")
    path = Path(path)
    if not path.exists():
        raise BadInput(f"{path} does not exist")
    single = path.is_file()
    passed_over: list[SkippedFile] = []
    files = [path] if single else _files(path, passed_over)
    root = path.parent if single else path
    return [(f, f.relative_to(root).as_posix()) for f in files], passed_over


def file_sources(path: Path, *, rel: str, name: str) -> Iterator[SourceDocument | SkippedFile]:
    """The documents of one file, or why it (or one CSV row of it) is skipped.

    The one reader of an ingested file, for ``cairn ingest`` (:func:`iter_sources`) and for
    files uploaded to a running server (:func:`app.corpus.uploads.ingest_uploads`).

    Args:
        path: Where the bytes are (the file itself, or an uploaded file's spooled copy).
        rel: The file's external id (a CSV row's is ``<rel>#row=<n>``; a JSONL line's its ``_id``).
        name: The file's name: its extension decides the format (``.gz`` included), it is the
            title of a document that states none (:mod:`app.corpus.titles`) and names CSV
            rows' titles.

    Yields:
        :class:`SourceDocument` values, or a :class:`SkippedFile` whose ``path`` is ``rel``
        (the whole file: unsupported type, not text, no text, too large — with ``limit``) or
        ``<rel>#row=<n>`` (one bad CSV row; the other rows are still read).

    Raises:
        BadInput: a JSONL file with a bad line, or past its size or document bound (refused whole).
    """
    suffix, gz = _suffixes(Path(name))
    if not is_supported(name):
        yield SkippedFile(rel, unsupported_reason(name))
        return
    if suffix in BINARY_SUFFIXES and not gz:
        try:
            with open(path, "rb") as fh:
                binary = binary_document(suffix, read_capped(fh, MAX_FILE_BYTES, "the file", FILE_BOUND))
        except BinaryTextError as exc:
            yield SkippedFile(rel, str(exc))
            return
        except SourceTooLarge as exc:
            yield SkippedFile(rel, str(exc), exc.limit)
            return
        if not binary.text.strip():
            yield SkippedFile(rel, "no text")
            return
        title = title_or_name(binary.title, name)
        yield SourceDocument(external_id=rel, title=title, text=binary.text, media_type=BINARY_SUFFIXES[suffix])
        return
    try:
        if suffix == ".jsonl":
            yield from _jsonl(path, gz, name)
            return
        raw = decode_text(_read_bytes(path, gz, suffix))
        if suffix == ".csv":
            bad_rows: list[SkippedFile] = []
            rows = csv_rows(raw, rel, name, bad_rows)
    except NotText as exc:
        yield SkippedFile(rel, f"not text: {exc}")
        return
    except SourceTooLarge as exc:
        yield SkippedFile(rel, str(exc), exc.limit)
        return
    if suffix == ".csv":
        yield from bad_rows  # a bad row skips that row, not the file (even a file named alone)
        if not rows:
            yield SkippedFile(rel, "no data rows (a CSV needs a header row and at least one row)")
        yield from rows
        return
    media = TEXT_SUFFIXES[suffix]
    text = html_to_text(raw) if media == "text/html" else raw
    if not text.strip():
        yield SkippedFile(rel, "no text")
        return
    yield SourceDocument(
        external_id=rel, title=title_or_name(text_title(media, raw), name), text=text, media_type=media
    )


def iter_sources(path: Path, skipped: list[SkippedFile] | None = None) -> Iterator[SourceDocument]:
    """Documents under ``path`` (file or folder), in a stable order.

    Every file is sniffed: binary content (a PDF, a ZIP/.docx, an image, NUL bytes, invalid
    UTF-8) is never indexed, whatever its extension. In a folder, such files, unsupported
    types, files without text and hidden folders are skipped and each is reported. Files are
    chosen by :func:`select_files` and read by :func:`file_sources`.

    Args:
        path: A file or a folder (read recursively).
        skipped: Receives one :class:`SkippedFile` (path relative to the folder, reason) per
            skipped file; None logs each at WARNING on ``cairn.ingest`` instead.

    Raises:
        BadInput: the path does not exist; a single file is unsupported or not text; a
            folder holds no supported file; a JSONL line is bad.
    """
    files, passed_over = select_files(path)
    path = Path(path)
    single = path.is_file()

    def report(sk: SkippedFile) -> None:
        if skipped is not None:
            skipped.append(sk)
        else:
            log.warning("ingest skipped %s: %s", sk.path, sk.reason)

    for sk in passed_over:
        report(sk)
    for f, rel in files:
        for item in file_sources(f, rel=rel, name=f.name):
            if isinstance(item, SourceDocument):
                yield item
                continue
            if single and item.path == rel:  # a file named alone is refused, not skipped
                raise BadInput(f"{path.name}: {item.reason}", field="path" if item.limit else None, limit=item.limit)
            report(item)
    if not any(is_supported(f.name) for f, _ in files):
        unsupported = sum(not is_supported(f.name) for f, _ in files)
        raise BadInput(f"{path}: no {SUPPORTED} files found ({len(passed_over) + unsupported} skipped)")
