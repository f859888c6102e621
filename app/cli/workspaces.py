from __future__ import annotations

import json
from pathlib import Path

import typer

from cairn.app.cli.common import DataDir, _admin, _typer

workspaces_cli = _typer("Workspaces (tenants).")


@workspaces_cli.command("create")
def workspaces_create(
    name: str, non_retaining: bool = typer.Option(False, "--non-retaining"), data_dir: Path | None = DataDir
) -> None:
    """Create a workspace."""
    from cairn.app import identity

    ws = _admin(
        data_dir, lambda s, _: identity.create_workspace(s, name=name, retaining=not non_retaining), require_store=False
    )
    typer.echo(json.dumps({"id": ws.id, "name": ws.name, "retaining": ws.retaining}))


@workspaces_cli.command("list")
def workspaces_list(data_dir: Path | None = DataDir) -> None:
    """List workspaces (one JSON object per line)."""
    from sqlalchemy import select

    from cairn.app.core.models import Workspace

    async def action(s, _):
        return list((await s.execute(select(Workspace).order_by(Workspace.name))).scalars())

    for ws in _admin(data_dir, action):
        typer.echo(json.dumps({"id": ws.id, "name": ws.name, "retaining": ws.retaining}))
