"""Shared plumbing of the ``cairn`` command: settings, one-line errors, consoles, store access.

Errors are one plain line on stderr (``error: …``, exit code 2) — never rich markup, boxes
or wrapping, so what an operator (or a test) reads does not depend on the terminal width.
"""

from __future__ import annotations

import asyncio
import os
import sys
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from cairn.app.core.config import Settings, SettingsInvalid, load_settings

if TYPE_CHECKING:
    from cairn.app.core.db import Database


@dataclass(frozen=True)
class DatabaseOnly:
    """An :class:`app.governance.DatabasePort` for SQL-only commands (context sets), which must
    not open the search indexes a running server holds."""

    db: Database


def _typer(help: str, **kw) -> typer.Typer:
    """A Typer group with plain (click) help and errors."""
    # rich_markup_mode=None: click's plain usage errors and help (no width-dependent boxes);
    # pretty_exceptions_enable=False: a bug shows Python's plain traceback.
    return typer.Typer(help=help, no_args_is_help=True, rich_markup_mode=None, pretty_exceptions_enable=False, **kw)


def _console(*, stderr: bool = True) -> Console:
    """A rich console; when the stream is not a terminal, a fixed width (COLUMNS is ignored)."""
    stream = sys.stderr if stderr else sys.stdout
    return Console(stderr=stderr, width=None if stream.isatty() else 160)


console = _console()


def package_version() -> str:
    """The installed ``cairn`` distribution's version (``importlib.metadata``)."""
    try:
        return version("cairn")
    except PackageNotFoundError:  # pragma: no cover - running from a tree that was never installed
        return "unknown (not installed)"


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"cairn {package_version()}")
        raise typer.Exit()


def _fail(message: str) -> NoReturn:
    """Print ``error: message`` as one plain line on stderr and exit with code 2."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code=2)


def _settings(data_dir: Path | None, *, require_store: bool = False) -> Settings:
    """Settings from the environment (+ ``--data-dir``); a bad setting is one line, exit 2.

    Args:
        require_store: refuse (exit 2) when there is no Cairn store there yet: for commands
            that only read or change existing rows.
    """
    try:
        settings = load_settings(data_dir=data_dir) if data_dir else load_settings()
    except SettingsInvalid as exc:
        _fail(exc.message)
    if require_store:
        from cairn.app.core.datadir import store_exists

        try:
            exists = store_exists(settings)
        except Exception as exc:  # noqa: BLE001 - an unreachable database: one line, not a traceback
            _fail(f"cannot open the database {_where(settings)}: {exc}")
        if not exists:
            _fail(
                f"no Cairn data in {_where(settings)}: run `cairn ingest` or `cairn serve` first, or check --data-dir"
            )
    return settings


def _where(settings: Settings) -> str:
    """The store's location without credentials (data dir, or the database URL's host/db)."""
    if not settings.database_url:
        return str(settings.data_dir)
    from sqlalchemy import make_url

    return make_url(settings.database_url).render_as_string(hide_password=True)


async def _open(settings: Settings, *, with_vectors: bool | None = True, rebuild_unreadable: bool = False):
    """``(db, indexes)``: migrated database; indexes (taking the data dir lock first) unless
    ``with_vectors`` is None (SQL-only commands, safe beside a running server);
    ``rebuild_unreadable``: a damaged index is re-created empty (``reindex``), not refused."""
    from cairn.app.core.db import Database
    from cairn.app.core.migrate import upgrade_database
    from cairn.app.corpus import open_indexes

    indexes = None
    if with_vectors is not None:
        indexes = open_indexes(settings, with_vectors=with_vectors, rebuild_unreadable=rebuild_unreadable)
    try:
        await asyncio.to_thread(upgrade_database, settings.resolved_database_url)
        db = Database(settings.resolved_database_url)
    except BaseException:
        if indexes is not None:
            indexes.close()
        raise
    return db, indexes


async def _workspace(db, name: str, *, create: bool | None = None):
    """The workspace called ``name``.

    ``create``: True creates it when missing (``members add``); None (default) creates only
    the implicit ``default`` workspace, so a mistyped ``--workspace`` is refused instead of
    silently making a new tenant; False creates nothing.
    """
    from cairn.app import identity

    async with db.session() as s:
        ws = await identity.get_workspace_by_name(s, name)
        if ws is None:
            if create is False or (create is None and name != "default"):
                _fail(f"no workspace called {name!r}; create it with `cairn workspaces create {name}`")
            ws = await identity.create_workspace(s, name=name)
        return ws


DATA_DIR_ALTERNATIVES: dict[str, str] = {
    "serve": "stop it first, or give this server its own --data-dir",
    "demo": "stop it first, or give the demo its own --data-dir",
    "ingest": "send the files to it instead (`cairn ingest PATH --server URL`), or stop it",
    "reindex": "stop it first: reindex rebuilds the indexes that process holds open",
    "mcp": "use its MCP endpoint instead (POST /mcp, streamable HTTP), or stop it",
}
"""What each command that takes the data dir lock can do instead when another process (a
running ``cairn serve``) holds it, by command name (passed to :func:`_run`); a command not
listed is told "stop it first"."""


def data_dir_in_use(exc, command: str | None) -> str:
    """The one-line refusal of a :class:`app.core.datadir.DataDirInUse` for ``command`` (a key of
    :data:`DATA_DIR_ALTERNATIVES`): the holder, then what that command can do instead."""
    hint = DATA_DIR_ALTERNATIVES.get(command or "")
    return exc.with_hint(hint) if hint else exc.message


def _run(coro, *, command: str | None = None):
    """Run a coroutine; operator-facing errors become one line on stderr and exit code 2.

    ``command``: the running command's name, for the alternative a refusal because another
    process holds the data dir names (:func:`data_dir_in_use`).
    """
    from cairn.app.core.datadir import DataDirInUse
    from cairn.app.core.errors import CairnError, as_cairn_error
    from cairn.app.corpus import IndexNeedsRebuild
    from cairn.retrieval.vectors import VectorStoreUnavailable

    try:
        return asyncio.run(coro)
    except (CairnError, IndexNeedsRebuild) as exc:
        _fail(exc.message)
    except DataDirInUse as exc:
        _fail(data_dir_in_use(exc, command))
    except (VectorStoreUnavailable, SettingsInvalid) as exc:
        _fail(str(exc))
    except Exception as exc:
        known = as_cairn_error(exc)  # a full disk, a database that is down: one line, not a traceback
        if known is None:
            raise
        _fail(known.message)


def _check_space(settings: Settings) -> None:
    """Refuse to start (one line, exit 2) when the data dir's volume has less than
    ``CAIRN_MIN_FREE_MB`` free (:mod:`app.core.space`): a full volume ends the embedded vector
    engine with ``SIGBUS``, and every write would fail anyway."""
    space = settings.storage_space
    if space is None:
        return
    try:
        short = space.shortfall()
    except OSError as exc:
        _fail(f"cannot use the data dir {space.path}: {exc.strerror or exc}")
    if short is not None:
        _fail(f"not starting: {short}")


def _progress() -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
    )


def index_progress(progress: Progress):
    """An ``on_index(stage, done, total)`` callback drawing one bar per index stage (a later pass
    of a stage, e.g. the catch-up after a write's own passages, redraws it with its own total)."""
    tasks: dict[str, TaskID] = {}

    def on_index(stage: str, done: int, total: int) -> None:
        if stage not in tasks:
            tasks[stage] = progress.add_task(f"{stage} index", total=total)
        progress.update(tasks[stage], completed=done, total=total)

    return on_index


async def ingest_with_progress(
    progress: Progress,
    db,
    indexes,
    *,
    workspace_id: str,
    collection: str,
    docs: list,
    chunk_max_tokens: int,
    skipped=(),
):
    """:func:`app.corpus.ingest_documents` with a documents bar and one bar per index stage.

    Returns:
        The :class:`~app.corpus.ingest.IngestReport`.
    """
    from cairn.app.corpus import ingest_documents

    t_docs = progress.add_task("documents", total=len(docs))
    return await ingest_documents(
        db,
        indexes,
        workspace_id=workspace_id,
        collection=collection,
        documents=iter(docs),
        chunk_max_tokens=chunk_max_tokens,
        skipped=skipped,
        on_document=lambda n: progress.advance(t_docs, n),
        on_index=index_progress(progress),
    )


cli = _typer("Cairn: governed context for AI agents over GraphQL.")


DataDir = typer.Option(None, "--data-dir", help="Embedded data dir (default $CAIRN_DATA_DIR or ./cairn-data).")


WorkspaceOpt = typer.Option("default", "--workspace", "-w", help="Workspace name.")


@cli.callback()
def _main_options(
    _version: bool = typer.Option(
        False, "--version", "-V", callback=_show_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Cairn: governed context for AI agents over GraphQL."""


def _admin(
    data_dir: Path | None,
    action,
    *,
    workspace: str | None = None,
    create_workspace: bool = False,
    require_store: bool = True,
):
    """Run ``await action(session, workspace_row)`` on the database, then close it.

    ``require_store`` (default): refuse a data dir without a store; False for commands that
    create one (``workspaces create``, ``members add``).
    """
    settings = _settings(data_dir, require_store=require_store)

    async def go():
        db, _ = await _open(settings, with_vectors=None)
        try:
            ws = await _workspace(db, workspace, create=create_workspace) if workspace else None
            async with db.session() as s:
                return await action(s, ws)
        finally:
            await db.dispose()

    return _run(go())


def _serve(settings: Settings, *, host: str, port: int, migrate_first: bool = True, workers: int = 1) -> None:
    """Hold the data dir lock (when an index lives there), check a Qdrant server is reachable,
    migrate, then run uvicorn: this process, or ``workers`` > 1 processes on one port started
    from :func:`app.main.create_worker_app` (each with its own indexes under
    ``<data dir>/workers/<k>``; this process keeps the data dir's lock, so ``cairn ingest`` is
    refused while they serve)."""
    import uvicorn

    from cairn.app.cli.listen import PortUnavailable, address, claim_port
    from cairn.app.core.datadir import WORKERS_DIR, DataDirInUse, DataDirLock
    from cairn.app.core.migrate import upgrade_database
    from cairn.app.main import create_app
    from cairn.app.observability import TracingConfigError
    from cairn.app.observability import configure_from_env as configure_tracing
    from cairn.retrieval.vectors import VectorStoreUnavailable, check_server

    lock = None
    try:  # first: a busy port leaves no new data dir or store behind
        port_claim = claim_port(host, port)
    except PortUnavailable as exc:
        _fail(exc.message)
    try:
        try:
            if settings.local_indexes:
                lock = DataDirLock(settings.data_dir)
        except DataDirInUse as exc:
            _fail(data_dir_in_use(exc, "serve"))
        _check_space(settings)
        uses_server = settings.embedder != "none" or settings.resolved_lexical_backend == "qdrant"
        if uses_server and settings.resolved_vector_backend == "server":
            if settings.qdrant_url is None:  # "server" resolves from a URL; an explicit one needs it too
                _fail("CAIRN_VECTOR_BACKEND=server needs CAIRN_QDRANT_URL")
            try:
                check_server(settings.qdrant_url, api_key=settings.qdrant_api_key)
            except VectorStoreUnavailable as exc:
                _fail(str(exc))
        try:  # the OTEL_* environment (traces): a bad exporter or protocol stops here in one line
            configure_tracing()
        except TracingConfigError as exc:
            _fail(str(exc))
        if migrate_first:
            upgrade_database(settings.resolved_database_url)
        served = f"data: {_where(settings)}"
        if workers > 1:
            served += f"; {workers} worker processes"
            if settings.local_indexes:
                served += f", indexes under {settings.data_dir / WORKERS_DIR}/<k>"
        console.print(f"Cairn on http://{address(host, port)}/graphql  ({served})", soft_wrap=True)
        cores = os.cpu_count() or 1
        if workers > cores:
            console.print(
                f"note: {workers} worker processes on {cores} cores: each loads the models (~1 GiB) and uses "
                "about one core; more processes than cores add little",
                soft_wrap=True,
            )
        if workers == 1:
            uvicorn.run(create_app(settings), host=host, port=port, log_level="warning", ws="websockets-sansio")
        else:
            _serve_processes(settings, host=host, port=port, workers=workers)
    finally:
        if port_claim is not None:
            port_claim.close()
        if lock is not None:
            lock.release()


WORKER_START_SECONDS = 30
"""How long uvicorn's supervisor waits for a worker process to answer its health check. A
process that failed to start is noticed within this time (the supervisor then stops); a
rolling restart (SIGHUP) gives each new process this long to load its models and catch up,
else it keeps the old process and aborts the restart (a new slot on a large corpus may need
longer: restart then by stopping and starting ``serve``)."""


def _serve_processes(settings: Settings, *, host: str, port: int, workers: int) -> None:
    """Run ``workers`` processes of :func:`app.main.create_worker_app` on one port under
    uvicorn's supervisor (it replaces a process that dies, and stops when one exits with its
    start-up-failure code); exit 2 when the processes stopped because one could not start.
    Each process listens on its own ``SO_REUSEPORT`` socket (:mod:`app.cli.listen`: the kernel
    spreads connections over the processes). The processes read their settings from the
    environment; with metrics on, they also get prometheus-client's multiprocess folder, so a
    scrape of the port counts all of them (:mod:`app.observability.metrics`)."""
    import logging

    import uvicorn
    from uvicorn.supervisors import Multiprocess

    from cairn.app.cli.listen import ReusePortAddress, address
    from cairn.app.observability import MULTIPROCESS_DIR_ENV, multiprocess_dir_for
    from cairn.app.worker_process import SERVE_PARENT_ENV, SERVE_WORKERS_ENV, STARTUP_FAILURE

    os.environ["CAIRN_DATA_DIR"] = str(Path(settings.data_dir).resolve())
    os.environ[SERVE_WORKERS_ENV] = str(workers)
    os.environ[SERVE_PARENT_ENV] = str(os.getpid())  # a process started after this one died stops at once
    if settings.metrics:  # one scrape counts every process (prometheus-client's multiprocess mode)
        try:
            os.environ[MULTIPROCESS_DIR_ENV] = str(multiprocess_dir_for(Path(settings.data_dir)))
        except OSError as exc:
            _fail(f"cannot make the metrics folder under {Path(settings.data_dir) / 'workers'}: {exc}")
    config = uvicorn.Config(
        "cairn.app.main:create_worker_app",
        factory=True,
        workers=workers,
        host=host,
        port=port,
        log_level="warning",
        ws="websockets-sansio",
        # a new process loads the models and catches up before it answers uvicorn's "ready?"
        timeout_worker_healthcheck=WORKER_START_SECONDS,
    )
    try:
        placeholder = ReusePortAddress.bound(host, port)
    except OSError as exc:
        _fail(f"cannot listen on {address(host, port)}: {exc.strerror or exc}")
    # the supervisor's own lines (a process died and was replaced, signals, shutdown) at INFO in
    # this process only; each worker process sets up its logging from ``config`` (warnings)
    logging.getLogger("uvicorn.error").setLevel(logging.INFO)
    supervisor = Multiprocess(config, sockets=[placeholder])
    supervisor.run()
    if any(p.exitcode == STARTUP_FAILURE for p in supervisor.processes):
        _fail("a worker process could not start (its message is above); stopped")


def _embedder(settings: Settings):
    """The embedding provider named by settings (no vector store: loads write SQL only)."""
    from cairn.retrieval.embeddings import load_embedder

    if settings.embedder == "none":
        return None
    if settings.embedder == "openai":
        return load_embedder(
            "openai",
            base_url=settings.embedding_url,
            model=settings.embedding_model,
            api_key=settings.embedding_api_key,
        )
    return load_embedder("local")


async def _load_ontology(settings: Settings, mapping: Path, source_dir: Path | None, workspace: str):
    from cairn.app.ontology import load_network, read_mapping_file

    spec = read_mapping_file(mapping)
    db, _ = await _open(settings, with_vectors=None)
    try:
        ws = await _workspace(db, workspace)
        with _progress() as progress:
            tasks: dict[str, TaskID] = {}

            def on_progress(stage: str, done: int, total: int) -> None:
                if stage not in tasks:
                    tasks[stage] = progress.add_task(stage, total=total)
                progress.update(tasks[stage], completed=done)

            return await load_network(
                db, _embedder(settings), workspace_id=ws.id, mapping=spec, source_dir=source_dir, progress=on_progress
            )
    finally:
        await db.dispose()
