"""A real Cairn server per database backend (SQLite file, PostgreSQL), on loopback.

Each backend gets: a data dir on tmp, migrations, workspaces A and B, members of every role
in A and an owner in B (member tokens), and a small corpus ingested *through GraphQL*
(English, Japanese, Chinese, an exact and a near duplicate, a versioned document).
Tests talk to it with httpx (HTTP) and ``websockets`` (graphql-transport-ws), as clients do.

Which backends a test runs on (the ``backend`` parameter of ``live`` and of the modules' own
servers, set by :func:`pytest_generate_tests`):

- ``@pytest.mark.both_backends`` (a test, or a module's ``pytestmark``): SQLite *and*
  PostgreSQL. The rule: a test whose outcome depends on the database engine — what is stored
  and read back (versions, as-of, deletions, sessions, memory, counts and paging, rate-limit
  counters, replay records), SQL a driver can treat differently (time zones, NUL, Unicode,
  collation), migrations, concurrency and idempotency (locks, conflicting writes). When unsure,
  both.
- everything else (transport, validation, envelopes, governance decisions, streams, retrieval
  legs over the indexes, clients) runs once, on SQLite: the same code answers on either engine.

The PostgreSQL instance of a test carries the ``postgres`` marker, so ``-m "not postgres"``
runs the whole directory on SQLite alone. A test that needs no socket runs in process instead
(tests/graphql/in_process.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
import uvicorn

from cairn.app.context import Services
from cairn.app.core.config import Settings
from cairn.app.core.db import Database
from cairn.app.core.migrate import upgrade_database
from cairn.app.governance.operation import RATE_CLASSES
from cairn.app.identity import service as identity
from tests import factories, local_http
from tests.conftest import drop_postgres_database, postgres_database

# the Decision API tests' shared checks (err_of) and the shared pack calls (error_of, _stream)
# keep pytest's assertion introspection
pytest.register_assert_rewrite("tests.graphql.decisions_helpers", "tests.graphql.pack_calls")

CORPUS = [
    # (collection, externalId, title, text, validFrom, validTo)
    (
        "handbook",
        "packs",
        "Context packs",
        "A context pack is ranked, deduplicated, cited evidence packed into a token budget.\n\n"
        "Reciprocal rank fusion combines the BM25 ranking and the dense vector ranking with k = 60.",
        None,
        None,
    ),
    (
        "handbook",
        "dedup-a",
        "Release notes A",
        "The billing service moved to the Frankfurt region in March to reduce latency for European customers "
        "and to keep their invoice data inside the European Union.\n\n"
        "Invoices are generated nightly at two o'clock and emailed to the billing contact.",
        None,
        None,
    ),
    (
        "handbook",
        "dedup-b",
        "Release notes B",
        "The billing service moved to the Frankfurt region in March to reduce latency for European customers, "
        "and to keep their invoice data inside the European Union!\n\n"
        "Support tickets are answered within one business day by the customer success team in Lisbon.",
        None,
        None,
    ),
    (
        "handbook",
        "exact-copy",
        "Copied invoice note",
        "Invoices are generated nightly at two o'clock and emailed to the billing contact.",
        None,
        None,
    ),
    (
        "handbook",
        "ja-search",
        "ベクトル検索",
        "ベクトル検索は文章の意味の近さで文書を探す方法です。東京のチームが開発しました。",
        None,
        None,
    ),
    ("handbook", "zh-db", "数据库", "数据库索引可以加快查询速度。我们使用倒排索引进行全文检索。", None, None),
    (
        "finance",
        "cfo",
        "Chief financial officer",
        "The chief financial officer of Example Corp is Alice Smith.",
        "2020-01-01T00:00:00Z",
        None,
    ),
    (
        "finance",
        "volcano",
        "Volcano facts",
        "Mount Etna is an active stratovolcano on the east coast of Sicily.",
        None,
        None,
    ),
]
CFO_V2 = "The chief financial officer of Example Corp is Bob Jones."


@dataclass
class Live:
    """A running server and everything tests need to call it."""

    backend: str
    url: str
    ws_url: str
    settings: Settings
    tokens: dict[str, str] = field(default_factory=dict)
    ids: dict[str, str] = field(default_factory=dict)

    def gql(
        self, query: str, variables: dict | None = None, token: str | None = None, headers: dict | None = None
    ) -> httpx.Response:
        """POST a GraphQL request (sync), returning the raw response."""
        h = {"Content-Type": "application/json", **(headers or {})}
        if token:
            h["Authorization"] = f"Bearer {token}"
        return local_http.post(
            f"{self.url}/graphql", json={"query": query, "variables": variables or {}}, headers=h, timeout=120
        )

    def data(self, query: str, variables: dict | None = None, token: str | None = None) -> dict:
        """POST and return ``data``, failing on any error."""
        r = self.gql(query, variables, token)
        body = r.json()
        if body.get("errors"):
            raise AssertionError(f"GraphQL errors: {body['errors']}")
        return body["data"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def _bootstrap(url: str) -> tuple[dict[str, str], dict[str, str]]:
    db = Database(url)
    tokens: dict[str, str] = {}
    ids: dict[str, str] = {}
    try:
        async with db.session() as s:
            ws_a = await identity.create_workspace(s, name="acme")
            ws_b = await identity.create_workspace(s, name="globex")
            ids["wsA"], ids["wsB"] = ws_a.id, ws_b.id
            for role in ("owner", "admin", "editor", "viewer"):
                m, t = await identity.create_member(s, workspace_id=ws_a.id, name=f"{role}-a", role=role)
                tokens[role], ids[f"member:{role}"] = t.token, m.id
            m, t = await identity.create_member(s, workspace_id=ws_b.id, name="owner-b", role="owner")
            tokens["ownerB"], ids["member:ownerB"] = t.token, m.id
            _c, tokens["agentB"] = await factories.credential(
                s, creator=factories.member_principal(m), name="agent-b", scopes=["context:read"]
            )
            ws_c = await identity.create_workspace(s, name="capco")
            ids["wsC"] = ws_c.id
            m, t = await identity.create_member(s, workspace_id=ws_c.id, name="owner-c", role="owner")
            tokens["ownerCap"] = t.token
    finally:
        await db.dispose()
    return tokens, ids


def _start(settings: Settings, services: Services | None = None):
    """Serve ``create_app(settings, services=services)`` with uvicorn on a free loopback port, in
    a thread; returns ``(server, thread, port)`` once ``/readyz`` says 200.

    ``services`` (a :func:`~app.context.bootstrap` bundle the caller built, e.g. with a fixed
    rate-limit clock) is closed by that thread when the server stops: its database connections
    belong to the server's event loop.
    """
    from cairn.app.main import create_app

    port = _free_port()
    config = uvicorn.Config(
        create_app(settings, services=services),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        ws="websockets-sansio",
        lifespan="on",
    )
    server = uvicorn.Server(config)

    async def serve() -> None:
        try:
            await server.serve()
        finally:
            if services is not None:
                services.indexes.close()
                await services.query_database.close()
                await services.db.dispose()

    def run() -> None:  # what uvicorn.Server.run does, with the services closed on its loop
        with asyncio.Runner(loop_factory=config.get_loop_factory()) as runner:
            runner.run(serve())

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            if local_http.get(f"{base}/readyz", timeout=2).status_code == 200:
                return server, thread, port
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError("server did not become ready in 180 s")


def _ingest_corpus(live: Live) -> None:
    owner = live.tokens["owner"]
    colls: dict[str, str] = {}
    for name in ("handbook", "finance"):
        colls[name] = live.data("mutation($n:String!){createCollection(name:$n){id}}", {"n": name}, owner)[
            "createCollection"
        ]["id"]
        live.ids[f"coll:{name}"] = colls[name]
    for coll, ext, title, text, vf, vt in CORPUS:
        r = live.data(
            "mutation($i:UpsertDocumentInput!){upsertDocument(input:$i){documentId versionId status}}",
            {
                "i": {
                    "collectionId": colls[coll],
                    "externalId": ext,
                    "title": title,
                    "text": text,
                    "validFrom": vf,
                    "validTo": vt,
                }
            },
            owner,
        )["upsertDocument"]
        live.ids[f"doc:{ext}"] = r["documentId"]
        live.ids[f"ver:{ext}"] = r["versionId"]
    r = live.data(
        "mutation($i:UpsertDocumentInput!){upsertDocument(input:$i){documentId versionId status}}",
        {
            "i": {
                "collectionId": colls["finance"],
                "externalId": "cfo",
                "title": "Chief financial officer",
                "text": CFO_V2,
                "validFrom": "2023-07-01T00:00:00Z",
            }
        },
        owner,
    )["upsertDocument"]
    live.ids["ver:cfo2"] = r["versionId"]


def _agent(live: Live, name: str, scopes: list[str], profile: dict | None = None, token: str | None = None) -> str:
    r = live.data(
        "mutation($i:CreateAgentCredentialInput!){createAgentCredential(input:$i){token credential{id}}}",
        {"i": {"name": name, "scopes": scopes, "expiresInDays": 30, "profile": profile}},
        token or live.tokens["owner"],
    )
    live.ids[f"cred:{name}"] = r["createAgentCredential"]["credential"]["id"]
    return r["createAgentCredential"]["token"]


BACKENDS = ("sqlite", "postgres")


def backends_of(definition: pytest.Function | pytest.Item) -> list:
    """The ``backend`` values of a test: both with ``both_backends`` (module doc), else SQLite."""
    if definition.get_closest_marker("both_backends") is None:
        return ["sqlite"]
    return ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize ``backend`` (needed by ``live`` and the modules' own servers) per the module doc."""
    if "backend" in metafunc.fixturenames:
        metafunc.parametrize("backend", backends_of(metafunc.definition), scope="session")


@contextlib.contextmanager
def _live_server(backend: str, data_dir: Path) -> Iterator[Live]:
    """A ready server on SQLite or PostgreSQL (``backend``) with the corpus and tokens, stopped
    (and its PostgreSQL database dropped) on exit."""
    pg_url = postgres_database() if backend == "postgres" else None
    # rate limits off: the input matrices send hundreds of calls a minute per credential;
    # limits are tested by test_rate_limits.py on a server of their own
    settings = Settings(
        data_dir=data_dir,
        database_url=pg_url,
        chunk_max_tokens=40,
        **{f"rate_limit_{c}_per_minute": 0 for c in RATE_CLASSES},
    )
    try:
        upgrade_database(settings.resolved_database_url)
        tokens, ids = asyncio.run(_bootstrap(settings.resolved_database_url))
        server, thread, port = _start(settings)
        live = Live(backend, f"http://127.0.0.1:{port}", f"ws://127.0.0.1:{port}/graphql", settings, tokens, ids)
        try:
            _ingest_corpus(live)
            live.tokens["agent"] = _agent(live, "reader", ["context:read", "queries:run", "replay:run"])
            live.tokens["agentReadOnly"] = _agent(live, "read-only", ["context:read"])
            yield live
        finally:
            server.should_exit = True
            thread.join(timeout=30)
    finally:
        if pg_url:
            drop_postgres_database(pg_url)


class LiveServers:
    """The live servers of one test process: one per backend, each started on first use and kept
    until :meth:`close` (the end of the session).

    Why not a session fixture parametrized by ``backend``: pytest tears such a fixture down
    whenever the next test has the other parameter, and under ``--dist loadfile`` each file runs
    its SQLite tests, then its PostgreSQL ones. Every ``both_backends`` file then started two
    servers (migrations, model load, the corpus ingested through GraphQL: 10–34 s of set-up at
    load 15): tests/graphql started ~50 servers instead of 4.
    """

    def __init__(self, tmp_path_factory: pytest.TempPathFactory) -> None:
        self._tmp = tmp_path_factory
        self._running: dict[str, Live] = {}
        self._stack = contextlib.ExitStack()

    def get(self, backend: str) -> Live:
        """The server of ``backend``, started now if this process has none yet."""
        if backend not in self._running:
            data_dir = self._tmp.mktemp(f"cairn-{backend}")
            self._running[backend] = self._stack.enter_context(_live_server(backend, data_dir))
        return self._running[backend]

    def close(self) -> None:
        """Stop every server started (the last one first)."""
        self._stack.close()
        self._running.clear()


@pytest.fixture(scope="session")
def live_servers(tmp_path_factory, embedder) -> Iterator[LiveServers]:
    """This process's :class:`LiveServers` (``embedder``: marks every test on a live server
    ``model``; the servers load the same model)."""
    servers = LiveServers(tmp_path_factory)
    try:
        yield servers
    finally:
        servers.close()


@pytest.fixture(scope="session")
def live(backend, live_servers) -> Live:
    """A ready server on SQLite or PostgreSQL (``backend``) with the corpus and tokens, shared by
    every test of this process on that backend (:class:`LiveServers`: switching backends between
    files starts nothing anew)."""
    return live_servers.get(backend)
