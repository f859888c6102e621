"""``cairn templates``: build the Northwind business database, load template YAML into a context set."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from app.cli.common import DataDir, WorkspaceOpt, _fail, _open, _run, _settings, _typer, _workspace

templates_cli = _typer("Query templates: the Northwind demo database, loading and approving templates.")


@templates_cli.command("load-northwind")
def load_northwind_cmd(
    csv_dir: Path = typer.Argument(..., help="Folder of the Northwind CSVs (e.g. ../shared/data/northwind/csv)."),
    to: str | None = typer.Option(
        None,
        "--to",
        help="Target database URL (sqlite:///path or postgresql://…); default CAIRN_TEMPLATES_DATABASE_URL.",
    ),
    replace: bool = typer.Option(False, "--replace", help="Drop existing Northwind tables first."),
    data_dir: Path | None = DataDir,
) -> None:
    """Create the Northwind tables (snake_case) in the business database and load the CSV rows."""
    from sqlalchemy.exc import SQLAlchemyError

    from app.templates import load_northwind

    url = to or _settings(data_dir).templates_database_url
    if not url:
        _fail("give --to sqlite:///path/northwind.db (or postgresql://…), or set CAIRN_TEMPLATES_DATABASE_URL")
    missing = [t for t in ("orders", "order_details", "products") if not (csv_dir / f"{t}.csv").is_file()]
    if missing:
        _fail(f"{csv_dir} does not hold the Northwind CSVs (missing {', '.join(m + '.csv' for m in missing)})")
    try:
        counts = _run(load_northwind(url, csv_dir, replace=replace))
    except (SQLAlchemyError, ValueError) as exc:
        _fail(f"cannot load Northwind into {url.split('@')[-1]}: {str(exc).splitlines()[0]}")
    typer.echo(json.dumps({"database": url.split("@")[-1], "rows": counts}, indent=2))


@templates_cli.command("load")
def load_templates_cmd(
    file: Path = typer.Argument(..., help="Template YAML, e.g. app/templates/northwind.yaml."),
    context_set: str = typer.Option(..., "--context-set", "-s", help="Context set name (or id) of the workspace."),
    member: str = typer.Option(..., "--member", "-m", help="Id of the admin or owner acting (recorded)."),
    approve: bool = typer.Option(False, "--approve", help="Approve each template after the SQL check."),
    workspace: str = WorkspaceOpt,
    data_dir: Path | None = DataDir,
) -> None:
    """Create or update the file's templates in a context set (by name); optionally approve them."""
    settings = _settings(data_dir, require_store=True)
    if not file.is_file():
        _fail(f"no file {file}")

    async def go():
        from sqlalchemy import or_, select

        from app import templates as tpl
        from app.context import Services
        from app.core.errors import Forbidden, NotFound
        from app.core.models import ContextSet, Member, QueryTemplate
        from app.governance import ROLE_PERMISSIONS, Principal

        definitions = tpl.load_catalog(file)
        db, _ = await _open(settings, with_vectors=None)
        services = Services(settings=settings, db=db, indexes=None)
        out = []
        try:
            ws = await _workspace(db, workspace, create=False)
            async with db.session() as s:
                m = await s.get(Member, member)
                if m is None or m.removed_at is not None or m.workspace_id != ws.id:
                    raise NotFound(f"no member {member!r} in workspace {workspace!r}")
                cs = (
                    await s.execute(
                        select(ContextSet).where(
                            ContextSet.workspace_id == ws.id,
                            or_(ContextSet.name == context_set, ContextSet.id == context_set),
                        )
                    )
                ).scalar_one_or_none()
                if cs is None:
                    raise NotFound(f"no context set {context_set!r} in workspace {workspace!r}")
                existing = {
                    r.name: r.id
                    for r in (await s.execute(select(QueryTemplate).where(QueryTemplate.context_set_id == cs.id)))
                    .scalars()
                    .all()
                }
            principal = Principal(
                kind="member",
                id=m.id,
                workspace_id=ws.id,
                permissions=ROLE_PERMISSIONS[m.role],
                member_id=m.id,
                role=m.role,
            )
            if "collection:write" not in principal.permissions:
                raise Forbidden(f"member {m.id} is {m.role}; templates need an admin or owner")
            for d in definitions:
                if d.name in existing:
                    view = await tpl.update_template(
                        services, principal, tpl.UpdateTemplateRequest(existing[d.name], d)
                    )
                else:
                    view = await tpl.create_template(services, principal, tpl.CreateTemplateRequest(cs.id, d))
                if approve and not view.approved:
                    view = await tpl.approve_template(services, principal, tpl.ApproveTemplateRequest(view.id))
                out.append({"id": view.id, "name": view.name, "version": view.version, "approved": view.approved})
        finally:
            await services.close_query_database()
            await db.dispose()
        return out

    typer.echo(json.dumps({"contextSet": context_set, "templates": _run(go())}, indent=2))
