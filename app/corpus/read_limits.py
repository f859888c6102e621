"""How many bytes ingest inflates from one file, counted while reading (never after).

A 0.69 MB ``.docx`` inflated to 330 MB (1.2 GB RSS) before the 2,000,000-character document
limit (:data:`app.corpus.documents.MAX_DOCUMENT_CHARS`) refused its text; a small gzip JSONL
made 100,000 documents. Every compressed or container format is therefore read through a
counter and refused as soon as it passes a bound derived from that limit:

- :data:`MAX_TEXT_BYTES` = 4 × 2,000,000 = 8,000,000 bytes for one document's text (a
  ``.txt``/``.md`` file): UTF-8, UTF-16 and UTF-32 never spend more than 4 bytes
  on a character, so more bytes cannot be a document within the limit (exact: no admissible
  document is refused; a byte-order mark is allowed on top). A JSONL line may take 12 bytes
  per character (``\\ud83d\\ude00`` escapes), so it gets the markup bound.
- :data:`MAX_MARKUP_BYTES` = 8 × 8,000,000 = 64,000,000 bytes for one document's markup (an
  HTML file, the XML parts of a ``.docx``, a PDF's decoded content streams, a JSONL line):
  formats whose stored text is a fraction of their bytes. Word writes ~100–300 bytes of run
  and paragraph markup (``w:rsid…``, ``w:rPr``) around runs of tens of characters, so 8× the
  largest text leaves room for real documents, while a bomb stops at 64 MB instead of 330 MB.
- :data:`MAX_FILE_BYTES` = 128,000,000 bytes for any one file, read or inflated (a PDF or
  ``.docx`` with its images, a whole JSONL or CSV file): ``cairn ingest`` holds a source's
  documents in memory before writing them; SciFact's corpus (5,183 documents) is 8.0 MB, so
  this is 16× the largest corpus in ``bench/``.
- :data:`MAX_DOCUMENTS_PER_FILE` = 50,000 documents from one JSONL or CSV file (10× SciFact);
  a larger corpus is split into several files (``split -l 50000``) in a folder.
- :data:`MAX_PDF_PAGES` = 10,000 pages (2,000,000 characters at the ~2,000 of a full page are
  1,000 pages).

A refusal is :class:`SourceTooLarge`: its message names what passed which bound, ``limit``
is the bound, ``inflated`` what was read when the reader stopped (one byte, or one
:data:`CHUNK`, past the bound at most; 0 when declared sizes already refuse it).
"""

from __future__ import annotations

import struct
import zipfile
import zlib
from typing import Protocol

from cairn.app.corpus.documents import MAX_DOCUMENT_CHARS

MAX_TEXT_BYTES = 4 * MAX_DOCUMENT_CHARS
MAX_MARKUP_BYTES = 8 * MAX_TEXT_BYTES
MAX_FILE_BYTES = 128_000_000
MAX_DOCUMENTS_PER_FILE = 50_000
MAX_PDF_PAGES = 10_000
CHUNK = 1 << 20  # bytes inflated per step when a ZIP part is counted
_BOM = 4  # a byte-order mark is no character: a UTF-32 text of 2,000,000 characters is 8,000,004 bytes


class SourceTooLarge(ValueError):
    """A file inflates (or counts) past a bound of this module.

    Attributes:
        limit: The bound passed (bytes, or documents/pages where the message says so).
        inflated: What had been read when the reader stopped (same unit).
    """

    def __init__(self, message: str, *, limit: int, inflated: int) -> None:
        super().__init__(message)
        self.limit = limit
        self.inflated = inflated


TEXT_BOUND = f"4 bytes for each of a document's at most {MAX_DOCUMENT_CHARS:,} characters"
MARKUP_BOUND = f"8× the bytes of a document's at most {MAX_DOCUMENT_CHARS:,} characters"
FILE_BOUND = "the most one ingested file may read or inflate"


def too_large(what: str, limit: int, inflated: int, bound: str) -> SourceTooLarge:
    """The refusal of ``what`` (e.g. "the text") for passing ``limit`` bytes; ``bound`` says
    where the limit comes from (:data:`TEXT_BOUND`, :data:`MARKUP_BOUND`, :data:`FILE_BOUND`)."""
    return SourceTooLarge(
        f"too large: {what} takes more than {limit:,} bytes ({bound})", limit=limit, inflated=inflated
    )


def too_many_documents(count: int) -> SourceTooLarge:
    """The refusal of a JSONL or CSV file with ``count`` > :data:`MAX_DOCUMENTS_PER_FILE` documents."""
    n = MAX_DOCUMENTS_PER_FILE
    return SourceTooLarge(
        f"too many documents: more than {n:,} in one file (the per-file limit); split it into files "
        f"of at most {n:,} lines or rows (e.g. split -l {n}) and ingest their folder",
        limit=n,
        inflated=count,
    )


class ByteReader(Protocol):
    """A binary file open for reading (a plain file, a ``gzip.GzipFile``)."""

    def read(self, size: int = -1, /) -> bytes: ...


def read_capped(fh: ByteReader, limit: int, what: str, bound: str) -> bytes:
    """All of ``fh`` (a plain or gzip file) if it holds at most ``limit`` bytes; a text bound
    (:data:`MAX_TEXT_BYTES`) also admits a byte-order mark. One bounded read: a gzip file
    inflates at most one byte past the bound (``GzipFile.read(n)`` inflates with an output
    limit), a plain file is read no further.

    Raises:
        SourceTooLarge: more than ``limit`` bytes (``inflated`` = what was read).
    """
    cap = limit + _BOM if limit == MAX_TEXT_BYTES else limit
    data = fh.read(cap + 1)
    if len(data) > cap:
        raise too_large(what, limit, len(data), bound)
    return data


def check_zip(data: bytes, z: zipfile.ZipFile, what: str) -> int:
    """Check that the ZIP ``z`` (opened on ``data``) stays within its bounds before any parser
    inflates it; returns the bytes its parts really inflate to.

    XML parts (``*.xml``, ``*.rels``: what python-docx parses) may inflate to
    :data:`MAX_MARKUP_BYTES` together, all parts (images too) to :data:`MAX_FILE_BYTES`.
    Declared sizes (the central directory's ``file_size``) are checked first, refusing a bomb
    before anything is inflated. Declared sizes can lie, and ``zipfile``'s whole-member
    ``read()`` (python-docx's) inflates a member's entire compressed data before cutting it to
    the declared size (and a forged CRC of the cut passes), so each part's compressed bytes are
    then inflated here, :data:`CHUNK` by chunk with ``zlib``, and a part that inflates past its
    declared size is refused at that point: what a parser then inflates is at most the checked
    declared total. Only stored and deflated, unencrypted parts are accepted: the Office Open
    XML formats use nothing else, and ``zipfile`` inflates bzip2/LZMA without an output bound.

    Raises:
        SourceTooLarge: the declared sizes pass a bound.
        zipfile.BadZipFile: a part inflates past its declared size, its data is cut or corrupt,
            or its method is not stored/deflated, or it is encrypted.
    """
    infos = z.infolist()
    for info in infos:
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED) or info.flag_bits & 0x1:
            raise zipfile.BadZipFile(f"{info.filename} is encrypted or compressed with method {info.compress_type}")
    xml = [i for i in infos if i.filename.endswith((".xml", ".rels"))]
    for group, limit, bound in ((xml, MAX_MARKUP_BYTES, MARKUP_BOUND), (infos, MAX_FILE_BYTES, FILE_BOUND)):
        declared = sum(i.file_size for i in group)
        if declared > limit:
            raise too_large(f"{what} (declared {declared:,} bytes)", limit, 0, bound)
    return sum(_inflated_size(data, info) for info in infos)


def _inflated_size(data: bytes, info: zipfile.ZipInfo) -> int:
    """The bytes part ``info`` of the ZIP ``data`` inflates to, counted chunk by chunk.

    Raises:
        zipfile.BadZipFile: more than its declared ``file_size`` (refused at the first chunk
            past it), fewer, or no local header / corrupt deflate data where it should be.
    """
    off = info.header_offset
    if data[off : off + 4] != b"PK\x03\x04":
        raise zipfile.BadZipFile(f"{info.filename}: no local header at offset {off}")
    name_len, extra_len = struct.unpack_from("<HH", data, off + 26)
    start = off + 30 + name_len + extra_len
    raw = memoryview(data)[start : start + info.compress_size]
    if info.compress_type == zipfile.ZIP_STORED:
        size = len(raw)
    else:
        inflater, size, pending = zlib.decompressobj(-zlib.MAX_WBITS), 0, bytes(raw)
        while not inflater.eof:
            try:
                out = inflater.decompress(pending, CHUNK)
            except zlib.error as exc:
                raise zipfile.BadZipFile(f"{info.filename}: corrupt deflate data ({exc})") from None
            size += len(out)
            if size > info.file_size:
                break
            pending = inflater.unconsumed_tail
            if not out and not pending:
                break
    if size != info.file_size:
        raise zipfile.BadZipFile(
            f"{info.filename} inflates to {'more' if size > info.file_size else 'less'} than its declared "
            f"{info.file_size:,} bytes"
        )
    return size
