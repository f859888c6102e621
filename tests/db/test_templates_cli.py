"""``cairn templates load-northwind`` and ``cairn templates load`` as an operator runs them."""

from __future__ import annotations

import asyncio
import json

import pytest

from app.core.db import Database
from app.core.ids import new_id, utcnow
from app.core.models import ContextSet, Workspace
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
