"""``cairn backup`` and ``cairn restore``: the embedded store to one ``.tar.gz`` and back.

The archive holds the SQLite database (a consistent snapshot, taken beside a running server:
:mod:`app.core.backup`); the search indexes are rebuilt from it by ``restore``, before it
returns, from the passages and their stored embeddings. A PostgreSQL store is refused with
the pointer to ``pg_dump`` / ``pg_restore`` + ``cairn reindex`` (docs/operations.md: Backup,
restore and upgrade).
"""

from __future__ import annotations

import json
from pathlib import Path

import typer
from sqlalchemy import make_url

from cairn.app.cli.common import DataDir, _fail, _progress, _run, _settings, console, index_progress
from cairn.app.core.config import Settings

POSTGRES_HINT = (
    "back up a PostgreSQL store with pg_dump and restore it with pg_restore + `cairn reindex` (docs/operations.md)"
)


def _database_file(settings: Settings) -> Path:
    """The SQLite file of the settings' store; one line (exit 2) for a server database."""
    url = make_url(settings.resolved_database_url)
    if url.get_backend_name() != "sqlite" or not url.database or url.database == ":memory:":
        _fail(f"the store is {url.get_backend_name()}, not the embedded SQLite file: {POSTGRES_HINT}")
    return Path(url.database)


def _stage_bars(progress):
    """A ``(stage, done, total)`` callback drawing one bar per stage of a backup or restore."""
    labels = {"copy": "database snapshot (pages)", "compress": "compress (bytes)", "extract": "extract (bytes)"}
    tasks: dict[str, int] = {}

    def on_stage(stage: str, done: int, total: int) -> None:
        if stage not in tasks:
            tasks[stage] = progress.add_task(labels.get(stage, stage), total=total)
        progress.update(tasks[stage], completed=done, total=total)

    return on_stage


def backup(
    to: Path = typer.Option(..., "--to", help="The .tar.gz to write (a new file)."),
    data_dir: Path | None = DataDir,
) -> None:
    """Back up the embedded store to one .tar.gz (safe while `cairn serve` runs).

    The archive holds a consistent snapshot of the SQLite database; the search indexes are
    rebuilt from it by `cairn restore`.
    """
    from cairn.app.core.backup import BackupError, check_target, create_backup

    settings = _settings(data_dir, require_store=True)
    database = _database_file(settings)
    try:
        check_target(database, to)  # refusals before the progress display starts: one line each
        with _progress() as progress:
            manifest = create_backup(database, to, progress=_stage_bars(progress))
    except BackupError as exc:
        _fail(exc.message)
    typer.echo(json.dumps({"backup": str(to), "bytes": to.stat().st_size, **manifest.to_json()}))


def restore(
    archive: Path = typer.Argument(..., help="A .tar.gz made by `cairn backup`."),
    data_dir: Path | None = DataDir,
) -> None:
    """Restore a backup into a new or empty data dir and rebuild its search indexes from SQL.

    Refuses a data dir that holds anything. A backup of an older Cairn is migrated. The
    indexes are built from the passages and their stored embeddings (passages never embedded,
    e.g. ingested with --lexical-only, are embedded now).
    """
    from cairn.app.core.backup import BackupError, check_archive, clear_folder, empty_target, extract_database
    from cairn.app.core.datadir import DataDirLock

    settings = _settings(data_dir)
    database = _database_file(settings)
    folder = Path(settings.data_dir)
    try:  # refusals before anything is written or displayed: one line each
        empty_target(folder)
        if database.parent != folder:
            empty_target(database.parent)
        check_archive(archive)
    except BackupError as exc:
        _fail(exc.message)
    made = not folder.exists()
    lock = DataDirLock(folder)  # makes the folder; no serve or ingest may start on it meanwhile
    done = False
    try:
        database.parent.mkdir(parents=True, exist_ok=True)
        with _progress() as progress:
            try:
                manifest = extract_database(archive, database, progress=_stage_bars(progress))
            except BackupError as exc:
                _fail(exc.message)
            counts = _run(_build_indexes(settings, index_progress(progress)))
        done = True
    finally:
        lock.release()
        if not done:  # the target is left as it was found: new or empty
            clear_folder(folder, remove=made)
    typer.echo(
        json.dumps(
            {
                "restored": str(archive),
                "dataDir": str(folder),
                "revision": manifest.revision,
                "documents": manifest.documents,
                "passages": manifest.passages,
                "lexicalIndexed": counts[0],
                "vectorIndexed": counts[1],
            }
        )
    )
    console.print(f"restored {manifest.documents} documents ({manifest.passages} passages) into {folder}")


async def _build_indexes(settings: Settings, on_index) -> tuple[int, int]:
    """Migrate the restored database to this version's head, then build the indexes from SQL."""
    from cairn.app.cli.common import _open

    db, indexes = await _open(settings, with_vectors=True)
    try:
        return await indexes.index_pending(db, progress=on_index)
    finally:
        indexes.close()
        await db.dispose()
