"""Query templates as a service on SQLite and PostgreSQL (Cairn's database) with a tiny SQLite
business database: approval, re-approval after a change, who sees the SQL, context sets."""

from __future__ import annotations

import pytest

from cairn.app.core.config import Settings
from cairn.app.core.errors import CairnError
from cairn.app.core.ids import new_id, utcnow
from cairn.app.core.models import ContextSet
from cairn.app.templates import (
    ApproveTemplateRequest,
    CreateTemplateRequest,
    ListTemplatesRequest,
    QueryParameterInvalid,
    QueryTemplateRefused,
    RunTemplateRequest,
    TemplateContext,
    TemplatesDatabase,
    UpdateTemplateRequest,
    approve_template,
    create_template,
    definition_from_json,
    list_templates,
    run_template,
    update_template,
)
from tests import factories
from tests.business import TINY_SQL, business_url

DEFINITION = {
    "name": "items_since",
    "description": "Items sold on or after a date.",
    "sql": f"{TINY_SQL} WHERE sold_on >= :since ORDER BY id",
    "parameters": [{"name": "since", "type": "date"}],
}


@pytest.fixture(scope="module")
def tiny_sqlite(tmp_path_factory):
    with business_url("sqlite", tmp_path_factory.mktemp("tiny-svc")) as url:
        yield url


@pytest.fixture
async def services(db, tiny_sqlite, tmp_path):
    svc = TemplateContext(Settings(data_dir=tmp_path), db, TemplatesDatabase(tiny_sqlite))
    yield svc
    await svc.query_database.close()


async def _world(db, *, active=True):
    """A workspace with an admin, an editor, a context set and agents (unbound, bound elsewhere)."""
    async with db.session() as s:
        ws = await factories.workspace(s)
        admin, _ = await factories.member(s, workspace_id=ws.id, role="admin")
        editor, _ = await factories.member(s, workspace_id=ws.id, role="editor")
        sets = []
        for name in ("sales", "other"):
            cs = ContextSet(
                id=new_id("cs"),
                workspace_id=ws.id,
                name=name,
                active=active,
                created_at=utcnow(),
                created_by=admin.id,
                updated_at=utcnow(),
                updated_by=admin.id,
            )
            s.add(cs)
            sets.append(cs.id)
    admin_p = factories.member_principal(admin)
    editor_p = factories.member_principal(editor)
    agent = factories.agent_principal(editor_p, scopes={"queries:run"})
    bound_other = factories.agent_principal(editor_p, scopes={"queries:run"}, context_set_id=sets[1])
    return {"admin": admin_p, "editor": editor_p, "agent": agent, "boundOther": bound_other, "sets": sets}


async def _created(services, w, definition=DEFINITION):
    return await create_template(
        services, w["admin"], CreateTemplateRequest(w["sets"][0], definition_from_json(definition))
    )


async def test_approve_list_run_and_reapprove_after_a_change(services, db):
    w = await _world(db)
    t = await _created(services, w)
    assert (t.approved, t.version, t.sql) == (False, 1, DEFINITION["sql"])
    listing = ListTemplatesRequest(w["sets"][0])
    assert await list_templates(services, w["agent"], listing) == []  # drafts are not shown to agents
    run = RunTemplateRequest(t.id, {"since": "2024-03-01"})
    with pytest.raises(CairnError) as info:
        await run_template(services, w["agent"], run)
    assert info.value.code == "QUERY_TEMPLATE_NOT_APPROVED" and info.value.http_status == 409

    approved = await approve_template(services, w["admin"], ApproveTemplateRequest(t.id, version=1))
    assert approved.approved and approved.approved_by == w["admin"].member_id
    seen = await list_templates(services, w["agent"], listing)
    assert [(v.name, v.sql, v.approved_by) for v in seen] == [("items_since", None, None)]
    assert seen[0].parameters[0].name == "since"
    out = await run_template(services, w["agent"], run)
    assert [r["name"] for r in out.result.rows] == ["cherry", "it's"]

    changed = {**DEFINITION, "sql": DEFINITION["sql"].replace(">=", ">")}
    t2 = await update_template(services, w["admin"], UpdateTemplateRequest(t.id, definition_from_json(changed)))
    assert (t2.approved, t2.version) == (False, 2)
    with pytest.raises(CairnError) as info:
        await run_template(services, w["agent"], run)
    assert info.value.code == "QUERY_TEMPLATE_NOT_APPROVED"
    assert await list_templates(services, w["agent"], listing) == []
    with pytest.raises(CairnError) as info:
        await approve_template(services, w["admin"], ApproveTemplateRequest(t.id, version=1))
    assert info.value.code == "CONFLICT"
    await approve_template(services, w["admin"], ApproveTemplateRequest(t.id, version=2))
    assert len((await run_template(services, w["agent"], run)).result.rows) == 2

    same = await update_template(services, w["admin"], UpdateTemplateRequest(t.id, definition_from_json(changed)))
    assert (same.approved, same.version) == (True, 2)  # an identical definition changes nothing


async def test_approval_refuses_bad_sql_and_lists_every_violation(services, db):
    w = await _world(db)
    bad = {
        **DEFINITION,
        "name": "bad",
        "sql": "SELECT pg_sleep(1), * FROM items WHERE sold_on >= :since AND id = :undeclared FOR UPDATE",
    }
    t = await _created(services, w, bad)
    with pytest.raises(QueryTemplateRefused) as info:
        await approve_template(services, w["admin"], ApproveTemplateRequest(t.id))
    violations = info.value.extra["violations"]
    assert len(violations) == 3, violations
    assert not (await list_templates(services, w["admin"], ListTemplatesRequest(w["sets"][0])))[0].approved


async def test_parameters_are_checked_before_the_business_database(services, db):
    w = await _world(db)
    t = await _created(services, w)
    await approve_template(services, w["admin"], ApproveTemplateRequest(t.id))
    with pytest.raises(QueryParameterInvalid) as info:
        await run_template(services, w["agent"], RunTemplateRequest(t.id, {"since": "2024-13-01"}))
    assert info.value.extra == {
        "field": "parameters.since",
        "parameter": "since",
        "reason": "BAD_FORMAT",
        "limit": "YYYY-MM-DD",
    }


async def test_context_sets_bind_and_must_be_active(services, db):
    w = await _world(db)
    t = await _created(services, w)
    await approve_template(services, w["admin"], ApproveTemplateRequest(t.id))
    run = RunTemplateRequest(t.id, {"since": "2024-01-01"})
    with pytest.raises(CairnError) as info:
        await run_template(services, w["boundOther"], run)
    assert info.value.code == "AGENT_CONTEXT_SET_SCOPE_REFUSED"
    with pytest.raises(CairnError) as info:
        await list_templates(services, w["boundOther"], ListTemplatesRequest(w["sets"][0]))
    assert info.value.code == "AGENT_CONTEXT_SET_SCOPE_REFUSED"
    with pytest.raises(CairnError) as info:
        await run_template(services, w["agent"], RunTemplateRequest(t.id, {}, context_set_id=w["sets"][1]))
    assert info.value.code == "NOT_FOUND"
    async with db.session() as s:
        cs = await s.get(ContextSet, w["sets"][0])
        cs.active = False
        s.add(cs)
    with pytest.raises(CairnError) as info:
        await run_template(services, w["agent"], run)
    assert info.value.code == "AGENT_CONTEXT_SET_INACTIVE"
    with pytest.raises(CairnError) as info:
        await list_templates(services, w["agent"], ListTemplatesRequest(w["sets"][0]))
    assert info.value.code == "AGENT_CONTEXT_SET_INACTIVE"
    admin_view = await list_templates(services, w["admin"], ListTemplatesRequest(w["sets"][0]))
    assert [v.name for v in admin_view] == ["items_since"]


async def test_names_are_unique_per_set_and_workspaces_are_separate(services, db):
    w = await _world(db)
    t = await _created(services, w)
    with pytest.raises(CairnError) as info:
        await _created(services, w)
    assert info.value.code == "CONFLICT"
    stranger = await _world(db)
    with pytest.raises(CairnError) as info:
        await approve_template(services, stranger["admin"], ApproveTemplateRequest(t.id))
    assert info.value.code == "NOT_FOUND"
    with pytest.raises(CairnError) as info:
        await create_template(
            services, stranger["admin"], CreateTemplateRequest(w["sets"][0], definition_from_json(DEFINITION))
        )
    assert info.value.code == "NOT_FOUND"


async def test_without_a_business_database_approval_and_runs_answer_503(db, tmp_path):
    services = TemplateContext(Settings(data_dir=tmp_path), db, TemplatesDatabase(None))
    w = await _world(db)
    t = await _created(services, w)
    for call in (
        approve_template(services, w["admin"], ApproveTemplateRequest(t.id)),
        run_template(services, w["agent"], RunTemplateRequest(t.id, {})),
    ):
        with pytest.raises(CairnError) as info:
            await call
        assert (info.value.code, info.value.http_status) == ("TEMPLATES_DATABASE_NOT_CONFIGURED", 503)
