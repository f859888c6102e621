"""The static contract check passes on the real schema and app, and catches violations."""

from __future__ import annotations

from pathlib import Path

import strawberry
from strawberry.printer import print_schema
from strawberry.types import Info

from cairn.app.core.config import Settings
from cairn.app.governance import Governed
from cairn.app.governance.contract import contract_violations
from cairn.app.governance.operation import parse_coordinate
from cairn.app.governance.registry import REGISTRY
from cairn.app.main import create_app
from cairn.resolvers.schema import Mutation, Subscription, schema

ROOT = Path(__file__).resolve().parents[2]


def test_real_schema_and_routes_are_compliant(tmp_path):
    # every optional route switched on (GET /metrics is mounted only with metrics on), so every
    # registered route must be served
    app = create_app(Settings(data_dir=tmp_path, metrics=True))
    assert contract_violations(schema, app) == []
    # with metrics off the registry still names GET /metrics: the only route that may be missing
    off = contract_violations(schema, create_app(Settings(data_dir=tmp_path / "off")))
    assert off == ["GET /metrics is registered but no route serves it"]


def test_check_fails_on_an_unregistered_field():
    @strawberry.type
    class Rogue:
        @strawberry.field
        def secret(self) -> str:
            return "leak"

        @strawberry.field(extensions=[Governed("viewer")])
        async def viewer(self, info: Info) -> str:
            return "x"

    rogue = strawberry.Schema(query=Rogue, mutation=Mutation, subscription=Subscription)
    problems = contract_violations(rogue)
    assert "query field secret does not go through the adapter (no Governed extension)" in problems
    assert any("contextPack is registered but no GraphQL field serves it" in p for p in problems)


def test_check_fails_on_arguments_without_validation_and_unregistered_routes(tmp_path):
    @strawberry.type
    class Loose:
        @strawberry.field(extensions=[Governed("document")])
        async def document(self, info: Info, id: str) -> str:
            return id

    problems = contract_violations(strawberry.Schema(query=Loose))
    assert "query field document takes arguments but has no validate hook" in problems
    from starlette.routing import Route

    app = create_app(Settings(data_dir=tmp_path))
    app.router.routes.append(Route("/backdoor", lambda r: None, methods=["POST"]))
    assert "route POST /backdoor is not registered" in contract_violations(schema, app)


def test_registry_coordinates_are_unique_and_parseable():
    coords = [op.coordinate for op in REGISTRY.values()]
    assert len(coords) == len(set(coords))
    for c in coords:
        assert len(parse_coordinate(c)) == 5


def test_profiles_need_all_five_lists():
    good = {
        k: [] for k in ("grantedCapabilities", "naturalAvoidances", "suggestOnly", "reconfirmBefore", "hardBoundaries")
    }
    assert contract_violations(schema, profiles=[good]) == []
    bad = dict(good)
    del bad["suggestOnly"]
    assert contract_violations(schema, profiles=[bad]) == ["profile #0 lacks the list(s) ['suggestOnly']"]


def test_committed_schema_equals_served_schema():
    # print_schema is all `strawberry export-schema` does after importing the schema; in this
    # process it spares a Python process that imports the app (5.6 s of CPU, 2026-12-03)
    served = print_schema(schema)
    committed = (ROOT / "schema.graphql").read_text()
    assert served.strip() == committed.strip(), (
        "schema.graphql is stale: run `python -m strawberry export-schema cairn.resolvers.schema:schema > schema.graphql`"
    )


def test_every_operation_has_a_valid_rate_class(monkeypatch):
    from cairn.app.governance.operation import RATE_CLASSES, Operation

    for op in REGISTRY.values():
        if op.auth == "required":
            assert op.rate_class in RATE_CLASSES, op.name
        else:
            assert op.rate_class is None, op.name
    expected = {
        "contextPack": "packs",
        "contextPackStream": "packs",
        "POST /v1/context-packs/stream": "packs",
        "createDecision": "decisions",
        "POST /api/v1/decisions": "decisions",
        "upsertDocument": "writes",
        "rememberMemory": "writes",
        "decision": "reads",
        "GET /api/v1/decisions/{decision_id}": "reads",
        "viewer": "reads",
        "GET /healthz": None,
    }
    assert {n: REGISTRY[n].rate_class for n in expected} == expected
    monkeypatch.setitem(
        REGISTRY,
        "viewer",
        Operation("viewer", "query", "G1.U1.P5.Z1.A1", "identity:read", frozenset(), "*", rate_class="bulk"),
    )  # type: ignore[arg-type]
    monkeypatch.setitem(
        REGISTRY,
        "GET /healthz",
        Operation("GET /healthz", "http", "G1.U2.P8.Z1.A1", "system:health", auth="none", rate_class="reads"),
    )
    problems = contract_violations(schema)
    assert "viewer: rate class 'bulk' is not one of ['packs', 'decisions', 'writes', 'reads']" in problems
    assert "GET /healthz: takes no credential, so it cannot have rate class 'reads'" in problems
