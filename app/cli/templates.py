"""``cairn templates``: build the Northwind business database, load template YAML into a context set."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from sqlmodel import col

from cairn.app.cli.common import DataDir, WorkspaceOpt, _fail, _open, _run, _settings, _typer, _workspace

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

    from cairn.app.templates import load_northwind

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

        from cairn.app import templates as tpl
        from cairn.app.core.errors import Forbidden, NotFound
        from cairn.app.core.models import ContextSet, Member, QueryTemplate
        from cairn.app.governance import ROLE_PERMISSIONS, Principal

        definitions = tpl.load_catalog(file)
        db, _ = await _open(settings, with_vectors=None)
        services = tpl.TemplateContext(settings, db, tpl.TemplatesDatabase(settings.templates_database_url))
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
                            or_(col(ContextSet.name) == context_set, col(ContextSet.id) == context_set),
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
            await services.query_database.close()
            await db.dispose()
        return out

    typer.echo(json.dumps({"contextSet": context_set, "templates": _run(go())}, indent=2))


DEMO_SET = "northwind-demo"
DEMO_TEMPLATE = "top_products_by_revenue"


async def prepare_template_demo(settings, csv_dir: Path, workspace_id: str, member_id: str):
    """The demo's query template: Northwind in ``<data dir>/northwind.db`` (rebuilt) unless
    ``CAIRN_TEMPLATES_DATABASE_URL`` names a business database already, a context set
    ``northwind-demo`` and its approved ``top_products_by_revenue`` template.

    Returns:
        ``(settings with templates_database_url set, context set id, template id)``.
    """
    from sqlalchemy import select

    from cairn.app import contextsets
    from cairn.app import templates as tpl
    from cairn.app.core.db import Database
    from cairn.app.core.models import ContextSet, Member, QueryTemplate
    from cairn.app.governance import ROLE_PERMISSIONS, Principal

    url = settings.templates_database_url
    if not url:
        url = f"sqlite:///{(settings.data_dir / 'northwind.db').resolve()}"
        await tpl.load_northwind(url, csv_dir, replace=True)
        settings = settings.model_copy(update={"templates_database_url": url})
    definition = next(d for d in tpl.load_catalog(tpl.NORTHWIND_TEMPLATES) if d.name == DEMO_TEMPLATE)
    db = Database(settings.resolved_database_url)
    services = tpl.TemplateContext(settings, db, tpl.TemplatesDatabase(settings.templates_database_url))
    try:
        async with db.session() as s:
            m = await s.get(Member, member_id)
            if m is None:
                _fail(f"no member {member_id!r}")
            set_id = (
                await s.execute(
                    select(col(ContextSet.id)).where(
                        col(ContextSet.workspace_id) == workspace_id, col(ContextSet.name) == DEMO_SET
                    )
                )
            ).scalar_one_or_none()
        principal = Principal(
            kind="member",
            id=m.id,
            workspace_id=workspace_id,
            permissions=ROLE_PERMISSIONS[m.role],
            member_id=m.id,
            role=m.role,
        )
        if set_id is None:
            write = contextsets.ContextSetWrite(
                name=DEMO_SET,
                description="Northwind sales questions answered by approved query templates.",
                active=True,
                collection_ids=(),
                document_ids=(),
                verified_answers=(),
                definitions=(),
                instructions=(),
                required_evidence=(),
            )
            request = contextsets.CreateContextSetRequest(write)
            set_id = (await contextsets.create_context_set(services, principal, request)).id
        async with db.session() as s:
            template_id = (
                await s.execute(
                    select(col(QueryTemplate.id)).where(
                        col(QueryTemplate.context_set_id) == set_id, col(QueryTemplate.name) == DEMO_TEMPLATE
                    )
                )
            ).scalar_one_or_none()
        if template_id is None:
            view = await tpl.create_template(services, principal, tpl.CreateTemplateRequest(set_id, definition))
        else:
            view = await tpl.update_template(services, principal, tpl.UpdateTemplateRequest(template_id, definition))
        if not view.approved:
            view = await tpl.approve_template(services, principal, tpl.ApproveTemplateRequest(view.id))
        return settings, set_id, view.id
    finally:
        await services.query_database.close()
        await db.dispose()


def template_demo_query(set_id: str, template_id: str) -> str:
    """The GraphQL the demo prints for its template (agents see no SQL)."""
    return f"""query {{
  queryTemplates(contextSetId: "{set_id}") {{ id name description parameters {{ name type default min max }} }}
  runQueryTemplate(templateId: "{template_id}",
                   parameters: {{start: "1997-01-01", end: "1997-12-31", top: 5}}) {{
    columns {{ name type }} rows rowCount truncated notices {{ code message }}
  }}
}}"""
