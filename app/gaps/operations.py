"""Context gaps: ``reportContextGap`` and ``contextGaps``, one function per operation,
``fn(services, principal, request)``; each validates its request, opens and commits its own
session.

Limits: ``task`` 1–4,000 characters (a pack's task limit), ``missing`` 1–2,000 characters —
over either → 400 ``CONTEXT_GAP_TEXT_TOO_LONG`` naming the field and the limit; empty,
whitespace-only, or holding control characters/bidi overrides → 400 ``BAD_USER_INPUT`` (the
one text rule, :func:`app.core.text_rules.validate_text`). ``packId`` and ``traceId`` are
optional ids (≤ 64 characters, the identifier rule); they are stored as given (a pack need
not be retained to be named).

Listing: newest first (``created_at`` then ``id``, both descending, a total order);
``first`` 1–200 (default 50; outside → 400 ``PAGE_SIZE_OUT_OF_RANGE``); ``after`` is the
``endCursor`` of the previous page, ``base64url(JSON {"t": created_at ISO-8601, "i": id})``
(anything else → 400 ``INVALID_CURSOR``).

``services`` is the process's :class:`app.context.Services` (only ``db`` is used).
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import and_, func, or_, select
from sqlmodel import col

from cairn.app.core.errors import BadInput
from cairn.app.core.ids import as_utc, new_id, utcnow
from cairn.app.core.models import AgentCredential, ContextGap, Member
from cairn.app.core.text_rules import validate_identifier, validate_text
from cairn.app.gaps.errors import ContextGapCursorInvalid, ContextGapPageSizeOutOfRange, ContextGapTextTooLong
from cairn.app.governance import Principal, ServicesPort

TASK_MAX = 4_000
MISSING_MAX = 2_000
GAP_LIST_DEFAULT = 50
GAP_LIST_MAX = 200


@dataclass(frozen=True)
class GapReport:
    """``reportContextGap`` input: the task (1–4,000 characters), what was missing (1–2,000),
    optionally the pack and the trace it concerns (ids, ≤ 64 characters)."""

    task: str
    missing: str
    pack_id: str | None = None
    trace_id: str | None = None


@dataclass(frozen=True)
class GapView:
    """A stored gap as callers see it. ``reporter_kind`` is ``agent`` (``credential_id`` and its
    name set) or ``member``; ``member_id``/``member_name`` are the human behind the report (the
    member, or the credential's creator)."""

    id: str
    task: str
    missing: str
    reporter_kind: str
    credential_id: str | None
    credential_name: str | None
    member_id: str
    member_name: str
    pack_id: str | None
    trace_id: str | None
    created_at: datetime


@dataclass(frozen=True)
class GapListRequest:
    """One page of ``contextGaps``: ``first`` (1–200) after ``after`` (a cursor or None)."""

    first: int = GAP_LIST_DEFAULT
    after: str | None = None


@dataclass(frozen=True)
class GapPage:
    """A page of gaps, newest first, the workspace's total and the next cursor (None on the last page)."""

    gaps: tuple[GapView, ...]
    total_count: int
    end_cursor: str | None
    has_next_page: bool


def _text(value: Any, field: str, max_len: int) -> None:
    if isinstance(value, str) and len(value) > max_len:
        raise ContextGapTextTooLong(
            f"{field} is {len(value):,} characters; at most {max_len:,} allowed", field=field, limit=max_len
        )
    validate_text(value, field, max_len)
    if not value.strip():
        raise BadInput(f"{field} must contain non-whitespace text", field=field, limit=f"1-{max_len}")


def validate_report(req: GapReport, prefix: str = "input.") -> None:
    """Limits of :func:`report_gap` (module doc); ``prefix`` is the input path the errors name.

    Raises:
        ContextGapTextTooLong: ``task`` or ``missing`` over its limit.
        BadInput: empty text, control characters, or a malformed ``packId``/``traceId``.
    """
    _text(req.task, f"{prefix}task", TASK_MAX)
    _text(req.missing, f"{prefix}missing", MISSING_MAX)
    if req.pack_id is not None:
        validate_identifier(req.pack_id, f"{prefix}packId")
    if req.trace_id is not None:
        validate_identifier(req.trace_id, f"{prefix}traceId")


def _encode(created_at: datetime, gap_id: str) -> str:
    raw = json.dumps({"t": as_utc(created_at).isoformat(), "i": gap_id}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode("utf-8")).decode("ascii").rstrip("=")


def _decode(cursor: str) -> tuple[datetime, str]:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode("ascii")).decode("utf-8"))
        when, gap_id = datetime.fromisoformat(data["t"]), data["i"]
        if not isinstance(gap_id, str) or when.tzinfo is None:
            raise ValueError
    except (ValueError, TypeError, KeyError, UnicodeError, binascii.Error):
        raise ContextGapCursorInvalid(
            "after is not a cursor issued by contextGaps; pass endCursor from the previous page", field="after"
        ) from None
    return when, gap_id


def validate_list(req: GapListRequest) -> None:
    """Limits of :func:`list_gaps` (module doc).

    Raises:
        ContextGapPageSizeOutOfRange: ``first``. ContextGapCursorInvalid: ``after``.
    """
    if not 1 <= req.first <= GAP_LIST_MAX:
        raise ContextGapPageSizeOutOfRange(
            f"first must be 1–{GAP_LIST_MAX} (got {req.first}); page with after=endCursor for more",
            field="first",
            limit=GAP_LIST_MAX,
        )
    if req.after is not None:
        _decode(req.after)


async def _view(s: Any, gap: ContextGap) -> GapView:
    member = await s.get(Member, gap.member_id)
    cred = await s.get(AgentCredential, gap.credential_id) if gap.credential_id else None
    return GapView(
        id=gap.id,
        task=gap.task,
        missing=gap.missing,
        reporter_kind=gap.reporter_kind,
        credential_id=gap.credential_id,
        credential_name=cred.name if cred is not None else None,
        member_id=gap.member_id,
        member_name=member.name if member is not None else "",
        pack_id=gap.pack_id,
        trace_id=gap.trace_id,
        created_at=as_utc(gap.created_at),
    )


async def report_gap(services: ServicesPort, principal: Principal, req: GapReport) -> GapView:
    """Store a gap reported by the caller (an agent with ``gaps:report``, or a member).

    Returns:
        The stored gap (``id`` ``gap_<24 hex>``, ``created_at`` now, UTC).

    Raises:
        ContextGapTextTooLong, BadInput: see :func:`validate_report`.
    """
    validate_report(req)
    gap = ContextGap(
        id=new_id("gap"),
        workspace_id=principal.workspace_id,
        task=req.task,
        missing=req.missing,
        reporter_kind=principal.kind,
        credential_id=principal.id if principal.is_agent else None,
        member_id=principal.member_id,
        pack_id=req.pack_id,
        trace_id=req.trace_id,
        created_at=utcnow(),
    )
    async with services.db.session() as s:
        s.add(gap)
        await s.flush()
        return await _view(s, gap)


async def list_gaps(services: ServicesPort, principal: Principal, req: GapListRequest) -> GapPage:
    """One page of the workspace's gaps, newest first (module doc: order, cursor, limits).

    Raises:
        ContextGapPageSizeOutOfRange, ContextGapCursorInvalid: see :func:`validate_list`.
    """
    validate_list(req)
    ws = col(ContextGap.workspace_id) == principal.workspace_id
    async with services.db.session() as s:
        total = int((await s.execute(select(func.count(col(ContextGap.id))).where(ws))).scalar_one())
        q = select(ContextGap).where(ws)
        if req.after is not None:
            when, gap_id = _decode(req.after)
            q = q.where(
                or_(
                    col(ContextGap.created_at) < when,
                    and_(col(ContextGap.created_at) == when, col(ContextGap.id) < gap_id),
                )
            )
        order = (col(ContextGap.created_at).desc(), col(ContextGap.id).desc())
        rows = list((await s.execute(q.order_by(*order).limit(req.first + 1))).scalars())
        more = len(rows) > req.first
        rows = rows[: req.first]
        views = tuple([await _view(s, g) for g in rows])
    cursor = _encode(rows[-1].created_at, rows[-1].id) if rows and more else None
    return GapPage(views, total, cursor, more)
