from __future__ import annotations

from pathlib import Path

from cairn.app.cli.common import DataDir, _settings, _where, console


def migrate(data_dir: Path | None = DataDir) -> None:
    """Bring the database schema to the newest Alembic revision (creates a new store)."""
    from cairn.app.core.migrate import upgrade_database

    settings = _settings(data_dir)
    upgrade_database(settings.resolved_database_url)
    console.print(f"migrated {_where(settings)}", soft_wrap=True)
