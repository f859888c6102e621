"""The Services bundle (built once in ``create_app``) and the per-request context.

Resolvers reach everything through ``info.context`` (a :class:`RequestContext`): its
``services`` bundle, the lazily authenticated ``principal()``, and the envelope state.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from app.core.config import Settings
from app.core.db import Database
from app.core.errors import CairnError, Unauthenticated
from app.corpus import SearchIndexes
from app.governance import (
    EnvelopeState,
    Principal,
    bearer_from_headers,
    browser_refused,
    is_browser_request,
    trace_id_from_headers,
)
from app.identity import authenticate


@dataclass
class Services:
    """Everything a request may use; one instance per process (no globals)."""

    settings: Settings
    db: Database
    indexes: SearchIndexes
    log: logging.Logger = field(default_factory=lambda: logging.getLogger("cairn"))
    ontology: Any = None
    """The ontology store (:class:`app.ontology.store.OntologyStore`), made on first use."""
    _judge: Any = field(default=None, repr=False)
    _decisions: Any = field(default=None, repr=False)
    _rate_limiter: Any = field(default=None, repr=False)
    _query_database: Any = field(default=None, repr=False)

    def judge(self) -> Any:
        """The decision judge from settings (local Gemma or OpenAI-compatible), built on first use."""
        if self._judge is None:
            from app.decisions import LocalJudge, OpenAIJudge

            st = self.settings
            if st.judge == "openai":
                self._judge = OpenAIJudge(
                    st.judge_url or "", st.judge_model, st.judge_api_key, timeout=st.judge_timeout_seconds
                )
            else:
                self._judge = LocalJudge(st.judge_model_path, n_ctx=st.judge_context_window, n_threads=st.judge_threads)
        return self._judge

    @property
    def decisions(self) -> Any:
        """The process's :class:`~app.decisions.service.DecisionRunner`."""
        if self._decisions is None:
            from app.decisions import DecisionRunner

            self._decisions = DecisionRunner(
                self.db,
                self.judge,
                timeout_seconds=self.settings.judge_timeout_seconds,
                context_tokens=self.settings.decision_context_tokens,
            )
        return self._decisions

    @property
    def rate_limiter(self) -> Any:
        """The process's :class:`~app.governance.rate_limits.RateLimiter` (limits from settings)."""
        if self._rate_limiter is None:
            from app.governance import RateLimiter

            self._rate_limiter = RateLimiter.from_settings(self.settings)
        return self._rate_limiter

    @property
    def query_database(self) -> Any:
        """The business database of query templates (:class:`~app.templates.QueryDatabase`),
        opened on first use from ``templates_database_url``.

        Raises:
            TemplatesDatabaseMissing: no ``CAIRN_TEMPLATES_DATABASE_URL`` (503).
        """
        if self._query_database is None:
            from app.templates import QueryDatabase, TemplatesDatabaseMissing

            url = self.settings.templates_database_url
            if not url:
                raise TemplatesDatabaseMissing(
                    "no business database is configured for query templates: set CAIRN_TEMPLATES_DATABASE_URL"
                )
            self._query_database = QueryDatabase(url)
        return self._query_database

    async def close_query_database(self) -> None:
        """Dispose the business database's connections, if it was opened."""
        if self._query_database is not None:
            await self._query_database.engine.dispose()
            self._query_database = None


class RequestContext:
    """Per-request state; on a WebSocket, per operation (see :meth:`for_operation`).

    Args:
        services: The process's :class:`Services`.
        headers: Request headers with lower-case names.
        request: The Starlette ``Request`` or ``WebSocket``.
        response: A Starlette ``Response`` whose headers/status the view copies out.
    """

    def __init__(self, services: Services, headers: dict[str, str], request: Any = None, response: Any = None) -> None:
        self.services = services
        self.headers = headers
        self.request = request
        self.response = response
        self.connection_params: dict[str, Any] | None = None
        self.started = time.perf_counter()
        self.envelope = EnvelopeState(trace_id=trace_id_from_headers(headers))
        state = getattr(request, "scope", {}).get("state", {}) if request is not None else {}
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
        if token.startswith("ck_") and is_browser_request(self.headers):
            raise browser_refused()
        async with self.services.db.session() as s:
            self._principal = await authenticate(s, token)
        return self._principal
