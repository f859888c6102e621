"""CSV sources: one document per data row (see :func:`csv_rows`)."""

from __future__ import annotations

import csv
import io

from cairn.app.corpus.read_limits import MAX_DOCUMENTS_PER_FILE, too_many_documents
from cairn.app.corpus.source_document import SkippedFile, SourceDocument
from cairn.app.corpus.text_bytes import NotText


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
        SourceTooLarge: more than :data:`MAX_DOCUMENTS_PER_FILE` data rows.
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
            if n > MAX_DOCUMENTS_PER_FILE:
                raise too_many_documents(n)
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
