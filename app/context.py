"""The Services bundle (built once by :func:`bootstrap`) and the per-request context.

Resolvers reach everything through ``info.context`` (a :class:`RequestContext`): its
``services`` bundle, the lazily authenticated ``principal()``, and the envelope state.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import HTTPConnection

from cairn.app import fields
from cairn.app.core.config import Settings
from cairn.app.core.db import Database
from cairn.app.core.errors import CairnError, Unauthenticated
from cairn.app.corpus import CorpusServices, NewVersionHook, SearchIndexes, open_indexes
from cairn.app.decisions import DecisionRunner, Judge, LocalJudge, OpenAIJudge
from cairn.app.governance import (
    EnvelopeState,
    Principal,
    RateLimiter,
    agent_token_from_browser,
    bearer_from_headers,
    browser_refused,
    trace_id_from_headers,
)
from cairn.app.identity import authenticate
from cairn.app.observability import Telemetry, instrument_engine
from cairn.app.observability import enabled as tracing_enabled
from cairn.app.ontology import OntologyStore
from cairn.app.packs import PassageRowCache
from cairn.app.templates import TemplatesDatabase


@dataclass(frozen=True)
class Services:
    """Everything a request may use; one instance per process (no globals), made by :func:`bootstrap`.

    Every member is constructed up front; nothing is set on first use. The local judge is
    built here but loads its model inside :class:`~app.decisions.LocalJudge` on its first
    decision, so start-up does not load Gemma. ``on_new_version``: what runs after a document
    write recorded a new version (:data:`app.corpus.NewVersionHook`; learned fields re-extract).
    """

    settings: Settings
    db: Database
    indexes: SearchIndexes
    ontology: OntologyStore
    judge: Judge
    decisions: DecisionRunner
    rate_limiter: RateLimiter
    query_database: TemplatesDatabase
    """The business database of query templates; connects on first use (none at start-up)."""
    on_new_version: tuple[NewVersionHook, ...] = ()
    log: logging.Logger = field(default_factory=lambda: logging.getLogger("cairn"))
    telemetry: Telemetry = field(default_factory=Telemetry)
    """Metrics of this process (:class:`app.observability.Telemetry`; off unless ``CAIRN_METRICS``)."""
    passage_rows: PassageRowCache = field(default_factory=PassageRowCache)
    """Passage rows packs read, kept per workspace and corpus generation (:mod:`app.packs.row_cache`)."""


def make_judge(settings: Settings) -> Judge:
    """The decision judge named by settings: OpenAI-compatible (``judge = "openai"``) or local Gemma.

    Neither contacts a server nor loads a model here.
    """
    if settings.judge == "openai":
        return OpenAIJudge(
            settings.judge_url or "",
            settings.judge_model,
            settings.judge_api_key,
            timeout=settings.judge_timeout_seconds,
        )
    return LocalJudge(settings.judge_model_path, n_ctx=settings.judge_context_window, n_threads=settings.judge_threads)


def bootstrap(settings: Settings, *, db: Database | None = None, indexes: SearchIndexes | None = None) -> Services:
    """Build the process's :class:`Services` once, every member constructed.

    Args:
        settings: The process settings.
        db: An open database (default: ``Database(settings.resolved_database_url)``; migrations
            are the caller's business).
        indexes: Open search indexes (default: :func:`app.corpus.open_indexes` of ``settings``,
            which takes the data dir's process lock).
    """
    db = db if db is not None else Database(settings.resolved_database_url)
    if tracing_enabled():  # SQL statement spans only when OTEL tracing is on (no listeners otherwise)
        instrument_engine(db.engine)
    indexes = indexes if indexes is not None else open_indexes(settings)
    judge = make_judge(settings)
    return Services(
        settings=settings,
        db=db,
        indexes=indexes,
        ontology=OntologyStore(indexes.embedder, settings.cursor_secret, settings.reranker_path),
        judge=judge,
        decisions=DecisionRunner(
            db,
            lambda: judge,
            timeout_seconds=settings.judge_timeout_seconds,
            context_tokens=settings.decision_context_tokens,
            lease_seconds=settings.decision_lease_seconds,
        ),
        rate_limiter=RateLimiter.from_settings(settings),
        on_new_version=(_reextract_fields,),
        query_database=TemplatesDatabase(settings.templates_database_url),
        telemetry=Telemetry.from_settings(settings),
    )


async def _reextract_fields(services: CorpusServices, principal: Principal, collection_id: str) -> object:
    """A new document version re-extracts the collection's learned fields (if it defines any)."""
    return await fields.extract_on_new_version(services, principal, fields.ExtractRequest(collection_id))


def services_of(scope: Mapping[str, Any]) -> Services:
    """The process's :class:`Services` for an ASGI request or WebSocket ``scope``: the
    ``state.services`` of the Starlette app serving it (:func:`app.main.create_app` sets it when
    given a bundle, its lifespan when it builds one)."""
    services: Services = scope["app"].state.services
    return services


class RequestContext:
    """Per-request state; on a WebSocket, per operation (see :meth:`for_operation`).

    Args:
        services: The process's :class:`Services`.
        headers: Request headers with lower-case names.
        request: The Starlette ``Request`` or ``WebSocket`` (None: no connection, e.g. stdio MCP).
        response: A Starlette ``Response`` whose headers/status the view copies out.
    """

    def __init__(
        self, services: Services, headers: dict[str, str], request: HTTPConnection | None = None, response: Any = None
    ) -> None:
        self.services = services
        self.headers = headers
        self.request = request
        self.response = response
        self.connection_params: dict[str, Any] | None = None
        self.started = time.perf_counter()
        self.envelope = EnvelopeState(trace_id=trace_id_from_headers(headers))
        state = request.scope.get("state", {}) if request is not None else {}
        self._principal: Principal | None = state.get("cairn_principal")
        self._principal_error: CairnError | None = None

    def for_operation(self) -> RequestContext:
        """A fresh context for one operation on this WebSocket connection.

        Each operation gets its own envelope (trace id from the handshake headers, else a new
        one; only its own calls), its own timer and its own authentication with the
        credential from ``connection_init``, so a credential revoked while the connection is
        open stops working at the next operation.
        """
        ctx = RequestContext(self.services, self.headers, self.request, None)
        ctx.connection_params = self.connection_params
        return ctx

    @property
    def trace_id(self) -> str:
        """The request's trace id."""
        return self.envelope.trace_id

    def _token(self) -> str | None:
        params = self.connection_params or {}
        for key in ("Authorization", "authorization"):
            value = params.get(key)
            if isinstance(value, str):
                return bearer_from_headers({"authorization": value})
        return bearer_from_headers(self.headers)

    async def principal(self) -> Principal:
        """Authenticate once per request (per operation for WebSockets: :meth:`for_operation`).

        Raises:
            Unauthenticated: no or invalid token. Forbidden: agent credential from a browser,
            or authority lost.
        """
        if self._principal is not None:
            return self._principal
        token = self._token()
        if token is None:
            raise Unauthenticated("no credential: send 'Authorization: Bearer <token>' (member cm_… or agent ck_…)")
        if agent_token_from_browser(token, self.headers):
            raise browser_refused()
        async with self.services.db.session() as s:
            self._principal = await authenticate(s, token)
        return self._principal
