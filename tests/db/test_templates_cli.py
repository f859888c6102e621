"""``cairn templates load-northwind`` and ``cairn templates load`` as an operator runs them."""

from __future__ import annotations

import asyncio
import json

import pytest

from cairn.app.core.db import Database
from cairn.app.core.ids import new_id, utcnow
from cairn.app.core.models import ContextSet, Workspace
from tests.conftest import shared_data
from tests.db.test_cli import cairn, one_line_error


async def _context_set(url: str, admin_id: str) -> None:
    db = Database(url)
    try:
        async with db.session() as s:
            from sqlalchemy import select

            ws = (await s.execute(select(Workspace).where(Workspace.name == "default"))).scalar_one()
            now = utcnow()
            s.add(
                ContextSet(
                    id=new_id("cs"),
                    workspace_id=ws.id,
                    name="sales",
                    created_at=now,
                    created_by=admin_id,
                    updated_at=now,
                    updated_by=admin_id,
                )
            )
    finally:
        await db.dispose()


@pytest.mark.shared_data
def test_load_northwind_then_load_and_approve_the_ten_templates(tmp_path):
    csv_dir = shared_data("northwind", "csv")
    data = tmp_path / "data"
    business = f"sqlite:///{tmp_path / 'northwind.db'}"
    r = cairn("templates", "load-northwind", str(csv_dir), "--to", business, data_dir=None)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["rows"]["order_details"] == 2155
    r = cairn("templates", "load-northwind", str(csv_dir), "--to", business, data_dir=None)
    assert "cannot load Northwind" in one_line_error(r)  # tables exist: --replace is explicit

    admin = json.loads(cairn("members", "add", "ada", "--role", "admin", data_dir=data).stdout)
    viewer = json.loads(cairn("members", "add", "vic", "--role", "viewer", data_dir=data).stdout)
    asyncio.run(_context_set(f"sqlite+aiosqlite:///{data / 'cairn.db'}", admin["memberId"]))
    env = {"CAIRN_TEMPLATES_DATABASE_URL": business}
    args = ("templates", "load", "app/templates/northwind.yaml", "--context-set", "sales")
    r = cairn(*args, "--member", viewer["memberId"], data_dir=data, env=env)
    assert "templates need an admin or owner" in one_line_error(r)
    r = cairn(*args, "--member", admin["memberId"], "--approve", data_dir=data, env=env)
    assert r.returncode == 0, r.stderr
    loaded = json.loads(r.stdout)["templates"]
    assert len(loaded) == 10 and all(t["approved"] and t["version"] == 1 for t in loaded)
    r = cairn(*args, "--member", admin["memberId"], data_dir=data, env=env)  # unchanged: still approved
    assert all(t["approved"] for t in json.loads(r.stdout)["templates"])


@pytest.mark.shared_data
async def test_the_demo_template_is_approved_and_runs(tmp_path):
    from cairn.app.cli.templates import prepare_template_demo, template_demo_query
    from cairn.app.core.config import Settings
    from cairn.app.core.migrate import upgrade_database
    from cairn.app.templates import RunTemplateRequest, TemplateContext, TemplatesDatabase, run_template
    from tests import factories

    csv_dir = shared_data("northwind", "csv")
    settings = Settings(data_dir=tmp_path)
    await asyncio.to_thread(upgrade_database, settings.resolved_database_url)
    db = Database(settings.resolved_database_url)
    async with db.session() as s:
        ws = await factories.workspace(s)
        owner, _ = await factories.member(s, workspace_id=ws.id, role="owner")
    await db.dispose()
    first = await prepare_template_demo(settings, csv_dir, ws.id, owner.id)
    configured, set_id, template_id = await prepare_template_demo(settings, csv_dir, ws.id, owner.id)
    assert (set_id, template_id) == first[1:]  # a second demo run reuses the set and template
    assert configured.templates_database_url.endswith("northwind.db")
    assert template_id in template_demo_query(set_id, template_id)
    db = Database(settings.resolved_database_url)
    services = TemplateContext(configured, db, TemplatesDatabase(configured.templates_database_url))
    agent = factories.agent_principal(factories.member_principal(owner), scopes={"queries:run"})
    try:
        run = await run_template(
            services,
            agent,
            RunTemplateRequest(template_id, {"start": "1997-01-01", "end": "1997-12-31", "top": 5}),
        )
    finally:
        await services.query_database.close()
        await db.dispose()
    assert len(run.result.rows) == 5 and run.result.rows[0]["product_name"] == "Côte de Blaye"
