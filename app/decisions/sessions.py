"""Agent sessions: recent messages a decision can run on (``sessionId``, SPEC §8).

A session belongs to the member behind the caller: that member and the agent credentials
they created may create, append to, archive and read it; nobody else can see it (404, the
same as a missing id, so ids do not leak). An archived session is read-only and refused as
decision context. A non-retaining workspace keeps no history: sessions are refused there
(403 ``NON_RETAINING_WORKSPACE``).

Limits: ``title`` ≤ 200 characters; 1–100 messages per append; ``role`` one of
``user | assistant | system | tool``; ``content`` 1–32,000 characters; ≤ 10,000 messages per
session; reads return the newest 1–200 messages (default 50).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from cairn.app.core.db import rows_matched
from cairn.app.core.errors import BadInput, NonRetainingWorkspace, NotFound
from cairn.app.core.ids import new_id, utcnow
from cairn.app.core.models import AgentSession, SessionMessage, Workspace
from cairn.app.core.text_rules import validate_identifier, validate_name, validate_text
from cairn.app.decisions.errors import SessionArchived, SessionConflict, SessionFull
from cairn.app.governance import Principal

ROLES = ("user", "assistant", "system", "tool")
MAX_TITLE = 200
MAX_APPEND = 100
MAX_CONTENT = 32_000
MAX_MESSAGES = 10_000
MAX_READ = 200


@dataclass(frozen=True)
class MessageIn:
    """A message to append: ``role`` and ``content``."""

    role: str
    content: str


def validate_title(title: str | None, field: str = "title") -> None:
    """``title`` is absent or a name of 1–200 characters (:func:`app.core.text_rules.validate_name`).

    Raises:
        BadInput: naming ``field``.
    """
    if title is None:
        return
    validate_name(title, field, MAX_TITLE)


def validate_messages(messages: list[MessageIn], field: str = "messages") -> None:
    """1–100 messages, each with a known role and 1–32,000 characters of content.

    Raises:
        BadInput: naming the message's field path.
    """
    if not 1 <= len(messages) <= MAX_APPEND:
        raise BadInput(
            f"{field} must hold 1–{MAX_APPEND} messages (got {len(messages)})", field=field, limit=f"1-{MAX_APPEND}"
        )
    for i, m in enumerate(messages):
        if m.role not in ROLES:
            raise BadInput(f"{field}[{i}].role must be one of {', '.join(ROLES)}", field=f"{field}[{i}].role")
        validate_text(m.content, f"{field}[{i}].content", MAX_CONTENT)
        if not m.content.strip():
            raise BadInput(
                f"{field}[{i}].content must be 1–{MAX_CONTENT} characters of text",
                field=f"{field}[{i}].content",
                limit=f"1-{MAX_CONTENT}",
            )


async def _retaining(s: AsyncSession, workspace_id: str) -> None:
    ws = await s.get(Workspace, workspace_id)
    if ws is None or not ws.retaining:
        raise NonRetainingWorkspace("this workspace does not retain history, so it keeps no agent sessions")


async def create_session(
    s: AsyncSession, *, principal: Principal, title: str | None = None, messages: list[MessageIn] | None = None
) -> AgentSession:
    """Create a session for the caller's member, optionally with first messages.

    Raises:
        Forbidden: ``NON_RETAINING_WORKSPACE``.
    """
    await _retaining(s, principal.workspace_id)
    now = utcnow()
    row = AgentSession(
        id=new_id("sess"),
        workspace_id=principal.workspace_id,
        member_id=principal.member_id,
        created_by=principal.id,
        title=title.strip() if title else None,
        created_at=now,
        updated_at=now,
    )
    s.add(row)
    await s.flush()
    if messages:
        await _append(s, row, messages)
    return row


async def get_session(
    s: AsyncSession, *, principal: Principal, session_id: str, field: str = "sessionId", for_update: bool = False
) -> AgentSession:
    """The caller's session ``session_id`` (archived ones included).

    Raises:
        BadInput: ``session_id`` is not an id. NotFound: no such session for this member in this workspace.
    """
    validate_identifier(session_id, field, 256)
    stmt = select(AgentSession).where(
        col(AgentSession.id) == session_id,
        col(AgentSession.workspace_id) == principal.workspace_id,
        col(AgentSession.member_id) == principal.member_id,
    )
    if for_update:
        stmt = stmt.with_for_update()
    row = (await s.execute(stmt)).scalar_one_or_none()
    if row is None:
        raise NotFound(f"{field}: no session {session_id!r} is accessible to this caller", field=field)
    return row


async def _append(s: AsyncSession, row: AgentSession, messages: list[MessageIn]) -> list[SessionMessage]:
    if row.message_count + len(messages) > MAX_MESSAGES:
        raise SessionFull(
            f"a session holds at most {MAX_MESSAGES} messages ({row.message_count} now); start a new session",
            limit=MAX_MESSAGES,
        )
    now = utcnow()
    start = row.message_count
    # Compare-and-set on message_count: two appends racing on one session cannot both win.
    res = await s.execute(
        update(AgentSession)
        .where(col(AgentSession.id) == row.id, col(AgentSession.message_count) == start)
        .values(message_count=start + len(messages), updated_at=now)
    )
    if rows_matched(res) != 1:
        raise SessionConflict("the session changed while appending; retry")
    out = []
    for i, m in enumerate(messages, start=1):
        msg = SessionMessage(
            id=new_id("msg"), session_id=row.id, ordinal=start + i, role=m.role, content=m.content, created_at=now
        )
        s.add(msg)
        out.append(msg)
    row.message_count = start + len(messages)
    row.updated_at = now
    await s.flush()
    return out


async def append_messages(
    s: AsyncSession, *, principal: Principal, session_id: str, messages: list[MessageIn]
) -> AgentSession:
    """Append messages to an unarchived session of the caller.

    Raises:
        NotFound: not the caller's session. Conflict: archived (``SESSION_ARCHIVED``), full, or raced.
    """
    row = await get_session(s, principal=principal, session_id=session_id)
    if row.archived_at is not None:
        raise SessionArchived(f"session {session_id} is archived; messages cannot be added", field="sessionId")
    await _append(s, row, messages)
    return row


async def archive_session(s: AsyncSession, *, principal: Principal, session_id: str) -> AgentSession:
    """Archive a session (idempotent: archiving an archived session keeps the first time)."""
    row = await get_session(s, principal=principal, session_id=session_id)
    if row.archived_at is None:  # conditional: of concurrent archives the first time stays
        await s.execute(
            update(AgentSession)
            .where(col(AgentSession.id) == row.id, col(AgentSession.archived_at).is_(None))
            .values(archived_at=utcnow())
        )
        fresh = await s.get(AgentSession, row.id, populate_existing=True)
        if fresh is None:  # deleted meanwhile (its workspace was)
            raise NotFound(f"agent session {row.id!r} not found", field="sessionId")
        row = fresh
    return row


async def recent_messages(s: AsyncSession, *, session_id: str, limit: int) -> list[SessionMessage]:
    """The newest ``limit`` messages of a session, oldest first."""
    rows = (
        (
            await s.execute(
                select(SessionMessage)
                .where(col(SessionMessage.session_id) == session_id)
                .order_by(col(SessionMessage.ordinal).desc())
                .limit(limit)
            )
        )
        .scalars()
        .all()
    )
    return list(reversed(rows))


async def list_sessions(
    s: AsyncSession, *, principal: Principal, include_archived: bool, limit: int
) -> list[AgentSession]:
    """The caller's sessions, most recently updated first."""
    stmt = select(AgentSession).where(
        col(AgentSession.workspace_id) == principal.workspace_id, col(AgentSession.member_id) == principal.member_id
    )
    if not include_archived:
        stmt = stmt.where(col(AgentSession.archived_at).is_(None))
    rows = await s.execute(stmt.order_by(col(AgentSession.updated_at).desc(), col(AgentSession.id)).limit(limit))
    return list(rows.scalars().all())
