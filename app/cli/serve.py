from __future__ import annotations

from pathlib import Path

import typer

from cairn.app.cli.common import DataDir, _serve, _settings


def serve(
    host: str = typer.Option("127.0.0.1", help="Bind address."),
    port: int = typer.Option(8000, min=1, max=65535, help="Port (1-65535)."),
    data_dir: Path | None = DataDir,
    migrate_first: bool = typer.Option(
        True,
        "--migrate/--no-migrate",
        help="Bring the schema to the newest revision before serving "
        "(--no-migrate where migrations run as a separate deploy step).",
    ),
    workers: int = typer.Option(
        1,
        min=1,
        max=64,
        help="Processes serving on one port (1-64). A pack's work is Python under one lock per "
        "process, so one process uses about one core: use up to one per core. Each keeps its own "
        "search indexes under <data-dir>/workers/<k>, caught up from the database at start.",
    ),
) -> None:
    """Serve GraphQL (GraphiQL at /graphql), the web console (/console), the NDJSON stream, /healthz and /readyz."""
    _serve(_settings(data_dir), host=host, port=port, migrate_first=migrate_first, workers=workers)
