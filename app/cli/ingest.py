from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.table import Table

from cairn.app.cli.common import (
    DataDir,
    WorkspaceOpt,
    _check_space,
    _fail,
    _open,
    _progress,
    _run,
    _settings,
    _workspace,
    console,
    index_progress,
    ingest_with_progress,
)
from cairn.app.core.config import Settings


def _scan(path: Path):
    """``(documents, skipped files)`` of an ingest source, read before any store is touched."""
    from cairn.app.core.errors import BadInput
    from cairn.app.corpus import SkippedFile, iter_sources

    skipped: list[SkippedFile] = []
    try:
        return list(iter_sources(path, skipped=skipped)), skipped
    except BadInput as exc:
        _fail(exc.message)


def _check_name(value: str, option: str) -> None:
    """Refuse a bad name given on the command line before any store or file is touched."""
    from cairn.app.core.errors import BadInput
    from cairn.app.core.text_rules import validate_name

    try:
        validate_name(value, option, 120)
    except BadInput as exc:
        _fail(exc.message)


async def _ingest(settings: Settings, docs, skipped, collection: str, workspace: str, lexical_only: bool):
    db, indexes = await _open(settings, with_vectors=not lexical_only)
    try:
        ws = await _workspace(db, workspace)
        with _progress() as progress:
            report = await ingest_with_progress(
                progress,
                db,
                indexes,
                workspace_id=ws.id,
                collection=collection,
                docs=docs,
                chunk_max_tokens=settings.chunk_max_tokens,
                skipped=skipped,
            )
        report.fields = await _extract_fields(db, settings, ws.id, collection)
        return report
    finally:
        if indexes is not None:
            indexes.close()
        await db.dispose()


async def _extract_fields(db, settings: Settings, workspace_id: str, collection: str):
    """Learned fields of the collection extracted from its new versions (None: no fields defined)."""
    from types import SimpleNamespace

    from cairn.app.cli.fields import _operator, extract_with_progress
    from cairn.app.corpus import list_collections
    from cairn.app.fields import FieldsRequest, list_fields

    async with db.session() as s:
        coll = next(c for c, _ in await list_collections(s, workspace_id=workspace_id) if c.name == collection)
    services = SimpleNamespace(db=db, settings=settings)
    if not await list_fields(services, _operator(workspace_id), FieldsRequest(coll.id)):
        return None
    return await extract_with_progress(services, _operator(workspace_id), coll.id)


def ingest(
    path: Path = typer.Argument(
        ...,
        help="A file or folder: .txt .md .html .jsonl (BEIR) .csv (a document per row), optionally .gz; .pdf .docx.",
    ),
    collection: str = typer.Option(..., "--collection", "-c", help="Collection name (created if missing)."),
    workspace: str = WorkspaceOpt,
    lexical_only: bool = typer.Option(
        False,
        "--lexical-only",
        help="Skip embeddings now; the next `cairn serve` start-up (or `cairn reindex`) embeds them.",
    ),
    data_dir: Path | None = DataDir,
    server: str | None = typer.Option(
        None,
        "--server",
        help="Send the files to the running server at this URL (POST /v1/documents) instead of the data dir.",
    ),
    token: str | None = typer.Option(
        None,
        "--token",
        envvar="CAIRN_TOKEN",
        help="With --server: a member token (cm_…) with document:write; default $CAIRN_TOKEN.",
    ),
) -> None:
    """Ingest documents (idempotent: unchanged documents are a no-op).

    Prints one JSON report on stdout; every skipped file (unsupported type, binary content
    such as a PDF renamed .txt, no text) is listed with its reason on stderr and in the report.
    With --server the files go to a running server one by one (app/cli/ingest_server.py;
    exit 1 when the server refused a file).
    """
    _check_name(collection, "--collection")
    if server is not None:
        from cairn.app.cli.ingest_server import ingest_to_server

        if lexical_only or data_dir is not None or workspace != "default":
            _fail("--server sends the files to that server: --lexical-only, --data-dir and --workspace do not apply")
        ingest_to_server(path, collection=collection, server=server, token=token)
        return
    settings = _settings(data_dir)
    _check_space(settings)
    docs, skipped = _scan(path)
    report = _run(_ingest(settings, docs, skipped, collection, workspace, lexical_only), command="ingest")
    table = Table(title=f"ingest {path} → {collection}")
    for col in ("docs", "created", "updated", "unchanged", "passages+", "bm25+", "vectors+", "skipped", "seconds"):
        table.add_column(col, justify="right")
    table.add_row(
        *(
            str(x)
            for x in (
                report.documents,
                report.created,
                report.updated,
                report.unchanged,
                report.new_passages,
                report.lexical_indexed,
                report.vector_indexed,
                len(report.skipped),
                report.seconds,
            )
        )
    )
    console.print(table)
    for sk in report.skipped:
        typer.echo(f"skipped {sk.path}: {sk.reason}", err=True)
    typer.echo(
        json.dumps(
            {
                "documents": report.documents,
                "created": report.created,
                "updated": report.updated,
                "unchanged": report.unchanged,
                "newPassages": report.new_passages,
                "lexicalIndexed": report.lexical_indexed,
                "vectorIndexed": report.vector_indexed,
                "seconds": report.seconds,
                "skipped": [{"path": sk.path, "reason": sk.reason} for sk in report.skipped],
                **(
                    {"fields": {"documents": report.fields.documents, "values": report.fields.values}}
                    if getattr(report, "fields", None) is not None
                    else {}
                ),
            },
            ensure_ascii=False,
        )
    )


def _drop_worker_indexes(settings) -> None:
    """Delete ``<data dir>/workers`` (the indexes of ``cairn serve --workers N``'s processes), so
    a reindex rebuilds every index: each process catches up from the database at its next start
    (reading the stored vectors). Called with the data dir lock held."""
    import shutil

    from cairn.app.core.datadir import WORKERS_DIR

    folder = Path(settings.data_dir) / WORKERS_DIR
    if settings.local_indexes and folder.is_dir():
        shutil.rmtree(folder)
        console.print(
            f"removed the worker processes' indexes ({folder}): `cairn serve --workers N` rebuilds them at start",
            soft_wrap=True,
        )


def reindex(
    lexical_only: bool = typer.Option(False, "--lexical-only", help="Rebuild only the BM25 index (no re-embedding)."),
    data_dir: Path | None = DataDir,
) -> None:
    """Rebuild the Whoosh and Qdrant indexes and the temporal statement index from SQL (also
    when an index cannot be read: it is re-created empty first)."""
    from cairn.app.temporal import rebuild_index

    settings = _settings(data_dir, require_store=True)

    async def go():
        db, indexes = await _open(settings, with_vectors=not lexical_only, rebuild_unreadable=True)
        try:
            with _progress() as progress:
                on_index = index_progress(progress)
                lex, vec = await indexes.reindex(db, progress=on_index, vectors=not lexical_only)
                versions = await rebuild_index(db, progress=on_index)
            _drop_worker_indexes(settings)  # under the data dir lock: no `serve --workers` runs
            return lex, vec, versions
        finally:
            indexes.close()
            await db.dispose()

    lex, vec, versions = _run(go(), command="reindex")
    console.print(
        f"reindexed {lex} passages lexically, {vec} as vectors, and the temporal statements of {versions} versions"
    )
