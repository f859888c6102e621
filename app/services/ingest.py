"""Ingest from files, folders and JSONL into a collection (idempotent).

Sources (``iter_sources``):
- ``.txt`` / ``.md`` / ``.markdown``: the text as is (Markdown is readable as text);
- ``.html`` / ``.htm``: visible text (:func:`retrieval.chunking.html_to_text`);
- ``.jsonl`` (BEIR shape ``{"_id", "title", "text"}``, optional ``validFrom``/``validTo``
  ISO-8601), one document per line;
- any of these ``.gz``-compressed; folders recursively, in sorted path order.

The external id is the JSONL ``_id`` or the file's path relative to the ingested folder.
Unchanged documents are a no-op, changed text makes a new version, and passage ids are
stable for unchanged content (see :mod:`app.services.documents`).
"""

from __future__ import annotations

import gzip
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from app.db import Database
from app.errors import BadInput
from app.services.documents import get_or_create_collection, upsert_document
from retrieval.chunking import html_to_text

TEXT_SUFFIXES = {".txt": "text/plain", ".md": "text/markdown", ".markdown": "text/markdown",
                 ".html": "text/html", ".htm": "text/html"}
BATCH_DOCS = 200


@dataclass(frozen=True)
class SourceDocument:
    """One document read from a source, before versioning."""

    external_id: str
    title: str
    text: str
    media_type: str = "text/plain"
    valid_from: datetime | None = None
    valid_to: datetime | None = None


@dataclass
class IngestReport:
    """Counts of one ingest run (documents and passages) and its wall time in seconds."""

    created: int = 0
    updated: int = 0
    unchanged: int = 0
    new_passages: int = 0
    lexical_indexed: int = 0
    vector_indexed: int = 0
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)

    @property
    def documents(self) -> int:
        """Documents seen."""
        return self.created + self.updated + self.unchanged


def _suffixes(path: Path) -> tuple[str, bool]:
    name = path.name.lower()
    gz = name.endswith(".gz")
    if gz:
        name = name[:-3]
    return Path(name).suffix, gz


def _read_text(path: Path, gz: bool) -> str:
    data = gzip.open(path, "rb").read() if gz else path.read_bytes()
    return data.decode("utf-8", errors="replace")


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


def _jsonl(path: Path, gz: bool) -> Iterator[SourceDocument]:
    opener = gzip.open if gz else open
    with opener(path, "rt", encoding="utf-8") as fh:
        for n, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            where = f"{path.name}:{n}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise BadInput(f"{where}: not JSON ({exc.msg})") from None
            if not isinstance(row, dict) or "_id" not in row or "text" not in row:
                raise BadInput(f"{where}: expected an object with '_id' and 'text' (BEIR shape)")
            yield SourceDocument(
                external_id=str(row["_id"]),
                title=str(row.get("title") or ""),
                text=str(row["text"]),
                media_type="text/plain",
                valid_from=_parse_time(row.get("validFrom"), where),
                valid_to=_parse_time(row.get("validTo"), where),
            )


def iter_sources(path: Path) -> Iterator[SourceDocument]:
    """Documents under ``path`` (file or folder), in a stable order.

    Raises:
        BadInput: the path does not exist, has an unsupported type, or a JSONL line is bad.
    """
    path = Path(path)
    if not path.exists():
        raise BadInput(f"{path} does not exist")
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    root = path.parent if path.is_file() else path
    supported = False
    for f in files:
        suffix, gz = _suffixes(f)
        if suffix == ".jsonl":
            supported = True
            yield from _jsonl(f, gz)
        elif suffix in TEXT_SUFFIXES:
            supported = True
            raw = _read_text(f, gz)
            media = TEXT_SUFFIXES[suffix]
            text = html_to_text(raw) if media == "text/html" else raw
            if not text.strip():
                continue
            rel = f.relative_to(root).as_posix()
            yield SourceDocument(external_id=rel, title=f.name, text=text, media_type=media)
        elif path.is_file():
            raise BadInput(f"{f.name}: unsupported file type; use .txt .md .html .jsonl (optionally .gz)")
    if not supported:
        raise BadInput(f"{path}: no .txt .md .html or .jsonl files found")


async def ingest_documents(
    db: Database,
    indexes,
    *,
    workspace_id: str,
    collection: str,
    documents: Iterator[SourceDocument],
    chunk_max_tokens: int = 200,
    on_document: Callable[[int], None] | None = None,
    on_index: Callable[[str, int, int], None] | None = None,
) -> IngestReport:
    """Write documents (batches of 200 per transaction), then bring the indexes up to date.

    Returns:
        An :class:`IngestReport`.
    """
    report = IngestReport()
    started = time.perf_counter()
    async with db.session() as s:
        coll = await get_or_create_collection(s, workspace_id=workspace_id, name=collection)
    batch: list[SourceDocument] = []

    async def flush() -> None:
        async with db.session() as s:
            for d in batch:
                r = await upsert_document(
                    s, workspace_id=workspace_id, collection_id=coll.id, external_id=d.external_id,
                    title=d.title, text=d.text, media_type=d.media_type, valid_from=d.valid_from,
                    valid_to=d.valid_to, chunk_max_tokens=chunk_max_tokens,
                )
                setattr(report, r.status, getattr(report, r.status) + 1)
                report.new_passages += len(r.new_passage_ids)
        if on_document:
            on_document(len(batch))
        batch.clear()

    for doc in documents:
        if not doc.text.strip():
            report.errors.append(f"{doc.external_id}: empty text, skipped")
            continue
        batch.append(doc)
        if len(batch) >= BATCH_DOCS:
            await flush()
    if batch:
        await flush()
    if indexes is not None:
        report.lexical_indexed, report.vector_indexed = await indexes.index_pending(db, progress=on_index)
        await db.analyze()
    report.seconds = round(time.perf_counter() - started, 2)
    return report
