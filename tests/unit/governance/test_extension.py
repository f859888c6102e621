"""The Governed field extension: principal injection, envelope statuses, coded errors, and
exactly one log line per call — for a subscription, one when its stream ends, however it ends.

A tiny schema over real registry operations, a real RequestContext whose member principal is
already authenticated and rate limits off, so no database is involved.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator
from types import SimpleNamespace

import pytest
import strawberry
from strawberry.types import Info

from cairn.app.context import RequestContext, Services
from cairn.app.core.config import Settings
from cairn.app.core.errors import BadInput, CairnError, Forbidden, NotFound
from cairn.app.governance import Governed, Principal
from cairn.app.governance.rate_limits import RateLimiter
from tests import factories

closed: list[str] = []


def _validate_id(id: str) -> None:
    if id == "bad":
        raise BadInput("id: must not be 'bad'")


@strawberry.type
class Query:
    @strawberry.field(extensions=[Governed("viewer")])
    async def viewer(self, info: Info, principal: Principal) -> str:
        return f"{principal.kind}:{principal.id}"

    @strawberry.field(extensions=[Governed("document", validate=_validate_id)])
    async def document(self, info: Info, id: str, principal: Principal) -> str:
        if id == "forbidden":
            raise Forbidden("not yours")
        if id == "missing":
            raise NotFound("no such document")
        if id == "crash":
            raise RuntimeError("secret detail")
        return id


@strawberry.type
class Mutation:
    @strawberry.mutation(extensions=[Governed("createCollection", validate=lambda name: None)])
    async def create_collection(self, info: Info, name: str) -> str:
        return name


@strawberry.type
class Subscription:
    @strawberry.subscription(extensions=[Governed("contextPackStream", validate=_validate_id)])
    async def context_pack_stream(self, info: Info, id: str, principal: Principal) -> AsyncGenerator[str, None]:
        try:
            yield f"{principal.id}:1"
            if id == "fail":
                raise PackFailed("budget exhausted")
            yield f"{principal.id}:2"
        finally:
            closed.append(id)


class PackFailed(CairnError):
    """A server-side failure inside a stream (500)."""

    code = "PACK_FAILED"
    http_status = 500


schema = strawberry.Schema(query=Query, mutation=Mutation, subscription=Subscription)


def _context(role: str = "editor") -> RequestContext:
    off = {f"rate_limit_{c}_per_minute": 0 for c in ("packs", "decisions", "writes", "reads")}
    settings = Settings(**off)
    services = Services(  # no database, indexes, ontology or judge: the extension never reaches them
        settings=settings,
        db=None,  # type: ignore[arg-type]
        indexes=None,  # type: ignore[arg-type]
        ontology=None,  # type: ignore[arg-type]
        judge=None,  # type: ignore[arg-type]
        decisions=None,  # type: ignore[arg-type]
        rate_limiter=RateLimiter.from_settings(settings),
        query_database=None,  # type: ignore[arg-type]
    )
    who = factories.principal(workspace_id="ws_test", member_id="m_1", role=role)
    request = SimpleNamespace(scope={"state": {"cairn_principal": who}})
    return RequestContext(services, {}, request=request)


@pytest.fixture
def calls(caplog):
    caplog.set_level(logging.INFO, logger="cairn.adapter")

    def logged() -> list[tuple[str, str]]:
        return [(r.operation, r.status) for r in caplog.records if r.name == "cairn.adapter" and r.msg == "call %s %s"]

    return logged


def test_principal_is_never_a_graphql_argument():
    sdl = str(schema)
    assert "viewer: String!" in sdl
    assert "document(id: String!): String!" in sdl
    assert "contextPackStream(id: String!): String!" in sdl
    assert "principal" not in sdl


async def test_a_query_gets_the_principal_and_is_logged_once(calls):
    ctx = _context()
    result = await schema.execute('{ viewer document(id: "d1") }', context_value=ctx)
    assert result.errors is None
    assert result.data == {"viewer": "member:m_1", "document": "d1"}
    assert [(c.operation, c.status) for c in ctx.envelope.calls] == [("viewer", "OK"), ("document", "OK")]
    assert calls() == [("viewer", "OK"), ("document", "OK")]


@pytest.mark.parametrize(
    ("id", "code", "status"),
    [
        ("bad", "BAD_USER_INPUT", "ERROR"),  # validate, before the resolver
        ("missing", "NOT_FOUND", "ERROR"),
        ("forbidden", "FORBIDDEN", "REJECTED"),  # 401/403 are refusals
        ("crash", "INTERNAL_SERVER_ERROR", "ERROR"),
    ],
)
async def test_failures_are_coded_and_logged_once(calls, id, code, status):
    ctx = _context()
    result = await schema.execute(f'{{ document(id: "{id}") }}', context_value=ctx)
    assert [e.extensions["code"] for e in result.errors] == [code]
    assert "secret detail" not in result.errors[0].message
    assert [(c.operation, c.status) for c in ctx.envelope.calls] == [("document", status)]
    assert calls() == [("document", status)]


async def test_a_permission_refusal_is_rejected_before_the_resolver(calls):
    ctx = _context(role="viewer")
    result = await schema.execute('mutation { createCollection(name: "c") }', context_value=ctx)
    assert [e.extensions["code"] for e in result.errors] == ["FORBIDDEN"]
    assert [(c.operation, c.status) for c in ctx.envelope.calls] == [("createCollection", "REJECTED")]
    assert calls() == [("createCollection", "REJECTED")]


async def _collect(ctx: RequestContext, id: str, take: int | None = None) -> list:
    stream = await schema.subscribe(f'subscription {{ contextPackStream(id: "{id}") }}', context_value=ctx)
    out = []
    if not hasattr(stream, "__aiter__"):  # refused before the stream started
        return [stream]
    async for result in stream:
        out.append(result)
        if take is not None and len(out) == take:
            break
    await stream.aclose()
    return out


async def test_a_subscription_is_logged_once_when_its_stream_ends(calls):
    ctx = _context()
    results = await _collect(ctx, "s1")
    assert [r.data for r in results] == [{"contextPackStream": "m_1:1"}, {"contextPackStream": "m_1:2"}]
    assert [(c.operation, c.status) for c in ctx.envelope.calls] == [("contextPackStream", "OK")]
    assert calls() == [("contextPackStream", "OK")]
    assert closed[-1] == "s1"


async def test_an_error_inside_a_stream_is_coded_and_logged_once(calls):
    ctx = _context()
    results = await _collect(ctx, "fail")
    assert results[0].data == {"contextPackStream": "m_1:1"}
    assert [e.extensions["code"] for e in results[-1].errors] == ["PACK_FAILED"]
    assert calls() == [("contextPackStream", "ERROR")]
    assert closed[-1] == "fail"


async def test_a_stream_closed_early_is_closed_and_logged_once(calls):
    ctx = _context()
    results = await _collect(ctx, "early", take=1)
    assert [r.data for r in results] == [{"contextPackStream": "m_1:1"}]
    assert calls() == [("contextPackStream", "OK")]
    assert closed[-1] == "early"


async def test_a_refused_subscription_is_coded_and_logged_once(calls):
    ctx = _context()
    results = await _collect(ctx, "bad")
    errors = [e for r in results for e in (r.errors or [])]
    assert [e.extensions["code"] for e in errors] == ["BAD_USER_INPUT"]
    assert calls() == [("contextPackStream", "ERROR")]
    assert "bad" not in closed  # the resolver never ran


async def test_building_another_schema_over_the_same_types_keeps_the_principal():
    # apply() runs again for the second schema on the same fields (their principal argument
    # already removed): the first schema's resolvers must still get the principal
    strawberry.Schema(query=Query)
    result = await schema.execute("{ viewer }", context_value=_context())
    assert result.errors is None and result.data == {"viewer": "member:m_1"}
