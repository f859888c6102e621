"""Ingest into a collection (idempotent): :func:`ingest_documents` writes
:class:`~app.corpus.sources.SourceDocument` values read by :func:`~app.corpus.sources.iter_sources`
(files, folders, JSONL, CSV rows, PDF/.docx; see :mod:`app.corpus.sources` for the formats and
what is skipped), 200 per transaction, then brings the indexes up to date.

Unchanged documents are a no-op, changed text makes a new version, and passage ids are
stable for unchanged content (see :mod:`app.corpus.documents`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from cairn.app.core.db import Database
from cairn.app.core.errors import BadInput
from cairn.app.corpus.documents import (
    UpsertResult,
    get_or_create_collection,
    upsert_document,
    validate_document_input,
)
from cairn.app.corpus.indexing import SearchIndexes
from cairn.app.corpus.sources import SkippedFile, SourceDocument

BATCH_DOCS = 200


@dataclass(frozen=True)
class DocumentOutcome:
    """What one ingested document became: its external id and the upsert's result."""

    external_id: str
    result: UpsertResult


@dataclass
class IngestReport:
    """Counts of one ingest run (documents and passages), its wall time in seconds, every
    skipped file or document with the reason, and each written document's outcome in order
    (``outcomes``: ids, version, new passages)."""

    created: int = 0
    updated: int = 0
    unchanged: int = 0
    new_passages: int = 0
    lexical_indexed: int = 0
    vector_indexed: int = 0
    seconds: float = 0.0
    skipped: list[SkippedFile] = field(default_factory=list)
    outcomes: list[DocumentOutcome] = field(default_factory=list)

    @property
    def documents(self) -> int:
        """Documents seen."""
        return self.created + self.updated + self.unchanged


async def ingest_documents(
    db: Database,
    indexes: SearchIndexes | None,
    *,
    workspace_id: str,
    collection: str,
    documents: Iterator[SourceDocument],
    chunk_max_tokens: int = 200,
    on_document: Callable[[int], None] | None = None,
    on_index: Callable[[str, int, int], None] | None = None,
    skipped: Sequence[SkippedFile] = (),
) -> IngestReport:
    """Write documents into the collection named ``collection`` (created if missing; batches of
    200 per transaction), then bring the indexes up to date (:func:`ingest_into`).

    Args:
        skipped: Files the source already skipped (:func:`iter_sources`), carried into the
            report; documents with empty text are added to them.

    Returns:
        An :class:`IngestReport`.

    Raises:
        BadInput: a bad or deleted collection name.
    """
    async with db.session() as s:
        coll = await get_or_create_collection(s, workspace_id=workspace_id, name=collection)
    return await ingest_into(
        db,
        indexes,
        workspace_id=workspace_id,
        collection_id=coll.id,
        documents=documents,
        chunk_max_tokens=chunk_max_tokens,
        on_document=on_document,
        on_index=on_index,
        skipped=skipped,
    )


async def ingest_into(
    db: Database,
    indexes: SearchIndexes | None,
    *,
    workspace_id: str,
    collection_id: str,
    documents: Iterator[SourceDocument],
    chunk_max_tokens: int = 200,
    on_document: Callable[[int], None] | None = None,
    on_index: Callable[[str, int, int], None] | None = None,
    skipped: Sequence[SkippedFile] = (),
    analyze: bool = True,
) -> IngestReport:
    """Write documents into an existing collection (batches of 200 per transaction), then index
    every new passage before returning: ``cairn ingest``'s writer, and the upload route's
    (:func:`app.corpus.uploads.ingest_uploads`).

    A document with empty text, or whose external id or title breaks the name rules, is
    skipped and reported (it does not stop the run).

    Args:
        indexes: The search indexes (None: write SQL only; the next start-up indexes).
        skipped: Files the source already skipped, carried into the report.
        analyze: Refresh the database's planner statistics afterwards (a bulk load; off for
            one uploaded file).

    Returns:
        An :class:`IngestReport` (``outcomes`` in the order the documents came).
    """
    report = IngestReport(skipped=list(skipped))
    started = time.perf_counter()
    batch: list[SourceDocument] = []
    written: list[str] = []

    async def flush() -> None:
        async with db.session() as s:
            for d in batch:
                r = await upsert_document(
                    s,
                    workspace_id=workspace_id,
                    collection_id=collection_id,
                    external_id=d.external_id,
                    title=d.title,
                    text=d.text,
                    media_type=d.media_type,
                    valid_from=d.valid_from,
                    valid_to=d.valid_to,
                    chunk_max_tokens=chunk_max_tokens,
                )
                setattr(report, r.status, getattr(report, r.status) + 1)
                report.new_passages += len(r.new_passage_ids)
                report.outcomes.append(DocumentOutcome(d.external_id, r))
                written.extend(r.new_passage_ids)
        if on_document:
            on_document(len(batch))
        batch.clear()

    for doc in documents:
        if not doc.text.strip():
            report.skipped.append(SkippedFile(doc.external_id, "empty text"))
            continue
        try:  # one bad name (a control character in a file name) skips that document, not the run
            validate_document_input(doc.external_id, doc.title, doc.text, doc.valid_from, doc.valid_to)
        except BadInput as exc:
            report.skipped.append(SkippedFile(doc.external_id.encode("unicode_escape").decode("ascii"), exc.message))
            continue
        batch.append(doc)
        if len(batch) >= BATCH_DOCS:
            await flush()
    if batch:
        await flush()
    if indexes is not None:
        # this run's passages by id (not only by the log's cursor, which a long transaction
        # anywhere on a PostgreSQL server holds back): everything written is indexed on return
        report.lexical_indexed, report.vector_indexed = await indexes.index_passages(db, written, progress=on_index)
        if analyze:
            await db.analyze()
    report.seconds = round(time.perf_counter() - started, 2)
    return report
