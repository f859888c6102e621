"""Business databases for query-template tests: a tiny one made here (always available) and
Northwind built from ``../shared/data/northwind/csv`` (skipped without it), each on SQLite
(a file under tmp) and PostgreSQL (a dedicated database, dropped after)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date
from pathlib import Path

from sqlalchemy import event, text
from sqlalchemy.ext.asyncio import create_async_engine

from cairn.app.templates import QueryDatabase, load_northwind
from tests.conftest import drop_postgres_database, postgres_database, shared_data

TINY_ROWS = [
    (1, "apple", 1.25, "2024-01-05", True),
    (2, "banana", 0.5, "2024-02-10", False),
    (3, "cherry", 7.0, "2024-03-15", True),
    (4, "it's", 2.0, "2024-04-20", False),
]
TINY_SQL = "SELECT id, name, price, sold_on, fresh FROM items"


async def make_tiny(url: str) -> None:
    """Create ``items(id, name, price, sold_on, fresh)`` with :data:`TINY_ROWS` at ``url``."""
    engine = create_async_engine(url)
    date_type = "TEXT" if url.startswith("sqlite") else "DATE"
    try:
        async with engine.begin() as conn:
            await conn.execute(
                text(
                    f"CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, price REAL NOT NULL, "
                    f"sold_on {date_type} NOT NULL, fresh BOOLEAN NOT NULL)"
                )
            )
            for i, n, p, d, f in TINY_ROWS:
                sold_on = d if url.startswith("sqlite") else date.fromisoformat(d)
                await conn.execute(
                    text("INSERT INTO items VALUES (:i, :n, :p, :d, :f)"),
                    {"i": i, "n": n, "p": p, "d": sold_on, "f": f},
                )
    finally:
        await engine.dispose()


@contextmanager
def business_url(backend: str, tmp_path: Path, kind: str = "tiny") -> Iterator[str]:
    """A fresh business database (``kind`` ``tiny`` or ``northwind``) on ``backend``; its async URL.

    Northwind skips (fails in CI) without ``../shared/data/northwind/csv``; PostgreSQL skips
    (fails in CI) when unreachable.
    """
    csv_dir = shared_data("northwind", "csv") if kind == "northwind" else None
    if backend == "sqlite":
        url = f"sqlite+aiosqlite:///{tmp_path / f'{kind}.db'}"
        pg = None
    else:
        url = pg = postgres_database()
    try:
        if csv_dir is not None:
            asyncio.run(load_northwind(url, csv_dir))
        else:
            asyncio.run(make_tiny(url))
        yield url
    finally:
        if pg:
            drop_postgres_database(pg)


class StatementCounter:
    """Counts the statements a :class:`QueryDatabase` sends (SQLAlchemy ``before_cursor_execute``)."""

    def __init__(self, qdb: QueryDatabase) -> None:
        self.statements: list[str] = []
        event.listen(qdb.engine.sync_engine, "before_cursor_execute", self._seen)

    def _seen(self, _conn, _cursor, statement, _params, _context, _many) -> None:
        self.statements.append(statement)
