from __future__ import annotations

import json
from pathlib import Path

import typer

from cairn.app.cli.common import DataDir, _admin, _typer

memory_cli = _typer("Governed agent memory.")


@memory_cli.command("purge")
def memory_purge(data_dir: Path | None = DataDir) -> None:
    """Delete memory versions older than their workspace's retention (also runs at start-up)."""
    from cairn.app.memory import purge_expired

    n = _admin(data_dir, lambda s, _: purge_expired(s))
    typer.echo(json.dumps({"purged": n}))
