"""Databases made while main chained a revision past one that was later put back before it
(issue 32 item 14): :func:`app.core.migrate.upgrade_database` creates the skipped tables, on
SQLite and PostgreSQL. The old chains are re-enacted with today's scripts: stamp the skipped
revision without running it, then upgrade past it (what the old chain did)."""

from __future__ import annotations

import asyncio

import pytest
from alembic import command
from alembic.script import ScriptDirectory

from cairn.app.core.migrate import alembic_config, revision_and_tables, upgrade_database
from tests.conftest import drop_postgres_database, postgres_database


@pytest.fixture(params=["sqlite", "postgres"])
def fresh_url(request, tmp_path):
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'cairn.db'}"
        return
    url = postgres_database()
    try:
        yield url
    finally:
        drop_postgres_database(url)


@pytest.mark.parametrize(
    ("parent", "skipped", "past", "table"),
    [
        ("0001", "0002", "0003", "memorywrite"),  # main at 64c6b34
        ("0005", "0006_context_sets", "0007_time", "context_set"),  # main at fb32ad1
    ],
)
def test_a_skipped_revision_is_run_before_upgrading(fresh_url, parent, skipped, past, table):
    cfg = alembic_config(fresh_url)
    command.upgrade(cfg, parent)
    command.stamp(cfg, skipped)  # the old chain went from parent straight to `past`
    command.upgrade(cfg, past)
    revision, tables = asyncio.run(revision_and_tables(fresh_url))
    assert revision == past and table not in tables

    upgrade_database(fresh_url)

    revision, tables = asyncio.run(revision_and_tables(fresh_url))
    assert revision == ScriptDirectory.from_config(cfg).get_current_head()
    assert table in tables
    fresh = fresh_url.replace("cairn.db", "head.db") if fresh_url.startswith("sqlite") else None
    if fresh:  # the same tables as a database migrated along today's chain
        upgrade_database(fresh)
        assert tables == asyncio.run(revision_and_tables(fresh))[1]


def test_a_database_on_todays_chain_is_left_alone(fresh_url):
    from cairn.app.core.migrate import fill_skipped_revisions

    upgrade_database(fresh_url)
    assert fill_skipped_revisions(alembic_config(fresh_url), fresh_url) == []
