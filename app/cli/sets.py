"""``cairn sets``: bulk curation of context sets (issue 13) from YAML, on the database directly."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from sqlmodel import col

from cairn.app.cli.common import DatabaseOnly, DataDir, WorkspaceOpt, _fail, _run, _settings, _typer

sets_cli = _typer("Context sets: curated answers, definitions, instructions and required evidence.")


async def _author(s, ws_id: str, member: str | None):
    """The member an import is recorded as: ``--member`` (name or id), else the first owner.

    Returns:
        A member :class:`~app.governance.Principal` with the member's current role.
    """
    from sqlalchemy import select

    from cairn.app.core.models import Member
    from cairn.app.governance import ROLE_PERMISSIONS, Principal

    stmt = select(Member).where(col(Member.workspace_id) == ws_id, col(Member.removed_at).is_(None))
    if member is not None:
        stmt = stmt.where((col(Member.name) == member) | (col(Member.id) == member))
    else:
        stmt = stmt.where(col(Member.role) == "owner")
    m = (await s.execute(stmt.order_by(col(Member.created_at), col(Member.id)))).scalars().first()
    if m is None:
        _fail(f"no member {member!r} in this workspace" if member else "this workspace has no owner; pass --member")
    if "document:write" not in ROLE_PERMISSIONS[m.role]:
        _fail(f"member {m.name} is a {m.role}; context sets are curated by editors, admins and owners")
    return Principal(
        kind="member",
        id=m.id,
        workspace_id=ws_id,
        permissions=ROLE_PERMISSIONS[m.role],
        member_id=m.id,
        role=m.role,
    )


async def import_file(settings, path: Path, workspace: str, member: str | None) -> list[dict]:
    """Import a YAML file of sets (format: :mod:`app.contextsets.importer`); one JSON row per set."""
    import yaml

    from cairn.app.cli.common import _open, _workspace
    from cairn.app.contextsets import import_context_sets

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        _fail(f"cannot read {path}: {exc}")
    db, _ = await _open(settings, with_vectors=None)
    try:
        ws = await _workspace(db, workspace)
        async with db.session() as s:
            author = await _author(s, ws.id, member)
        done = await import_context_sets(DatabaseOnly(db), author, data)
    finally:
        await db.dispose()
    return [
        {
            "status": status,
            "contextSetId": v.id,
            "name": v.name,
            "version": v.version,
            "active": v.active,
            "entries": {k: len(v.of(k)) for k in ("VERIFIED_ANSWER", "DEFINITION", "INSTRUCTION", "REQUIRED_EVIDENCE")},
        }
        for status, v in done
    ]


@sets_cli.command("import")
def sets_import(
    file: Path = typer.Argument(..., help="YAML file: sets: [{name, description, scope, definitions, ...}]"),
    member: str | None = typer.Option(
        None, "--member", help="Author (member name or id, editor or above); default the first owner."
    ),
    workspace: str = WorkspaceOpt,
    data_dir: Path | None = DataDir,
) -> None:
    """Create or update context sets from YAML (a set whose name exists is updated: a new version)."""
    settings = _settings(data_dir, require_store=True)
    for row in _run(import_file(settings, file, workspace, member)):
        typer.echo(json.dumps(row, ensure_ascii=False))
