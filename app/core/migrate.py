"""Alembic, driven from code: ``upgrade_database(url)`` brings a database to head.

Alembic is the only source of the schema (``migrations/``, target metadata =
``SQLModel.metadata``); the same revisions run on SQLite (batch mode) and PostgreSQL.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config

MIGRATIONS_DIR = Path(__file__).resolve().parents[2] / "migrations"


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
    command.upgrade(alembic_config(url), revision)
