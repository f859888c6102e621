"""A migrated database per backend (SQLite file, PostgreSQL), used through the services.

A test using ``db``/``db_url`` runs on both engines, per tests/graphql/conftest.py's rule: its
outcome depends on the database (what is stored and read back, SQL a driver treats differently,
migrations, locks and idempotency). A module whose outcome does not (retrieval over the indexes,
spans) overrides ``db_url`` with :func:`sqlite_db_url` and says why; one test of a module
does it with :data:`SQLITE_ONLY` (e.g. a refusal decided before any SQL).
"""

from __future__ import annotations

import asyncio

import pytest

from cairn.app.core.db import Database
from cairn.app.core.migrate import upgrade_database
from tests.conftest import _pg_execute, drop_postgres_database, postgres_database
from tests.private_postgres import private_postgres

SQLITE_ONLY = pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
"""A test whose outcome does not depend on the database (module doc) runs on SQLite alone."""


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


@pytest.fixture(scope="session")
def sqlite_db_url(tmp_path_factory):
    """Async URL of a freshly migrated SQLite database (for a module's own ``db_url``: module doc)."""
    url = f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('db') / 'cairn.db'}"
    upgrade_database(url)
    return url


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def private_db_url(request, tmp_path_factory):
    """Like ``db_url``, but PostgreSQL is a cluster of the module's own (``cairn_test`` in it;
    its ``postgres`` database is "another database"): for tests of the change log's server-wide
    read horizon, which any open transaction of a concurrent test file would hold back.
    A module opts in with a module-scoped ``db_url`` fixture that returns ``private_db_url``."""
    if request.param == "sqlite":
        url = f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('db') / 'cairn.db'}"
        upgrade_database(url)
        yield url
        return
    with private_postgres() as pg:
        asyncio.run(_pg_execute('CREATE DATABASE "cairn_test"', dsn=pg.url))
        url = pg.url.rsplit("/", 1)[0] + "/cairn_test"
        upgrade_database(url)
        yield url


@pytest.fixture
async def db(db_url):
    """A :class:`Database` on the backend (one engine per test, disposed after)."""
    database = Database(db_url)
    yield database
    await database.dispose()
