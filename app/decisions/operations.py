"""Decision and agent-session services: one function per operation, ``fn(services, principal, request)``.

Each opens and commits its own session (or goes through ``services.decisions``, the process's
:class:`~app.decisions.service.DecisionRunner`) and returns domain objects. The session rules
live in :mod:`app.decisions.sessions`, the decision flow in :mod:`app.decisions.service`.

``services`` is the process's :class:`app.context.Services`, typed by the Protocols
:class:`app.governance.ServicesPort` and :class:`DecisionServices` (``app.context`` imports this
package, so it cannot be imported here).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from cairn.app.core.models import AgentSession, SessionMessage
from cairn.app.decisions import sessions
from cairn.app.decisions.idempotency import Outcome
from cairn.app.decisions.request import validate_request
from cairn.app.decisions.service import DecisionRunner
from cairn.app.decisions.sessions import MessageIn
from cairn.app.governance import Principal, ServicesPort

RECENT_AFTER_WRITE = 50
"""Messages returned with a session after creating or appending to it."""


class DecisionServices(ServicesPort, Protocol):
    """What the decision operations use beyond :class:`~app.governance.ServicesPort`: the process's
    :class:`~app.decisions.service.DecisionRunner`."""

    @property
    def decisions(self) -> DecisionRunner: ...


@dataclass(frozen=True)
class SessionView:
    """A session and the messages read with it (oldest first; none for lists and archive)."""

    session: AgentSession
    messages: tuple[SessionMessage, ...] = ()


@dataclass(frozen=True)
class SessionRead:
    """Read one session of the caller with its newest ``last_messages`` (0–200) messages."""

    session_id: str
    last_messages: int = 50


@dataclass(frozen=True)
class SessionList:
    """List the caller's sessions, most recently updated first."""

    include_archived: bool = False
    limit: int = 50


@dataclass(frozen=True)
class NewSession:
    """Start a session, optionally with its first messages."""

    title: str | None = None
    messages: tuple[MessageIn, ...] = ()


@dataclass(frozen=True)
class SessionAppend:
    """Append 1–100 messages to an unarchived session of the caller."""

    session_id: str
    messages: tuple[MessageIn, ...]


@dataclass(frozen=True)
class DecisionSubmission:
    """One createDecision call: the body as a dict (validated by :func:`validate_request` when run),
    its fingerprint, the validated Idempotency-Key (or None) and the source (``graphql`` | ``api``)."""

    body: dict[str, Any]
    sha256: str
    idempotency_key: str | None
    source: str


async def read_decision(services: DecisionServices, principal: Principal, decision_id: str) -> dict[str, Any]:
    """The caller's decision as its public JSON (:meth:`DecisionRunner.get`).

    Raises:
        BadInput: not an id. NotFound: unknown, another member's, or purged.
    """
    return await services.decisions.get(principal, decision_id)


async def submit_decision(services: DecisionServices, principal: Principal, request: DecisionSubmission) -> Outcome:
    """Create and run a decision (:meth:`DecisionRunner.create`); the outcome holds the decision or the error."""
    body = request.body
    return await services.decisions.create(
        principal,
        prepare=lambda: validate_request(body),
        sha=request.sha256,
        key=request.idempotency_key,
        source=request.source,
    )


async def read_session(services: ServicesPort, principal: Principal, request: SessionRead) -> SessionView:
    """One of the caller's sessions with its newest messages.

    Raises:
        NotFound: not the caller's session.
    """
    async with services.db.session() as s:
        row = await sessions.get_session(s, principal=principal, session_id=request.session_id, field="id")
        msgs = (
            await sessions.recent_messages(s, session_id=row.id, limit=request.last_messages)
            if request.last_messages
            else []
        )
    return SessionView(row, tuple(msgs))


async def list_agent_sessions(services: ServicesPort, principal: Principal, request: SessionList) -> list[SessionView]:
    """The caller's sessions (no messages)."""
    async with services.db.session() as s:
        rows = await sessions.list_sessions(
            s, principal=principal, include_archived=request.include_archived, limit=request.limit
        )
    return [SessionView(r) for r in rows]


async def start_session(services: ServicesPort, principal: Principal, request: NewSession) -> SessionView:
    """Create a session for the caller's member, with its newest 50 messages.

    Raises:
        Forbidden: ``NON_RETAINING_WORKSPACE``.
    """
    async with services.db.session() as s:
        row = await sessions.create_session(
            s, principal=principal, title=request.title, messages=list(request.messages)
        )
        recent = await sessions.recent_messages(s, session_id=row.id, limit=RECENT_AFTER_WRITE)
    return SessionView(row, tuple(recent))


async def append_to_session(services: ServicesPort, principal: Principal, request: SessionAppend) -> SessionView:
    """Append messages; returns the session with its newest 50 messages.

    Raises:
        NotFound: not the caller's session. Conflict: archived, full, or raced.
    """
    async with services.db.session() as s:
        row = await sessions.append_messages(
            s, principal=principal, session_id=request.session_id, messages=list(request.messages)
        )
        recent = await sessions.recent_messages(s, session_id=row.id, limit=RECENT_AFTER_WRITE)
    return SessionView(row, tuple(recent))


async def close_session(services: ServicesPort, principal: Principal, session_id: str) -> SessionView:
    """Archive one of the caller's sessions (idempotent; no messages returned).

    Raises:
        NotFound: not the caller's session.
    """
    async with services.db.session() as s:
        row = await sessions.archive_session(s, principal=principal, session_id=session_id)
    return SessionView(row)
