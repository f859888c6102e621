from __future__ import annotations

import json
from pathlib import Path

import typer

from cairn.app.cli.common import DataDir, WorkspaceOpt, _admin, _typer

members_cli = _typer("Members (humans) and their tokens.")


@members_cli.command("list")
def members_list(workspace: str = WorkspaceOpt, data_dir: Path | None = DataDir) -> None:
    """List live members (never their tokens)."""
    from cairn.app import identity

    for m in _admin(data_dir, lambda s, ws: identity.list_members(s, workspace_id=ws.id), workspace=workspace):
        typer.echo(json.dumps({"memberId": m.id, "name": m.name, "role": m.role}))


@members_cli.command("set-role")
def members_set_role(
    member_id: str,
    role: str = typer.Option(..., help="owner | admin | editor | viewer"),
    workspace: str = WorkspaceOpt,
    data_dir: Path | None = DataDir,
) -> None:
    """Change a member's role (their agent credentials act with it from the next call)."""
    from cairn.app import identity

    m = _admin(
        data_dir,
        lambda s, ws: identity.set_member_role(s, workspace_id=ws.id, member_id=member_id, role=role),
        workspace=workspace,
    )
    typer.echo(json.dumps({"memberId": m.id, "name": m.name, "role": m.role}))


@members_cli.command("add")
def members_add(
    name: str,
    role: str = typer.Option("viewer", help="owner | admin | editor | viewer"),
    workspace: str = WorkspaceOpt,
    data_dir: Path | None = DataDir,
) -> None:
    """Add a member and print their member token (shown once)."""
    from cairn.app import identity

    member, issued = _admin(
        data_dir,
        lambda s, ws: identity.create_member(s, workspace_id=ws.id, name=name, role=role),
        workspace=workspace,
        create_workspace=True,
        require_store=False,
    )
    typer.echo(json.dumps({"memberId": member.id, "role": member.role, "token": issued.token}))
