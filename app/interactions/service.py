"""Trace interactions and operation receipts (SPEC §6 "Trace context").

``startInteraction`` issues a ``conversationId`` (new, or an existing one of the caller's
workspace to continue it) and a new ``interactionId``. An ontology call may carry both in
its ``trace`` input: the server then records an :class:`~app.core.models.OperationReceipt` under
that interaction and returns it. Both ids or neither: one without the other is refused
(``TRACE_CONTEXT_INVALID``); a misspelt field is refused by GraphQL validation; ids that
the server did not issue to this workspace are refused (``NOT_FOUND``). An empty ``trace``
object is an ad-hoc call, like no ``trace``.

Idempotency: the operation identity is derived on the server as SHA-256 of
``[operation, normalised input]`` (the ``trace`` itself is not part of it). A client may
send ``X-Client-Invocation-Id`` (1–128 visible ASCII characters) for retries: the same
invocation id from the same principal with the same operation and input returns the
recorded result (``receipt.replayed = true``) without running again; with a different
operation or input it is refused (``IDEMPOTENCY_KEY_REUSED``, 409). The id is claimed before
the call runs, so concurrent calls with one id run it once; while it runs the others get
``INVOCATION_IN_PROGRESS`` (409).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import col

from cairn.app.core.db import Database, rows_matched
from cairn.app.core.errors import BadInput, NotFound
from cairn.app.core.ids import new_id, utcnow
from cairn.app.core.models import OperationReceipt, TraceInteraction
from cairn.app.core.text_rules import validate_identifier
from cairn.app.interactions.errors import InvocationIdReused, InvocationInProgress, TraceContextInvalid

INVOCATION_HEADER = "x-client-invocation-id"
PENDING = {"cairn:pending": True}
"""``result`` of a receipt whose call is still running (no operation returns this object)."""
STALE_CLAIM = timedelta(minutes=15)
"""A claim pending this long is taken over by a retry (the process that ran it ended)."""
_INVOCATION_RE = re.compile(r"^[\x21-\x7e]{1,128}$")


@dataclass
class Receipt:
    """The receipt returned with a managed or idempotent call."""

    id: str
    operation: str
    conversation_id: str | None
    interaction_id: str | None
    invocation_id: str | None
    input_sha256: str
    replayed: bool
    recorded_at: datetime


def check_trace(trace: dict[str, Any] | None) -> tuple[str, str] | None:
    """Both ids, or None for an ad-hoc call.

    Raises:
        TraceContextInvalid: ``TRACE_CONTEXT_INVALID`` when only one id is given (or one is empty).
    """
    if not trace:
        return None
    conv, inter = trace.get("conversationId"), trace.get("interactionId")
    if conv is None and inter is None:
        return None
    if not conv or not inter:
        missing = "interactionId" if conv else "conversationId"
        raise TraceContextInvalid(
            f"trace needs both conversationId and interactionId (from startInteraction); {missing} is missing",
            field=f"trace.{missing}",
        )
    for name, value in (("conversationId", conv), ("interactionId", inter)):
        validate_identifier(value, f"trace.{name}", 40, error=TraceContextInvalid)
    return conv, inter


def invocation_id(headers: dict[str, str]) -> str | None:
    """The ``X-Client-Invocation-Id`` header, checked.

    Raises:
        BadInput: not 1–128 visible ASCII characters.
    """
    value = headers.get(INVOCATION_HEADER)
    if value is None:
        return None
    if not _INVOCATION_RE.match(value):
        raise BadInput(
            "X-Client-Invocation-Id must be 1–128 visible ASCII characters", field="X-Client-Invocation-Id", limit=128
        )
    return value


def input_sha256(operation: str, normalized_input: dict[str, Any]) -> str:
    """SHA-256 of ``[operation, input]`` as canonical JSON (the operation's identity)."""
    blob = json.dumps([operation, normalized_input], sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


async def start_interaction(
    db: Database, *, workspace_id: str, principal_id: str, conversation_id: str | None = None
) -> TraceInteraction:
    """Issue a new interaction (in a new conversation unless ``conversation_id`` is given).

    Raises:
        NotFound: ``conversation_id`` was not issued to this workspace.
    """
    async with db.session() as s:
        if conversation_id is not None:
            found = (
                await s.execute(
                    select(col(TraceInteraction.interaction_id))
                    .where(
                        col(TraceInteraction.conversation_id) == conversation_id,
                        col(TraceInteraction.workspace_id) == workspace_id,
                    )
                    .limit(1)
                )
            ).first()
            if found is None:
                raise NotFound(
                    f"conversation {conversation_id!r} was not issued to your workspace; "
                    "omit conversationId to start a new one",
                    field="conversationId",
                )
        row = TraceInteraction(
            interaction_id=new_id("int"),
            conversation_id=conversation_id or new_id("conv"),
            workspace_id=workspace_id,
            principal_id=principal_id,
            created_at=utcnow(),
        )
        s.add(row)
    return row


def _receipt(row: OperationReceipt, replayed: bool) -> Receipt:
    return Receipt(
        id=row.id,
        operation=row.operation,
        conversation_id=row.conversation_id,
        interaction_id=row.interaction_id,
        invocation_id=row.invocation_id,
        input_sha256=row.input_sha256,
        replayed=replayed,
        recorded_at=row.created_at,
    )


async def _claim(db: Database, claim: OperationReceipt) -> tuple[Any, Receipt] | None:
    """Reserve ``claim.invocation_id`` for this call before it runs (the unique constraint decides).

    Returns:
        None when this call holds the claim (run it); ``(result, receipt)`` to replay.

    Raises:
        Conflict: ``IDEMPOTENCY_KEY_REUSED`` (another operation or input), or
            ``INVOCATION_IN_PROGRESS`` (the first call with this id is still running).
    """
    for _attempt in range(3):
        try:
            async with db.session() as s:
                s.add(claim)
            return None
        except IntegrityError:
            pass
        async with db.session() as s:
            row = (
                await s.execute(
                    select(OperationReceipt).where(
                        col(OperationReceipt.workspace_id) == claim.workspace_id,
                        col(OperationReceipt.principal_id) == claim.principal_id,
                        col(OperationReceipt.invocation_id) == claim.invocation_id,
                    )
                )
            ).scalar_one_or_none()
            if row is None:  # the holder failed and released it in between: claim again
                continue
            if row.operation != claim.operation or row.input_sha256 != claim.input_sha256:
                raise InvocationIdReused(
                    f"X-Client-Invocation-Id {claim.invocation_id!r} was already used for a different "
                    f"call ({row.operation}); use a new invocation id for a new call",
                    field="X-Client-Invocation-Id",
                )
            if row.result != PENDING:
                return row.result, _receipt(row, True)
            taken = await s.execute(
                update(OperationReceipt)
                .where(
                    col(OperationReceipt.id) == row.id,
                    col(OperationReceipt.created_at) < claim.created_at - STALE_CLAIM,
                )
                .values(
                    created_at=claim.created_at,
                    conversation_id=claim.conversation_id,
                    interaction_id=claim.interaction_id,
                )
            )
            if rows_matched(taken) == 1:  # its holder stopped (process ended) long ago: this call runs it
                claim.id = row.id
                return None
        break
    raise InvocationInProgress(
        f"the call with X-Client-Invocation-Id {claim.invocation_id!r} is still running; retry in a "
        "moment to get its result",
        field="X-Client-Invocation-Id",
    )


async def _release(db: Database, receipt_id: str) -> None:
    async with db.session() as s:
        await s.execute(delete(OperationReceipt).where(col(OperationReceipt.id) == receipt_id))


async def run_traced(
    db: Database,
    *,
    workspace_id: str,
    principal_id: str,
    operation: str,
    trace: dict[str, Any] | None,
    headers: dict[str, str],
    normalized_input: dict[str, Any],
    run: Callable[[], Awaitable[Any]],
) -> tuple[Any, Receipt | None]:
    """Run ``run()`` under the trace/idempotency rules of the module doc.

    With an invocation id the receipt is inserted *before* ``run()`` as a claim (result
    pending): of concurrent calls with one id exactly one inserts it and runs; the others
    replay its result when it is recorded, or get ``INVOCATION_IN_PROGRESS`` (409) while it
    runs. A failing (or cancelled) run deletes its claim, so a retry runs again. A claim left
    pending for ``STALE_CLAIM`` (its process ended) is taken over by the next retry.

    Args:
        normalized_input: The call's arguments as plain JSON, ``trace`` excluded.
        run: Produces the JSON-serialisable result (stored for replays).

    Returns:
        ``(result, receipt)``; receipt is None for an ad-hoc call without invocation id.

    Raises:
        BadInput / NotFound: bad trace context. Conflict: invocation id reused or in progress.
    """
    ids = check_trace(trace)
    invocation = invocation_id(headers)
    sha = input_sha256(operation, normalized_input)
    if ids is not None:
        async with db.session() as s:
            row = await s.get(TraceInteraction, ids[1])
            if row is None or row.workspace_id != workspace_id or row.conversation_id != ids[0]:
                raise NotFound(
                    "trace names an interaction that this server did not issue to your workspace "
                    "(or with another conversationId); call startInteraction",
                    field="trace.interactionId",
                )
    receipt = OperationReceipt(
        id=new_id("rcpt"),
        workspace_id=workspace_id,
        principal_id=principal_id,
        conversation_id=ids[0] if ids else None,
        interaction_id=ids[1] if ids else None,
        invocation_id=invocation,
        operation=operation,
        input_sha256=sha,
        result=PENDING if invocation is not None else None,
        created_at=utcnow(),
    )
    if invocation is not None:
        found = await _claim(db, receipt)
        if found is not None:
            return found
    try:
        result = await run()
    except BaseException:
        if invocation is not None:
            await asyncio.shield(_release(db, receipt.id))
        raise
    if ids is None and invocation is None:
        return result, None
    async with db.session() as s:
        if invocation is not None:
            await s.execute(
                update(OperationReceipt).where(col(OperationReceipt.id) == receipt.id).values(result=result)
            )
        else:
            s.add(receipt)
    receipt.result = result if invocation is not None else None
    return result, _receipt(receipt, False)
