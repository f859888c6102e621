"""A migrated database per backend (SQLite file, PostgreSQL), used through the services."""

from __future__ import annotations

import pytest

from cairn.app.core.db import Database
from cairn.app.core.migrate import upgrade_database
from tests.conftest import drop_postgres_database, postgres_database


@pytest.fixture(scope="session", params=["sqlite", "postgres"])
def db_url(request, tmp_path_factory):
    """Async URL of a freshly migrated database."""
    if request.param == "sqlite":
        url = f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('db') / 'cairn.db'}"
        upgrade_database(url)
        yield url
    else:
        url = postgres_database()
        try:
            upgrade_database(url)
            yield url
        finally:
            drop_postgres_database(url)


@pytest.fixture
async def db(db_url):
    """A :class:`Database` on the backend (one engine per test, disposed after)."""
    database = Database(db_url)
    yield database
    await database.dispose()
