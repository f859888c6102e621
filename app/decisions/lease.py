"""Leases of running decisions: a ``RUNNING`` decision whose process died must not read
``RUNNING`` forever.

The process running a decision holds a lease on it: ``decision.lease_expires_at``, set to
now + ``lease_seconds`` (``CAIRN_DECISION_LEASE_SECONDS``, default 30 s) when the decision is
accepted and renewed every third of that while the judge works (:class:`Heartbeat`). A process
that is killed stops renewing. Whoever then reads the decision — ``GET
/api/v1/decisions/{id}``, GraphQL ``decision(id)``, a retry with its Idempotency-Key — or a
server starting up (:func:`sweep_lapsed`) marks it ``FAILED`` with 500
``decision_internal_error`` ("the process running this decision stopped") once the lease has
passed.

The mark is a compare-and-set (``UPDATE … WHERE status = 'RUNNING' AND lease lapsed``): of two
readers one changes the row, and both then read the same ``FAILED`` record. A process that is
alive but lost its lease (its event loop stalled past the lease) cannot overwrite the mark: its
own result is stored only ``WHERE status = 'RUNNING'`` (``DecisionRunner._save``).

The decision's Idempotency-Key record is deleted in the same transaction, so a retry with the
same key and body runs the decision again (a new ``dec_…``; the failed one stays readable), as
for the other failures that are the server's and not the request's (503, 504, 499; see
:mod:`app.decisions.service`): SPEC §8 replays the *original response* for a key, and a request
whose process died never had one — the client that retries has no other way to get an answer.

Why a short renewed lease rather than "created + judge timeout + margin": a dead process is
noticed after at most ``lease_seconds`` (30 s) instead of timeout + margin (60 + 60 s by
default), and a live decision that overruns its timeout (the worker thread finishes its current
judge call first) is never failed while its process still renews it.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, and_, delete, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from cairn.app.core.db import Database, rows_matched
from cairn.app.core.ids import as_utc, utcnow
from cairn.app.core.models import Decision, DecisionIdempotency

log = logging.getLogger("cairn.decisions")

LAPSED_CODE = "decision_internal_error"
LAPSED_MESSAGE = (
    "the process running this decision stopped before it finished (its lease lapsed); "
    "send the request again to run it again (the same Idempotency-Key may be reused)"
)
RENEWALS_PER_LEASE = 3
"""The heartbeat renews every ``lease / 3`` seconds: two renewals may fail (a busy database)
before the lease lapses."""


def lapsed_error() -> dict[str, Any]:
    """The ``error`` stored on a decision whose lease lapsed (``{code, message}``)."""
    return {"code": LAPSED_CODE, "message": LAPSED_MESSAGE}


def _lapsed(now: datetime) -> ColumnElement[bool]:
    """SQL: a ``RUNNING`` decision whose lease has passed (or that never had one)."""
    return and_(
        col(Decision.status) == "RUNNING",
        or_(col(Decision.lease_expires_at).is_(None), col(Decision.lease_expires_at) < now),
    )


def is_lapsed(row: Decision, now: datetime) -> bool:
    """Python twin of :func:`_lapsed` for a row already read (decides whether to write at all)."""
    if row.status != "RUNNING":
        return False
    if row.lease_expires_at is None:
        return True
    return as_utc(row.lease_expires_at) < now


async def fail_if_lapsed(s: AsyncSession, decision_id: str, now: datetime | None = None) -> bool:
    """Mark one decision ``FAILED`` if it is ``RUNNING`` with a lapsed lease, and delete its
    ``RUNNING`` Idempotency-Key record, in the caller's transaction ``s``.

    Returns:
        True when this call changed the row (False: not lapsed, or another reader was first).
    """
    now = now or utcnow()
    result = await s.execute(
        update(Decision)
        .where(col(Decision.id) == decision_id, _lapsed(now))
        .values(status="FAILED", error=lapsed_error(), completed_at=now)
        .execution_options(synchronize_session=False)
    )
    if rows_matched(result) != 1:
        return False
    await s.execute(
        delete(DecisionIdempotency).where(
            col(DecisionIdempotency.decision_id) == decision_id, col(DecisionIdempotency.state) == "RUNNING"
        )
    )
    log.warning("decision %s: its process stopped (lease lapsed); marked FAILED", decision_id)
    return True


async def sweep_lapsed(db: Database) -> int:
    """Mark every ``RUNNING`` decision whose lease has lapsed ``FAILED`` (server start-up).

    Safe beside live servers on the same database: their decisions' leases are renewed.

    Returns:
        How many decisions this call marked.
    """
    now = utcnow()
    async with db.session() as s:
        ids = (await s.execute(select(col(Decision.id)).where(_lapsed(now)))).scalars().all()
    marked = 0
    for decision_id in ids:  # one transaction each: a decision and its key record together
        async with db.session() as s:
            marked += await fail_if_lapsed(s, decision_id, now)
    return marked


async def renew(db: Database, decision_id: str, lease_seconds: float) -> bool:
    """Push a running decision's lease to now + ``lease_seconds``.

    Returns:
        False when the decision is no longer ``RUNNING`` (finished, or its lease was taken).
    """
    async with db.session() as s:
        result = await s.execute(
            update(Decision)
            .where(col(Decision.id) == decision_id, col(Decision.status) == "RUNNING")
            .values(lease_expires_at=utcnow() + timedelta(seconds=lease_seconds))
            .execution_options(synchronize_session=False)
        )
        return rows_matched(result) == 1


class Heartbeat:
    """Renews a running decision's lease every ``lease_seconds / 3`` until the block ends.

    ``async with Heartbeat(db, decision_id, lease_seconds):`` around the judge work. A failed
    renewal is logged and tried again at the next beat; the beat stops when the decision is no
    longer ``RUNNING``.
    """

    def __init__(self, db: Database, decision_id: str, lease_seconds: float) -> None:
        self.db = db
        self.decision_id = decision_id
        self.lease_seconds = lease_seconds
        self._task: asyncio.Task | None = None

    async def _beat(self) -> None:
        while True:
            await asyncio.sleep(self.lease_seconds / RENEWALS_PER_LEASE)
            try:
                if not await renew(self.db, self.decision_id, self.lease_seconds):
                    return
            except Exception:  # the next beat tries again; the lease covers two misses
                log.warning("decision %s: renewing its lease failed", self.decision_id, exc_info=True)

    async def __aenter__(self) -> Heartbeat:
        self._task = asyncio.create_task(self._beat())
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
