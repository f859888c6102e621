"""Alembic environment: async engines (aiosqlite / asyncpg), batch mode on SQLite.

On PostgreSQL the migration transaction first takes an advisory lock, so several workers
starting at once on one database migrate one after another (the later ones find the schema
at head and do nothing) instead of racing to create the same tables.
"""

from __future__ import annotations

import asyncio

from alembic import context
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine
from sqlmodel import SQLModel

import cairn.app.core.models  # noqa: F401  (registers the tables)

target_metadata = SQLModel.metadata
MIGRATION_LOCK = 0x43414952_4E4D4947  # "CAIRNMIG": the advisory lock key of migrations


def _run(connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": MIGRATION_LOCK})
        context.run_migrations()


async def _online() -> None:
    url = context.config.get_main_option("sqlalchemy.url")
    engine = create_async_engine(url)
    async with engine.connect() as conn:
        await conn.run_sync(_run)
    await engine.dispose()


if context.is_offline_mode():
    context.configure(
        url=context.config.get_main_option("sqlalchemy.url"), target_metadata=target_metadata, literal_binds=True
    )
    with context.begin_transaction():
        context.run_migrations()
else:
    try:
        asyncio.get_running_loop()
        running = True
    except RuntimeError:
        running = False
    if running:
        raise RuntimeError("run migrations from a thread without an event loop (asyncio.to_thread)")
    asyncio.run(_online())
