"""Alembic, driven from code: ``upgrade_database(url)`` brings a database to head.

Alembic is the only source of the schema (``migrations/``, target metadata =
``SQLModel.metadata``); the same revisions run on SQLite (batch mode) and PostgreSQL.

Revisions skipped by an older chain: twice, for a few minutes, main chained a revision past
one that was later put back before it (:data:`SKIPPED_REVISIONS`). A database made then
records a later revision without the skipped one's tables, and Alembic, which trusts the
recorded revision, would never create them. :func:`upgrade_database` looks for each such
revision's first table first; when it is missing, it runs that revision alone (stamp its
parent, upgrade to it, stamp back) before upgrading to head, and logs one line.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from alembic import command
from alembic.config import Config

MIGRATIONS_DIR = Path(__file__).resolve().parents[2] / "migrations"

log = logging.getLogger("cairn.migrate")

SKIPPED_REVISIONS: dict[str, tuple[str, str]] = {
    "0002": ("memorywrite", "commit 64c6b34 chained 0003 (ontology) straight after 0001"),
    "0006_context_sets": ("context_set", "commit fb32ad1 chained 0007_time straight after 0005"),
}
"""Revision → (the first table it creates, the older chain that skipped it) (module doc)."""


def alembic_config(url: str) -> Config:
    """An Alembic config pointing at ``migrations/`` and ``url`` (an async SQLAlchemy URL)."""
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def upgrade_database(url: str, revision: str = "head") -> None:
    """Run migrations up to ``revision`` (blocking; call via ``asyncio.to_thread`` from async code).

    For SQLite the file's folder is created first.
    """
    if url.startswith("sqlite"):
        path = url.split("///", 1)[-1]
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
    cfg = alembic_config(url)
    fill_skipped_revisions(cfg, url)
    command.upgrade(cfg, revision)


def fill_skipped_revisions(cfg: Config, url: str) -> list[str]:
    """Run each of :data:`SKIPPED_REVISIONS` that the database's recorded revision descends
    from but whose first table it lacks, alone, keeping the recorded revision (module doc).

    Blocking (like :func:`upgrade_database`); a new database (no revision) is left alone.

    Returns:
        The revisions run (logged one line each).
    """
    from alembic.script import ScriptDirectory

    current, tables = asyncio.run(revision_and_tables(url))
    if current is None:
        return []
    script = ScriptDirectory.from_config(cfg)
    try:
        below = {rev.revision for rev in script.iterate_revisions(current, "base")}
    except Exception:  # noqa: BLE001 - a revision this version does not know: Alembic's own error follows
        return []
    done = []
    for revision, (table, why) in SKIPPED_REVISIONS.items():
        if revision not in below or revision == current or table in tables:
            continue
        parent = script.get_revision(revision).down_revision
        if parent is None:  # a skipped revision is never the first one
            raise RuntimeError(f"revision {revision} has no parent to stamp")
        command.stamp(cfg, parent, purge=True)
        command.upgrade(cfg, revision)
        command.stamp(cfg, current, purge=True)
        log.warning(
            "the database records revision %s but lacks the tables of revision %s (%s): created them now",
            current,
            revision,
            why,
        )
        done.append(revision)
    return done


async def revision_and_tables(url: str) -> tuple[str | None, set[str]]:
    """The database's recorded Alembic revision (None when it has none) and its table names."""
    from alembic.runtime.migration import MigrationContext
    from sqlalchemy import inspect
    from sqlalchemy.ext.asyncio import create_async_engine

    engine = create_async_engine(url)
    try:
        async with engine.connect() as conn:
            return await conn.run_sync(
                lambda c: (MigrationContext.configure(c).get_current_revision(), set(inspect(c).get_table_names()))
            )
    finally:
        await engine.dispose()
