"""Shared plumbing of the ``cairn`` command: settings, one-line errors, consoles, store access.

Errors are one plain line on stderr (``error: …``, exit code 2) — never rich markup, boxes
or wrapping, so what an operator (or a test) reads does not depend on the terminal width.
"""

from __future__ import annotations

import asyncio
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from app.config import Settings, SettingsInvalid, load_settings


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


def _fail(message: str) -> None:
    """Print ``error: message`` as one plain line on stderr and exit with code 2."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code=2)


def _settings(data_dir: Optional[Path], *, require_store: bool = False) -> Settings:
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
        from app.datadir import store_exists

        try:
            exists = store_exists(settings)
        except Exception as exc:  # noqa: BLE001 - an unreachable database: one line, not a traceback
            _fail(f"cannot open the database {_where(settings)}: {exc}")
        if not exists:
            _fail(f"no Cairn data in {_where(settings)}: run `cairn ingest` or `cairn serve` first, "
                  "or check --data-dir")
    return settings


def _where(settings: Settings) -> str:
    """The store's location without credentials (data dir, or the database URL's host/db)."""
    if not settings.database_url:
        return str(settings.data_dir)
    from sqlalchemy import make_url

    return make_url(settings.database_url).render_as_string(hide_password=True)


async def _open(settings: Settings, *, with_vectors: bool | None = True):
    """``(db, indexes)``: migrated database; indexes (taking the data dir lock first) unless
    ``with_vectors`` is None (SQL-only commands, safe beside a running server)."""
    from app.db import Database
    from app.migrate import upgrade_database
    from app.services.indexing import open_indexes

    indexes = open_indexes(settings, with_vectors=with_vectors) if with_vectors is not None else None
    try:
        await asyncio.to_thread(upgrade_database, settings.resolved_database_url)
        db = Database(settings.resolved_database_url)
    except BaseException:
        if indexes is not None:
            indexes.close()
        raise
    return db, indexes


async def _workspace(db, name: str, *, create: bool = True):
    from app.services import identity

    async with db.session() as s:
        ws = await identity.get_workspace_by_name(s, name)
        if ws is None:
            if not create:
                _fail(f"no workspace called {name!r}; create it with `cairn workspaces create {name}`")
            ws = await identity.create_workspace(s, name=name)
        return ws


def _run(coro):
    """Run a coroutine; operator-facing errors become one line on stderr and exit code 2."""
    from app.datadir import DataDirInUse
    from app.errors import CairnError
    from retrieval.vectors import VectorStoreUnavailable

    try:
        return asyncio.run(coro)
    except CairnError as exc:
        _fail(exc.message)
    except (DataDirInUse, VectorStoreUnavailable, SettingsInvalid) as exc:
        _fail(str(exc))


def _progress() -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    TimeRemainingColumn(), console=console)


def index_progress(progress: Progress):
    """An ``on_index(stage, done, total)`` callback drawing one bar per index stage."""
    tasks: dict[str, int] = {}

    def on_index(stage: str, done: int, total: int) -> None:
        if stage not in tasks:
            tasks[stage] = progress.add_task(f"{stage} index", total=total)
        progress.update(tasks[stage], completed=done)

    return on_index
