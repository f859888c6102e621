"""The Cairn ASGI app called in this process (``httpx.ASGITransport``): no socket, no uvicorn.

For tests whose outcome does not depend on a socket (governance decisions, envelopes, coded
errors): the same ``create_app`` the live server runs, with the same gate, view, adapter and
handlers, over a real migrated database and real indexes. What a socket adds (streams,
WebSockets, disconnects, concurrency across connections, the lifespan's start-up work) stays
with the ``live`` fixture of tests/graphql/conftest.py.

The app is built with a pre-made :class:`~app.context.Services` bundle (``create_app(settings,
services=…)``), as tests/graphql/test_observability.py does; the lifespan (index catch-up,
change-log follower, MCP session manager) is not run, so MCP and the change follower are not
available here — documents are indexed by the write itself, as in any single process.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from cairn.app.context import Services, bootstrap
from cairn.app.core.config import Settings
from cairn.app.core.migrate import upgrade_database
from cairn.app.governance.operation import RATE_CLASSES
from cairn.app.main import create_app


@dataclass
class InProcess:
    """The in-process app, its services and the tokens and ids a test needs."""

    settings: Settings
    services: Services
    client: httpx.AsyncClient
    tokens: dict[str, str] = field(default_factory=dict)
    ids: dict[str, str] = field(default_factory=dict)

    async def gql(
        self, query: str, variables: dict | None = None, token: str | None = None, headers: dict | None = None
    ) -> httpx.Response:
        """POST a GraphQL request to ``/graphql`` in process, returning the raw response."""
        h = {"Content-Type": "application/json", **(headers or {})}
        if token:
            h["Authorization"] = f"Bearer {token}"
        return await self.client.post("/graphql", json={"query": query, "variables": variables or {}}, headers=h)

    async def data(self, query: str, variables: dict | None = None, token: str | None = None) -> dict:
        """POST and return ``data``, failing on any error."""
        body = (await self.gql(query, variables, token)).json()
        if body.get("errors"):
            raise AssertionError(f"GraphQL errors: {body['errors']}")
        return body["data"]


@contextlib.asynccontextmanager
async def in_process_app(
    data_dir: Path, database_url: str | None = None, **settings: object
) -> AsyncIterator[InProcess]:
    """A migrated database (SQLite in ``data_dir`` unless ``database_url``), services without an
    embedding model (LEXICAL packs) and rate limits off unless given, and an httpx client on the
    ASGI app. Everything is closed on exit."""
    values: dict[str, object] = {"embedder": "none", **{f"rate_limit_{c}_per_minute": 0 for c in RATE_CLASSES}}
    values.update(settings)
    cfg = Settings(data_dir=data_dir, database_url=database_url, **values)  # type: ignore[arg-type]
    await asyncio.to_thread(upgrade_database, cfg.resolved_database_url)
    services = bootstrap(cfg)
    app = create_app(cfg, services=services)
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://cairn", timeout=120)
    try:
        yield InProcess(cfg, services, client)
    finally:
        await client.aclose()
        services.indexes.close()
        await services.query_database.close()
        await services.db.dispose()
