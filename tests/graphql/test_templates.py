"""Query templates through the real server (Cairn on SQLite and PostgreSQL; a tiny SQLite business
database): editors propose, admins approve, members see the SQL and the check's verdict, agents
list and run without ever seeing SQL, coded errors."""

from __future__ import annotations

import asyncio

import pytest
from toon_format import decode

from cairn.app.core.config import Settings
from cairn.app.core.db import Database
from cairn.app.core.migrate import upgrade_database
from cairn.app.identity import service as identity
from tests import factories
from tests.business import TINY_SQL, business_url
from tests.conftest import drop_postgres_database, postgres_database
from tests.graphql.conftest import Live, _start

pytestmark = pytest.mark.both_backends  # template versions and approvals are stored

TEMPLATE = {
    "name": "items_by_name",
    "description": "Items with one of the given names, sold on or after a date.",
    "sql": f"{TINY_SQL} WHERE name IN :names AND sold_on >= :since ORDER BY id",
    "parameters": [
        {"name": "names", "type": "list", "items": {"type": "string", "maxLength": 20}, "maxItems": 3},
        {"name": "since", "type": "date", "default": "2024-01-01"},
    ],
}
CREATE = """mutation($s: ID!, $i: QueryTemplateInput!) {
  createQueryTemplate(contextSetId: $s, input: $i) { id version approved sql }
}"""
APPROVE = """mutation($t: ID!, $v: Int) {
  approveQueryTemplate(templateId: $t, version: $v) { id version approved approvedBy }
}"""
LIST = """query($s: ID) {
  queryTemplates(contextSetId: $s) {
    id name description approved sql version
    parameters { name type required default maxItems items { type maxLength } }
  }
}"""
RUN = """query($t: ID!, $p: JSON, $f: ResponseFormat = JSON) {
  runQueryTemplate(templateId: $t, parameters: $p, responseFormat: $f) {
    templateId name columns { name type } rows toon rowCount truncated rowCap notices { code message }
  }
}"""


async def _bootstrap(url: str) -> dict[str, str]:
    db = Database(url)
    tokens: dict[str, str] = {}
    try:
        async with db.session() as s:
            ws = await identity.create_workspace(s, name="templates")
            for role in ("owner", "admin", "editor"):
                m, tokens[role] = await factories.member(s, workspace_id=ws.id, role=role)
                if role == "owner":
                    owner = factories.member_principal(m)
            _c, tokens["agent"] = await factories.credential(s, creator=owner, scopes=["context:read", "queries:run"])
            _c, tokens["reader"] = await factories.credential(s, creator=owner, scopes=["context:read"])
    finally:
        await db.dispose()
    return tokens


@pytest.fixture(scope="module")
def served(backend, tmp_path_factory) -> Live:
    """A server (no embedder) whose templates run on a tiny SQLite business database."""
    tmp = tmp_path_factory.mktemp(f"templates-{backend}")
    pg_url = postgres_database() if backend == "postgres" else None
    with business_url("sqlite", tmp) as business:
        settings = Settings(
            data_dir=tmp / "data", database_url=pg_url, embedder="none", templates_database_url=business
        )
        upgrade_database(settings.resolved_database_url)
        tokens = asyncio.run(_bootstrap(settings.resolved_database_url))
        server, thread, port = _start(settings)
        live = Live(backend, f"http://127.0.0.1:{port}", f"ws://127.0.0.1:{port}/graphql", settings, tokens)
        try:
            live.ids["set"] = live.data('mutation{createContextSet(input:{name:"sales"}){id}}', token=tokens["admin"])[
                "createContextSet"
            ]["id"]
            yield live
        finally:
            server.should_exit = True
            thread.join(timeout=30)
            if pg_url:
                drop_postgres_database(pg_url)


def _error(r) -> dict:
    body = r.json()
    assert body.get("errors"), body
    return body["errors"][0]


def _approved(live: Live, template: dict) -> str:
    t = live.data(CREATE, {"s": live.ids["set"], "i": template}, live.tokens["admin"])["createQueryTemplate"]
    live.data(APPROVE, {"t": t["id"], "v": t["version"]}, live.tokens["admin"])
    return t["id"]


def test_admin_approves_and_an_agent_lists_and_runs_without_sql(served):
    created = served.data(CREATE, {"s": served.ids["set"], "i": TEMPLATE}, served.tokens["admin"])
    t = created["createQueryTemplate"]
    assert (t["version"], t["approved"], t["sql"]) == (1, False, TEMPLATE["sql"])
    agent = served.tokens["agent"]
    assert served.data(LIST, {"s": served.ids["set"]}, agent)["queryTemplates"] == []
    approved = served.data(APPROVE, {"t": t["id"], "v": 1}, served.tokens["admin"])["approveQueryTemplate"]
    assert approved["approved"] and approved["approvedBy"]

    listed = [x for x in served.data(LIST, {"s": served.ids["set"]}, agent)["queryTemplates"] if x["id"] == t["id"]]
    assert listed[0]["sql"] is None and listed[0]["name"] == "items_by_name"
    assert listed[0]["parameters"] == [
        {"name": "names", "type": "LIST", "required": True, "default": None, "maxItems": 3,
         "items": {"type": "STRING", "maxLength": 20}},
        {"name": "since", "type": "DATE", "required": False, "default": "2024-01-01", "maxItems": None, "items": None},
    ]  # fmt: skip

    params = {"names": ["apple", "cherry", "it's"], "since": "2024-02-01"}
    out = served.data(RUN, {"t": t["id"], "p": params}, agent)["runQueryTemplate"]
    assert [r["name"] for r in out["rows"]] == ["cherry", "it's"]
    assert out["columns"][0] == {"name": "id", "type": "integer"}
    assert (out["rowCount"], out["truncated"], out["notices"], out["toon"]) == (2, False, [], None)
    toon = served.data(RUN, {"t": t["id"], "p": params, "f": "TOON"}, agent)["runQueryTemplate"]
    assert toon["rows"] is None and decode(toon["toon"])["rows"] == out["rows"]


def test_bad_parameters_are_coded_errors_naming_parameter_and_limit(served):
    tid = _approved(served, {**TEMPLATE, "name": "items_checked"})
    r = served.gql(RUN, {"t": tid, "p": {"names": ["a", "b", "c", "d"]}}, served.tokens["agent"])
    assert r.status_code == 400
    err = _error(r)
    assert err["extensions"]["code"] == "QUERY_PARAMETER_INVALID"
    assert (err["extensions"]["parameter"], err["extensions"]["limit"], err["extensions"]["reason"]) == (
        "names",
        3,
        "TOO_MANY",
    )
    r = served.gql(
        RUN, {"t": tid, "p": {"names": ["a"], "since": "2024-01-01'; DROP TABLE items; --"}}, served.tokens["agent"]
    )
    assert _error(r)["extensions"]["reason"] == "BAD_FORMAT"
    r = served.gql(RUN, {"t": tid, "p": ["apple"]}, served.tokens["agent"])
    assert _error(r)["extensions"]["code"] == "QUERY_PARAMETER_INVALID"


def test_a_change_needs_a_new_approval(served):
    tid = _approved(served, {**TEMPLATE, "name": "items_changed"})
    changed = {**TEMPLATE, "name": "items_changed", "sql": TEMPLATE["sql"].replace(">=", ">")}
    upd = served.data(
        "mutation($t: ID!, $i: QueryTemplateInput!){updateQueryTemplate(templateId:$t, input:$i){version approved}}",
        {"t": tid, "i": changed},
        served.tokens["admin"],
    )["updateQueryTemplate"]
    assert upd == {"version": 2, "approved": False}
    r = served.gql(RUN, {"t": tid, "p": {"names": ["apple"]}}, served.tokens["agent"])
    assert r.status_code == 409 and _error(r)["extensions"]["code"] == "QUERY_TEMPLATE_NOT_APPROVED"
    r = served.gql(APPROVE, {"t": tid, "v": 1}, served.tokens["admin"])
    assert _error(r)["extensions"]["code"] == "CONFLICT"


CHECK = "query($t: ID!){checkQueryTemplate(templateId: $t){version dialect passed violations}}"


def test_an_editor_proposes_members_see_sql_and_the_verdict_an_admin_approves(served):
    proposed = {**TEMPLATE, "name": "editor_proposal"}
    t = served.data(CREATE, {"s": served.ids["set"], "i": proposed}, served.tokens["editor"])["createQueryTemplate"]
    assert (t["approved"], t["sql"]) == (False, proposed["sql"])
    # the editor sees the draft and its SQL; an agent sees neither (drafts are not listed)
    mine = served.data(LIST, {"s": served.ids["set"]}, served.tokens["editor"])["queryTemplates"]
    assert [x["sql"] for x in mine if x["id"] == t["id"]] == [proposed["sql"]]
    agents = served.data(LIST, {"s": served.ids["set"]}, served.tokens["agent"])["queryTemplates"]
    assert t["id"] not in [x["id"] for x in agents] and all(x["sql"] is None for x in agents)
    verdict = served.data(CHECK, {"t": t["id"]}, served.tokens["editor"])["checkQueryTemplate"]
    assert verdict == {"version": 1, "dialect": "sqlite", "passed": True, "violations": []}
    served.data(APPROVE, {"t": t["id"], "v": 1}, served.tokens["admin"])
    # a bad proposal: the verdict lists the violation and approval refuses it
    bad = {**TEMPLATE, "name": "editor_bad", "sql": "DELETE FROM items WHERE name IN :names AND sold_on >= :since"}
    b = served.data(CREATE, {"s": served.ids["set"], "i": bad}, served.tokens["editor"])["createQueryTemplate"]
    verdict = served.data(CHECK, {"t": b["id"]}, served.tokens["admin"])["checkQueryTemplate"]
    assert verdict["passed"] is False and any("must be a SELECT" in v for v in verdict["violations"])
    r = served.gql(CHECK, {"t": b["id"]}, served.tokens["agent"])
    assert _error(r)["extensions"]["code"] == "AGENT_OPERATION_NOT_ALLOWED"


def test_approval_lists_every_violation(served):
    bad = {**TEMPLATE, "name": "bad_one", "sql": "DELETE FROM items WHERE name IN :names AND sold_on >= :since"}
    t = served.data(CREATE, {"s": served.ids["set"], "i": bad}, served.tokens["admin"])["createQueryTemplate"]
    err = _error(served.gql(APPROVE, {"t": t["id"]}, served.tokens["admin"]))
    assert err["extensions"]["code"] == "QUERY_TEMPLATE_REFUSED"
    assert any("must be a SELECT" in v for v in err["extensions"]["violations"])


@pytest.mark.parametrize(
    ("who", "query", "code"),
    [
        ("agent", CREATE, "AGENT_OPERATION_NOT_ALLOWED"),
        ("editor", APPROVE, "FORBIDDEN"),
        ("reader", LIST, "AGENT_SCOPE_MISSING"),
        ("reader", RUN, "AGENT_SCOPE_MISSING"),
    ],
)
def test_who_may_do_what(served, who, query, code):
    variables = {"s": served.ids["set"], "i": TEMPLATE, "t": "qt_0000000000000000", "p": {}}
    names = {"CREATE": ("s", "i"), "APPROVE": ("t",), "LIST": ("s",), "RUN": ("t", "p")}
    key = next(k for k, v in {"CREATE": CREATE, "APPROVE": APPROVE, "LIST": LIST, "RUN": RUN}.items() if v == query)
    r = served.gql(query, {k: variables[k] for k in names[key]}, served.tokens[who])
    assert _error(r)["extensions"]["code"] == code
