"""Template settings and business-database URLs (no database)."""

from __future__ import annotations

import pytest

from cairn.app.core.config import SettingsInvalid, load_settings
from cairn.app.templates.runner import async_url, read_only_sqlite_url


def test_a_business_database_that_is_neither_postgresql_nor_sqlite_is_refused():
    with pytest.raises(SettingsInvalid) as info:
        load_settings(templates_database_url="mysql://u@h/db")
    assert "CAIRN_TEMPLATES_DATABASE_URL" in info.value.message


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("templates_timeout_seconds", 0, "> 0"),
        ("templates_max_rows", 0, ">= 1"),
        ("templates_max_rows", 10**6, "<= 100000"),
    ],
)
def test_template_limits_are_checked(name, value, expected):
    with pytest.raises(SettingsInvalid) as info:
        load_settings(**{name: value})
    assert f"CAIRN_{name.upper()}" in info.value.message and expected in info.value.message


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("sqlite:///tmp/nw.db", "sqlite+aiosqlite:///tmp/nw.db"),
        ("postgresql://u@h/db", "postgresql+asyncpg://u@h/db"),
        ("postgres://u@h/db", "postgresql+asyncpg://u@h/db"),
        ("postgresql+asyncpg://u@h/db", "postgresql+asyncpg://u@h/db"),
    ],
)
def test_async_urls(url, expected):
    assert async_url(url) == expected


def test_other_drivers_are_refused():
    with pytest.raises(ValueError):
        async_url("mysql+pymysql://u@h/db")


def test_sqlite_business_databases_open_read_only():
    assert read_only_sqlite_url("sqlite+aiosqlite:////data/north wind.db") == (
        "sqlite+aiosqlite:///file:/data/north%20wind.db?mode=ro&uri=true"
    )
    assert read_only_sqlite_url("sqlite+aiosqlite:////x.db?mode=ro") == "sqlite+aiosqlite:////x.db?mode=ro"
