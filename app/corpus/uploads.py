"""Files uploaded to a running server (``POST /v1/documents``), ingested as ``cairn ingest`` does.

The transport (:mod:`app.http.documents`) streams each uploaded file to a spooled copy, counting
its bytes against the per-file and per-request limits (Settings ``upload_max_file_bytes``,
``upload_max_request_bytes``), and hands the copies here as an :class:`UploadRequest`. Each
file is then read by the one reader of ingested files (:func:`app.corpus.sources.file_sources`:
same formats, same per-format bounds, same skip reasons) and written by the one writer
(:func:`app.corpus.ingest.ingest_into`: same versioning, so an unchanged file is a no-op), one
file after the other, each file's passages indexed before the next is read.

A file's external id is the ``externalId`` sent with it (only when one file is sent) or its
file name as sent (a relative path such as ``notes/a.txt`` is kept: ``cairn ingest --server``
sends each file's path relative to its folder, so both ingest routes give one document the
same id); its format comes from the file name's last segment, as does its title when the
document states none (``cairn ingest``'s rule: :mod:`app.corpus.titles`). A CSV file's rows
are ``<id>#row=<n>``, a JSONL file's documents keep their ``_id`` (so ``externalId`` is refused
with one).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

from cairn.app.core.errors import BadInput
from cairn.app.core.text_rules import validate_identifier
from cairn.app.corpus import documents as docs
from cairn.app.corpus.documents import MAX_EXTERNAL_ID_CHARS
from cairn.app.corpus.ingest import ingest_into
from cairn.app.corpus.operations import CorpusServices
from cairn.app.corpus.source_document import SkippedFile, SourceDocument
from cairn.app.corpus.sources import file_sources
from cairn.app.governance import Principal

MAX_UPLOAD_FILES = 1_000
"""Files in one request (Starlette's own default for a form): a folder goes file by file
(``cairn ingest --server``), so this bounds a browser's multi-file pick, not a corpus."""

UploadStatus = Literal["ingested", "unchanged", "skipped"]


@dataclass(frozen=True)
class UploadedFile:
    """One uploaded file: its name as sent (the part's ``filename``) and its spooled copy."""

    file_name: str
    path: Path


@dataclass(frozen=True)
class UploadRequest:
    """One upload: the target collection's id, the files in the order sent, and the external id
    of a single file (None: each file's name)."""

    collection_id: str | None
    files: tuple[UploadedFile, ...]
    external_id: str | None = None


@dataclass(frozen=True)
class UploadResult:
    """What one uploaded file (or one document of it: a CSV row, a JSONL line) became.

    Attributes:
        file_name: The file's name as sent.
        status: ``ingested`` (a new document or version), ``unchanged`` (same text: no new
            version) or ``skipped`` (``reason`` says why).
        document_id / external_id / version_id: The document, its external id and its latest
            version (None when skipped; ``external_id`` is the skipped path then).
        passages: New passages this upload indexed (0 unchanged or skipped).
        reason: Why it was skipped (None otherwise): the reasons of ``cairn ingest``.
    """

    file_name: str
    status: UploadStatus
    document_id: str | None
    external_id: str | None
    version_id: str | None
    passages: int
    reason: str | None = None


@dataclass(frozen=True)
class UploadReport:
    """The results of one upload, in the order of the files (and of each file's documents)."""

    results: tuple[UploadResult, ...]

    def count(self, status: UploadStatus) -> int:
        """How many results have ``status``."""
        return sum(r.status == status for r in self.results)


def file_title(file_name: str) -> str:
    """The last segment of a file name as sent (``notes/a.txt`` → ``a.txt``; a Windows path's
    backslashes count as separators): what decides the format, and the title of a document
    that states none."""
    return PurePosixPath(file_name.replace("\\", "/")).name


def validate_upload_request(request: UploadRequest) -> None:
    """The rules of an upload, before anything is read or stored.

    Raises:
        BadInput: no ``collection``; no file; more than :data:`MAX_UPLOAD_FILES` files; a file
            without a name (``field="file"``) or sent twice; ``externalId`` with more than one
            file, with a JSONL file, or breaking the external-id rules (1–512 characters, one
            line, no control characters).
    """
    if not request.collection_id:
        raise BadInput("collection is required: the id of the collection to ingest into (col_…)", field="collection")
    validate_identifier(request.collection_id, "collection", 64)
    if not request.files:
        raise BadInput("no file: send each file as a multipart part named 'file' with its filename", field="file")
    if len(request.files) > MAX_UPLOAD_FILES:
        raise BadInput(
            f"{len(request.files)} files: at most {MAX_UPLOAD_FILES} in one request",
            field="file",
            limit=MAX_UPLOAD_FILES,
        )
    seen: set[str] = set()
    for f in request.files:
        if not file_title(f.file_name):
            raise BadInput(f"file name {f.file_name!r} has no name after its last '/'", field="file")
        if f.file_name in seen:
            raise BadInput(f"file {f.file_name!r} is sent twice: each file once per request", field="file")
        seen.add(f.file_name)
    if request.external_id is None:
        return
    if len(request.files) != 1:
        raise BadInput(
            f"externalId names one document: send it with exactly one file (got {len(request.files)})",
            field="externalId",
        )
    validate_identifier(request.external_id, "externalId", MAX_EXTERNAL_ID_CHARS)
    name = file_title(request.files[0].file_name).lower().removesuffix(".gz")
    if name.endswith(".jsonl"):
        raise BadInput(
            "externalId cannot be sent with a JSONL file: its documents take their '_id'", field="externalId"
        )


def _read(f: UploadedFile, rel: str) -> list[SourceDocument | SkippedFile]:
    """Everything :func:`file_sources` yields for one file; a JSONL file refused whole becomes
    one skip of the file with the refusal's message (the request's other files go on)."""
    try:
        return list(file_sources(f.path, rel=rel, name=file_title(f.file_name)))
    except BadInput as exc:
        return [SkippedFile(rel, exc.message, exc.extra.get("limit"))]


def _status(upsert_status: str) -> UploadStatus:
    return "unchanged" if upsert_status == "unchanged" else "ingested"


async def ingest_uploads(services: CorpusServices, principal: Principal, request: UploadRequest) -> UploadReport:
    """Ingest the uploaded files into a live collection of the caller (module doc).

    Each file is read in a worker thread (PDF text extraction is CPU-bound) and written and
    indexed before the next; the collection's ``on_new_version`` hooks (learned fields) run
    once at the end when anything was ingested.

    Raises:
        BadInput: :func:`validate_upload_request`. NotFound: no such live collection in the
            caller's workspace.
    """
    validate_upload_request(request)
    assert request.collection_id is not None  # validated
    async with services.db.session() as s:
        await docs.get_collection(s, workspace_id=principal.workspace_id, collection_id=request.collection_id)
    results: list[UploadResult] = []
    for f in request.files:
        started = time.perf_counter()
        items = await asyncio.to_thread(_read, f, request.external_id or f.file_name)
        found = [i for i in items if isinstance(i, SourceDocument)]
        report = await ingest_into(
            services.db,
            services.indexes,
            workspace_id=principal.workspace_id,
            collection_id=request.collection_id,
            documents=iter(found),
            chunk_max_tokens=services.settings.chunk_max_tokens,
            skipped=[i for i in items if isinstance(i, SkippedFile)],
            analyze=False,
        )
        seconds = (time.perf_counter() - started) / max(1, len(report.outcomes))
        for o in report.outcomes:
            r = o.result
            services.telemetry.record_ingest(status=r.status, passages=len(r.new_passage_ids), seconds=seconds)
            results.append(
                UploadResult(
                    f.file_name, _status(r.status), r.document_id, o.external_id, r.version_id, len(r.new_passage_ids)
                )
            )
        results.extend(UploadResult(f.file_name, "skipped", None, sk.path, None, 0, sk.reason) for sk in report.skipped)
    upload = UploadReport(tuple(results))
    if upload.count("ingested"):
        for hook in services.on_new_version:
            await hook(services, principal, request.collection_id)
    return upload
