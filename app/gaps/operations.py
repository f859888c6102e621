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

Resolution (issue 36): a gap is ``OPEN`` until an editor turns it into a verified answer or a
definition of a context set (:func:`resolve_gap`: a new set version, the gap ``RESOLVED`` with
the set and entry it became) or dismisses it with a reason (:func:`dismiss_gap`,
``DISMISSED``); either records who and when, and a gap is resolved once (409
``CONTEXT_GAP_RESOLVED`` after that).

``services`` is the process's :class:`app.context.Services` (only ``db`` is used).
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import and_, func, or_, select, update
from sqlmodel import col

from cairn.app import contextsets
from cairn.app.core.errors import BadInput, NotFound
from cairn.app.core.ids import as_utc, new_id, utcnow
from cairn.app.core.models import AgentCredential, ContextGap, Member
from cairn.app.core.text_rules import validate_identifier, validate_text
from cairn.app.gaps.errors import (
    ContextGapCursorInvalid,
    ContextGapPageSizeOutOfRange,
    ContextGapResolved,
    ContextGapTextTooLong,
)
from cairn.app.governance import Principal, ServicesPort

TASK_MAX = 4_000
MISSING_MAX = 2_000
GAP_LIST_DEFAULT = 50
GAP_LIST_MAX = 200
REASON_MAX = 2_000
STATUSES = ("OPEN", "RESOLVED", "DISMISSED")


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
    status: str = "OPEN"
    resolution: str | None = None
    resolved_by: str | None = None
    resolved_by_name: str | None = None
    resolved_at: datetime | None = None
    resolved_context_set_id: str | None = None
    resolved_entry_id: str | None = None


@dataclass(frozen=True)
class GapResolution:
    """``resolveContextGap``: turn gap ``gap_id`` into exactly one new entry of context set
    ``context_set_id`` — a verified answer or a definition (their limits are the set's,
    :func:`app.contextsets.validate_write`).

    Raises (when built):
        BadInput: a malformed id, neither or both entries, or an entry over a limit.
    """

    gap_id: str
    context_set_id: str
    verified_answer: contextsets.VerifiedAnswerInput | None = None
    definition: contextsets.DefinitionInput | None = None

    def __post_init__(self) -> None:
        validate_identifier(self.gap_id, "id")
        validate_identifier(self.context_set_id, "input.contextSetId")
        if (self.verified_answer is None) == (self.definition is None):
            raise BadInput(
                "give exactly one of input.verifiedAnswer and input.definition", field="input", limit="exactly one"
            )
        contextsets.validate_write(self._write(), "input", creating=False)

    def _write(self) -> contextsets.ContextSetWrite:
        if self.verified_answer is not None:
            return contextsets.ContextSetWrite(verified_answers=(self.verified_answer,))
        assert self.definition is not None
        return contextsets.ContextSetWrite(definitions=(self.definition,))


@dataclass(frozen=True)
class GapDismissal:
    """``dismissContextGap``: close gap ``gap_id`` without an entry; ``reason`` 1–2,000 characters.

    Raises (when built):
        BadInput: a malformed id; an empty reason. ContextGapTextTooLong: ``reason`` over 2,000.
    """

    gap_id: str
    reason: str

    def __post_init__(self) -> None:
        validate_identifier(self.gap_id, "id")
        _text(self.reason, "reason", REASON_MAX)


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
    resolver = await s.get(Member, gap.resolved_by) if gap.resolved_by else None
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
        status=gap.status,
        resolution=gap.resolution,
        resolved_by=gap.resolved_by,
        resolved_by_name=resolver.name if resolver is not None else None,
        resolved_at=as_utc(gap.resolved_at) if gap.resolved_at else None,
        resolved_context_set_id=gap.resolved_context_set_id,
        resolved_entry_id=gap.resolved_entry_id,
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


async def _open_gap(s: Any, principal: Principal, gap_id: str) -> ContextGap:
    gap = await s.get(ContextGap, gap_id)
    if gap is None or gap.workspace_id != principal.workspace_id:
        raise NotFound(f"no context gap {gap_id} in this workspace", field="id")
    if gap.status != "OPEN":
        raise ContextGapResolved(f"context gap {gap_id} is already {gap.status.lower()} ({gap.resolution})", field="id")
    return gap


async def _close(
    services: ServicesPort, principal: Principal, gap_id: str, status: str, resolution: str, **where: str | None
) -> GapView:
    """Mark an OPEN gap closed; 409 when another editor closed it first (the check and the write
    are one ``UPDATE … WHERE status = 'OPEN'``)."""
    async with services.db.session() as s:
        done = await s.execute(
            update(ContextGap)
            .where(col(ContextGap.id) == gap_id, col(ContextGap.status) == "OPEN")
            .values(
                status=status,
                resolution=resolution,
                resolved_by=principal.member_id,
                resolved_at=utcnow(),
                resolved_context_set_id=where.get("context_set_id"),
                resolved_entry_id=where.get("entry_id"),
            )
        )
        if done.rowcount != 1:  # type: ignore[attr-defined]
            await _open_gap(s, principal, gap_id)  # raises: closed meanwhile
        gap = await s.get(ContextGap, gap_id, populate_existing=True)
        assert gap is not None
        return await _view(s, gap)


async def resolve_gap(services: ServicesPort, principal: Principal, req: GapResolution) -> GapView:
    """Add the gap's entry to the set (a new set version, every other entry kept) and mark the
    gap ``RESOLVED`` with that set and entry.

    The set is changed first, then the gap: if another editor closed the gap in between, the
    entry stays (a valid entry) and this call answers 409.

    Raises:
        NotFound: no such gap or set. ContextGapResolved (409): the gap is not open.
        BadInput / ContextSetNameTaken: the set's own write rules (a duplicate term, a limit).
    """
    async with services.db.session() as s:
        await _open_gap(s, principal, req.gap_id)
    current = await contextsets.get_context_set(
        services, principal, contextsets.GetContextSetRequest(context_set_id=req.context_set_id)
    )
    if req.verified_answer is not None:
        kind, label = "VERIFIED_ANSWER", "verified answer"
        answers = tuple(
            contextsets.VerifiedAnswerInput(e.key, e.value, e.document_id, e.passage_id) for e in current.of(kind)
        )
        write = contextsets.ContextSetWrite(verified_answers=(*answers, req.verified_answer))
        key = req.verified_answer.question
    else:
        assert req.definition is not None
        kind, label = "DEFINITION", "definition"
        terms = tuple(contextsets.DefinitionInput(e.key, e.value, tuple(e.aliases)) for e in current.of(kind))
        write = contextsets.ContextSetWrite(definitions=(*terms, req.definition))
        key = req.definition.term
    after = await contextsets.update_context_set(
        services, principal, contextsets.UpdateContextSetRequest(context_set_id=current.id, write=write)
    )
    entry = after.of(kind)[-1]  # appended last: positions follow the list given
    return await _close(
        services,
        principal,
        req.gap_id,
        "RESOLVED",
        f"{label} {key!r} ({entry.id}) in context set {after.name!r}, version {after.version}",
        context_set_id=after.id,
        entry_id=entry.id,
    )


async def dismiss_gap(services: ServicesPort, principal: Principal, req: GapDismissal) -> GapView:
    """Mark an open gap ``DISMISSED`` with the reason (no set changes).

    Raises:
        NotFound: no such gap. ContextGapResolved (409): the gap is not open.
    """
    return await _close(services, principal, req.gap_id, "DISMISSED", req.reason)
