"""What an operation receives, as Protocols: the services bundle and the request context.

:class:`app.context.Services` and :class:`app.context.RequestContext` are built in
:mod:`app.context`, which imports every capability package to assemble them; a capability that
imported them back would close an import cycle (``acyclic_siblings`` in pyproject.toml). Until
now such parameters were left untyped. These Protocols name the same members structurally, and
this module imports only :mod:`app.core`, :mod:`app.observability`, :mod:`retrieval` and
governance's own types, so every package that already imports governance (all capabilities,
the transports and the resolvers) can use them without a cycle. Governance is the home because
it is the lowest package that owns the members' types: the principal, the envelope and the rate
limiter.

:class:`ServicesPort` holds the members every layer may use. A member whose type lives above
governance is declared by the package that owns it, in a Protocol extending this one
(:class:`app.corpus.CorpusServices` narrows ``indexes`` to :class:`~app.corpus.SearchIndexes`
and adds ``on_new_version``; :class:`app.ontology.OntologyServices`,
:class:`app.decisions.DecisionServices` and :class:`app.packs.PackServices` add theirs); the
concrete :class:`~app.context.Services` satisfies all of them (mypy checks it where
:func:`app.context.bootstrap` builds it and wherever it is passed on).

Members are read-only properties: the concrete bundle is a frozen dataclass, and a read-only
member may be narrowed by an extending Protocol.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Protocol

from cairn.app.core.config import Settings
from cairn.app.core.db import Database
from cairn.app.governance.auth import Principal
from cairn.app.governance.envelope import EnvelopeState
from cairn.app.governance.rate_limits import RateLimiter
from cairn.app.observability import Telemetry
from cairn.retrieval.embeddings import Embedder

__all__ = ["DatabasePort", "IndexesPort", "RequestContextPort", "ServicesPort"]


class DatabasePort(Protocol):
    """A bundle with the Cairn database: what a step needs that only opens sessions, so the pack
    pipeline's narrower :class:`app.packs.PackServices` can call it too."""

    @property
    def db(self) -> Database: ...


class IndexesPort(Protocol):
    """What packages below :mod:`app.corpus` use of :class:`app.corpus.SearchIndexes`: the embedder
    (None with ``CAIRN_EMBEDDER=none``: no vector leg)."""

    @property
    def embedder(self) -> Embedder | None: ...


class ServicesPort(DatabasePort, Protocol):
    """The process's services bundle (:class:`app.context.Services`) as every layer may use it."""

    @property
    def settings(self) -> Settings: ...

    @property
    def indexes(self) -> IndexesPort: ...

    @property
    def rate_limiter(self) -> RateLimiter: ...

    @property
    def telemetry(self) -> Telemetry: ...

    @property
    def log(self) -> logging.Logger: ...


class RequestContextPort(Protocol):
    """One request's context (:class:`app.context.RequestContext`; per operation on a WebSocket)
    as the governance adapter and the transports use it."""

    @property
    def services(self) -> ServicesPort: ...

    @property
    def headers(self) -> Mapping[str, str]:
        """Request headers with lower-case names."""
        ...

    @property
    def connection_params(self) -> Mapping[str, Any] | None:
        """A WebSocket's ``connection_init`` payload (None on other transports)."""
        ...

    @property
    def envelope(self) -> EnvelopeState: ...

    @property
    def trace_id(self) -> str: ...

    @property
    def started(self) -> float:
        """``time.perf_counter()`` when the request (or WebSocket operation) began, in seconds."""
        ...

    @property
    def response(self) -> Any:
        """The GraphQL view's sub-response (a Starlette ``Response``) whose status and headers the
        view copies out; None on other transports."""
        ...

    async def principal(self) -> Principal:
        """The authenticated caller (once per request). Raises :class:`~app.core.errors.CairnError`."""
        ...
