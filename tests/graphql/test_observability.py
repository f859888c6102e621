"""Observability through the ASGI app: OpenTelemetry spans of a real pack, Prometheus /metrics.

Tracing uses the SDK's own test exporter (``InMemorySpanExporter``) installed as the process's
tracer provider (OpenTelemetry allows one per process; spans of later tests in the session also
land there, harmlessly). The app runs on SQLite and on PostgreSQL with the real embedding model, Whoosh and Qdrant
Edge; calls go through ``httpx.ASGITransport`` (the same ASGI app uvicorn serves).
"""

from __future__ import annotations

import asyncio
import dataclasses

import httpx
import pytest
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client.parser import text_string_to_metric_families

from cairn.app.context import Services, bootstrap
from cairn.app.core.config import Settings
from cairn.app.core.migrate import upgrade_database
from cairn.app.governance.operation import RATE_CLASSES
from cairn.app.main import create_app
from cairn.app.observability import Metrics, Telemetry, install
from tests.conftest import drop_postgres_database, postgres_database
from tests.graphql.conftest import _bootstrap

TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
PARENT_ID = "b7ad6b7169203331"
PACK = "query($i: ContextPackInput!) { contextPack(input: $i) { items { text } complete timings { legsMs } } }"
UPSERT = "mutation($i:UpsertDocumentInput!){upsertDocument(input:$i){documentId status}}"
DOCS = [
    ("fusion", "Reciprocal rank fusion combines the BM25 ranking and the dense vector ranking with k = 60."),
    ("billing", "Invoices are generated nightly at two o'clock and emailed to the billing contact."),
    ("etna", "Mount Etna is an active stratovolcano on the east coast of Sicily."),
]

pytestmark = pytest.mark.model


@dataclasses.dataclass
class Obs:
    backend: str
    services: Services
    exporter: InMemorySpanExporter
    owner: str
    ingest: dict[str, str]


@pytest.fixture(scope="module")
async def obs(backend, tmp_path_factory, embedder) -> Obs:
    exporter = InMemorySpanExporter()
    install(SimpleSpanProcessor(exporter))  # before bootstrap: SQL spans are attached there
    pg_url = await asyncio.to_thread(postgres_database) if backend == "postgres" else None
    settings = Settings(
        data_dir=tmp_path_factory.mktemp("obs"),
        database_url=pg_url,
        metrics=True,
        chunk_max_tokens=40,
        **{f"rate_limit_{c}_per_minute": 0 for c in RATE_CLASSES},
    )
    await asyncio.to_thread(upgrade_database, settings.resolved_database_url)
    tokens, _ids = await _bootstrap(settings.resolved_database_url)
    services = bootstrap(settings)
    owner = tokens["owner"]
    statuses: dict[str, str] = {}
    async with _client(services) as c:
        coll = (await _gql(c, 'mutation{createCollection(name:"obs"){id}}', {}, owner))["createCollection"]["id"]
        for ext, text in DOCS + [DOCS[0]]:  # the last write is unchanged
            r = await _gql(c, UPSERT, {"i": {"collectionId": coll, "externalId": ext, "text": text}}, owner)
            statuses[ext] = r["upsertDocument"]["status"]
    try:
        yield Obs(backend, services, exporter, owner, statuses)
    finally:
        services.indexes.close()
        await services.query_database.close()
        await services.db.dispose()
        if pg_url:
            await asyncio.to_thread(drop_postgres_database, pg_url)


def _client(services: Services, headers: dict[str, str] | None = None) -> httpx.AsyncClient:
    app = create_app(services.settings, services=services)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://cairn", headers=headers)


async def _gql(c: httpx.AsyncClient, query: str, variables: dict, token: str | None, **headers: str) -> dict:
    h = {"Authorization": f"Bearer {token}"} if token else {}
    r = await c.post("/graphql", json={"query": query, "variables": variables}, headers={**h, **headers})
    body = r.json()
    assert not body.get("errors"), body
    return body["data"]


def _hex(n: int, width: int) -> str:
    return format(n, f"0{width}x")


@pytest.mark.both_backends  # SQL spans name the engine (db.system)
async def test_pack_spans_continue_the_traceparent_and_chain(obs: Obs):
    obs.exporter.clear()
    async with _client(obs.services) as c:
        r = await c.post(
            "/graphql",
            json={
                "query": PACK,
                "variables": {"i": {"task": "How does reciprocal rank fusion combine BM25 and dense rankings?"}},
            },
            headers={"Authorization": f"Bearer {obs.owner}", "traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01"},
        )
    body = r.json()
    assert not body.get("errors"), body
    assert "Reciprocal rank fusion" in body["data"]["contextPack"]["items"][0]["text"]
    # Cairn's trace id is the OTEL trace id: the caller's, carried through
    assert body["extensions"]["envelope"]["traceId"] == f"trace_{TRACE_ID}"
    assert r.headers["x-cairn-trace"] == f"trace_{TRACE_ID}"

    spans = [s for s in obs.exporter.get_finished_spans() if _hex(s.context.trace_id, 32) == TRACE_ID]
    by_name: dict[str, list] = {}
    for s in spans:
        by_name.setdefault(s.name, []).append(s)
    ids = {s.context.span_id: s for s in spans}

    def parent_name(s) -> str | None:
        return ids[s.parent.span_id].name if s.parent and s.parent.span_id in ids else None

    server = by_name["POST /graphql"][0]
    assert _hex(server.parent.span_id, 16) == PARENT_ID and server.parent.is_remote
    assert server.attributes["http.response.status_code"] == 200
    op = by_name["graphql contextPack"][0]
    assert op.parent.span_id == server.context.span_id
    assert op.attributes["cairn.coordinate"] == "G1.U1.P1.Z1.A1"
    assert op.attributes["cairn.status"] == "OK" and op.attributes["cairn.trace_id"] == f"trace_{TRACE_ID}"
    # the legs run in threads, under the pack's legs stage, under the operation
    assert parent_name(by_name["pack.legs"][0]) == "graphql contextPack"
    bm25 = by_name["pack.leg.bm25"][0]
    assert parent_name(bm25) == "pack.legs"
    assert bm25.attributes["cairn.leg"] == "bm25" and bm25.attributes["cairn.leg.results"] >= 1
    embed, search = by_name["pack.leg.dense.embed"][0], by_name["pack.leg.dense.search"][0]
    assert parent_name(embed) == parent_name(search) == "pack.legs"
    assert search.attributes["cairn.leg"] == "dense" and search.attributes["cairn.leg.results"] == 3
    for stage in ("pack.fusion", "pack.resolve", "pack.packing", "pack.recheck"):
        assert parent_name(by_name[stage][0]) == "graphql contextPack", stage
    assert by_name["pack.packing"][0].attributes["cairn.pack.included"] >= 1
    # SQL statements are CLIENT spans inside the call (authentication, candidate rows, the replay record)
    sql = [
        s for s in spans if s.attributes.get("db.system") == {"sqlite": "sqlite", "postgres": "postgresql"}[obs.backend]
    ]
    assert any(s.attributes["db.operation"] == "SELECT" for s in sql)
    assert any(s.attributes["db.operation"] == "INSERT" for s in sql)  # the replay record
    for s in sql:  # each chains up to the server span
        p = s
        while p.parent is not None and p.parent.span_id in ids:
            p = ids[p.parent.span_id]
        assert p is server
    # one trace: every span of the request has the caller's trace id
    assert {_hex(s.context.trace_id, 32) for s in spans} == {TRACE_ID}


async def test_graph_leg_and_a_new_trace_agree_with_the_envelope(obs: Obs):
    obs.exporter.clear()
    async with _client(obs.services) as c:
        r = await c.post(
            "/graphql",
            json={
                "query": PACK,
                "variables": {"i": {"task": "Mount Etna volcano", "filters": {"sources": ["PASSAGES", "GRAPH"]}}},
            },
            headers={"Authorization": f"Bearer {obs.owner}"},
        )
    body = r.json()
    assert not body.get("errors"), body
    trace_id = body["extensions"]["envelope"]["traceId"]
    spans = obs.exporter.get_finished_spans()
    graph = [s for s in spans if s.name == "pack.leg.graph"]
    assert len(graph) == 1 and graph[0].attributes["cairn.leg"] == "graph"
    # no traceparent: the server span began the trace, and the envelope reports its id
    assert trace_id == f"trace_{_hex(graph[0].context.trace_id, 32)}"
    server = next(s for s in spans if s.name == "POST /graphql")
    assert server.parent is None and server.context.trace_id == graph[0].context.trace_id


async def test_x_cairn_trace_seeds_the_otel_trace(obs: Obs):
    obs.exporter.clear()
    mine = "ab" * 16
    async with _client(obs.services) as c:
        r = await c.post(
            "/graphql",
            json={"query": "{ viewer { id } }"},
            headers={"Authorization": f"Bearer {obs.owner}", "x-cairn-trace": f"trace_{mine}"},
        )
    assert r.json()["extensions"]["envelope"]["traceId"] == f"trace_{mine}"
    op = next(s for s in obs.exporter.get_finished_spans() if s.name == "graphql viewer")
    assert _hex(op.context.trace_id, 32) == mine


def _samples(text: str) -> dict[tuple[str, tuple], float]:
    out: dict[tuple[str, tuple], float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def _delta(before: dict, after: dict, name: str, **labels: str) -> float:
    key = (name, tuple(sorted(labels.items())))
    return after.get(key, 0.0) - before.get(key, 0.0)


async def test_metrics_count_exactly_the_calls_made(obs: Obs):
    task = {"task": "When are invoices generated?"}
    async with _client(obs.services) as c:
        before = _samples((await c.get("/metrics")).text)
        for _ in range(2):
            await _gql(c, PACK, {"i": task}, obs.owner)
        bad = await c.post(
            "/graphql",
            json={"query": PACK, "variables": {"i": {**task, "budget": {"maxTokens": 10}}}},
            headers={"Authorization": f"Bearer {obs.owner}"},
        )
        assert bad.json()["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"
        anon = await c.post("/graphql", json={"query": PACK, "variables": {"i": task}})
        assert anon.json()["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
        stream = await c.post("/v1/context-packs/stream", json=task, headers={"Authorization": f"Bearer {obs.owner}"})
        assert stream.status_code == 200 and stream.text.strip().endswith("}")
        r = await c.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    after = _samples(r.text)
    calls = "cairn_calls_total"
    pack_ok = dict(channel="graphql", operation="contextPack", status="OK", code="OK")
    assert _delta(before, after, calls, **pack_ok) == 2
    assert _delta(before, after, calls, **{**pack_ok, "status": "ERROR", "code": "BAD_USER_INPUT"}) == 1
    # no credential: refused at the /graphql gate, before parsing (so counted under POST /graphql)
    gate = dict(channel="http", operation="POST /graphql", status="REJECTED", code="UNAUTHENTICATED")
    assert _delta(before, after, calls, **gate) == 1
    http_ok = dict(channel="http", operation="POST /v1/context-packs/stream", status="OK", code="OK")
    assert _delta(before, after, calls, **http_ok) == 1
    assert _delta(before, after, "cairn_call_duration_seconds_count", **pack_ok) == 2
    assert _delta(before, after, "cairn_call_duration_seconds_sum", **pack_ok) > 0
    # exactly the calls above moved the call counters (scrapes of /metrics are not counted)
    moved = {k: after[k] - before.get(k, 0.0) for k in after if k[0] == calls and after[k] != before.get(k, 0.0)}
    assert sum(moved.values()) == 5, moved
    # three packs were built (two GraphQL, one NDJSON): each observed every stage once
    assert _delta(before, after, "cairn_packs_total", retrieval="HYBRID", complete="true") == 3
    for stage in ("lexical", "embed", "vector", "legs", "fusion", "recheck", "total"):
        assert _delta(before, after, "cairn_pack_stage_seconds_count", stage=stage) == 3, stage
    # the fixture's four writes: three created, then one unchanged; passages of the three indexed
    assert after[("cairn_ingest_documents_total", (("status", "created"),))] == 3
    assert after[("cairn_ingest_documents_total", (("status", "unchanged"),))] == 1
    assert after[("cairn_ingest_passages_total", ())] == 3
    assert after[("cairn_ingest_seconds_total", ())] > 0
    assert obs.ingest == {"fusion": "unchanged", "billing": "created", "etna": "created"}


async def test_metrics_are_off_by_default_and_can_need_a_token(obs: Obs):
    off = dataclasses.replace(obs.services, telemetry=Telemetry())
    async with _client(off) as c:
        r = await c.get("/metrics")
    assert r.status_code == 404
    assert r.json()["errors"][0]["extensions"]["code"] == "NOT_FOUND"
    guarded = dataclasses.replace(obs.services, telemetry=Telemetry(Metrics(), "s3cret-scrape-token"))
    async with _client(guarded) as c:
        refused = await c.get("/metrics", headers={"Authorization": "Bearer wrong-token-0000000"})
        bare = await c.get("/metrics")
        ok = await c.get("/metrics", headers={"Authorization": "Bearer s3cret-scrape-token"})
    assert refused.status_code == bare.status_code == 401
    assert refused.json()["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
    assert refused.headers["www-authenticate"].startswith("Bearer")
    assert ok.status_code == 200 and "# HELP cairn_calls_total" in ok.text


def test_prod_needs_a_metrics_token(tmp_path):
    from cairn.app.core.config import SettingsInvalid, load_settings

    with pytest.raises(SettingsInvalid, match="CAIRN_METRICS_TOKEN must be set"):
        load_settings(env="prod", database_url="postgresql+asyncpg://x/y", metrics=True)
    assert load_settings(data_dir=tmp_path, metrics=True).metrics is True


@pytest.mark.parametrize("folder", ["", "missing", "a-file"])
def test_metrics_refuse_a_multiprocess_folder_that_is_not_one(tmp_path, monkeypatch, folder):
    """prometheus-client's own switch, ``PROMETHEUS_MULTIPROC_DIR``, naming no folder (empty: the
    library would write into the working directory; missing or a file: the first count would fail
    with a traceback) is refused with the settings' one-line error, before anything is recorded."""
    from cairn.app.core.config import SettingsInvalid, load_settings

    (tmp_path / "a-file").write_text("x")
    value = str(tmp_path / folder) if folder else ""
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", value)
    with pytest.raises(SettingsInvalid, match=r"PROMETHEUS_MULTIPROC_DIR=.* must name an existing folder"):
        load_settings(data_dir=tmp_path, metrics=True)
    assert load_settings(data_dir=tmp_path, metrics=False).metrics is False  # only metrics use it
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    assert load_settings(data_dir=tmp_path, metrics=True).metrics is True


async def test_mcp_tool_calls_are_counted_and_traced_like_the_other_channels(obs: Obs):
    """The MCP server over the SDK's in-memory transport (the stdio path: no HTTP request, so
    each tool call's span is a root whose OTEL trace id is the envelope's)."""
    from mcp.shared.memory import create_connected_server_and_client_session

    from cairn.app.mcp import ENVELOPE_META, build_server

    obs.exporter.clear()
    before = _samples(obs.services.telemetry.metrics.exposition().decode())
    server = build_server(lambda: obs.services, token=obs.owner)
    async with create_connected_server_and_client_session(server) as session:
        ok = await session.call_tool("context_pack", {"task": "When are invoices generated?"})
        bad = await session.call_tool("context_pack", {"task": "When?", "budget": {"maxTokens": 10}})
    assert not ok.isError and bad.isError
    assert bad.structuredContent["error"]["code"] == "BAD_USER_INPUT"
    after = _samples(obs.services.telemetry.metrics.exposition().decode())
    mcp_ok = dict(channel="mcp", operation="mcp.context_pack", status="OK", code="OK")
    assert _delta(before, after, "cairn_calls_total", **mcp_ok) == 1
    assert _delta(before, after, "cairn_calls_total", **{**mcp_ok, "status": "ERROR", "code": "BAD_USER_INPUT"}) == 1
    trace_id = ok.meta[ENVELOPE_META]["traceId"]
    spans = obs.exporter.get_finished_spans()
    op = next(s for s in spans if s.name == "mcp mcp.context_pack" and s.attributes["cairn.status"] == "OK")
    assert op.parent is None and trace_id == f"trace_{_hex(op.context.trace_id, 32)}"
    bm25 = next(s for s in spans if s.name == "pack.leg.bm25" and s.context.trace_id == op.context.trace_id)
    assert bm25.attributes["cairn.leg.results"] >= 1
