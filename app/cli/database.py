from __future__ import annotations

from pathlib import Path
from typing import Optional
from app.cli.common import _settings
from app.cli.common import _where
from app.cli.common import console
from app.cli.common import DataDir


def migrate(data_dir: Optional[Path] = DataDir) -> None:
    """Bring the database schema to the newest Alembic revision (creates a new store)."""
    from app.core.migrate import upgrade_database

    settings = _settings(data_dir)
    upgrade_database(settings.resolved_database_url)
    console.print(f"migrated {_where(settings)}", soft_wrap=True)
