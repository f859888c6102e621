"""Retention of replay records: the purge of records past their 30 days, at start-up and
then every ``CAIRN_REPLAY_PURGE_INTERVAL_SECONDS`` (the serve lifespan's background task).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import datetime

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from cairn.app.core.db import Database
from cairn.app.core.ids import utcnow
from cairn.app.core.models import ReplayRecord

log = logging.getLogger("cairn.replay")

PURGE_BATCH = 1000
"""Expired replay records deleted per transaction by :func:`purge_replays`."""


async def purge_expired_replays(s: AsyncSession, now: datetime | None = None, *, limit: int | None = None) -> int:
    """Delete replay records whose 30 days have passed (``expires_at`` at or before ``now``,
    default the current time) in session ``s``, at most ``limit`` of them (oldest expiry
    first; None: all); returns how many were deleted."""
    cut = now or utcnow()
    q = select(col(ReplayRecord.id)).where(col(ReplayRecord.expires_at) <= cut).order_by(col(ReplayRecord.expires_at))
    if limit is not None:
        q = q.limit(limit)
    ids = list((await s.execute(q)).scalars().all())
    for i in range(0, len(ids), 500):
        await s.execute(delete(ReplayRecord).where(col(ReplayRecord.id).in_(ids[i : i + 500])))
    return len(ids)


async def purge_replays(db: Database, now: datetime | None = None) -> int:
    """Delete every expired replay record, :data:`PURGE_BATCH` per transaction (so a large
    backlog never holds one long write lock); returns how many were deleted."""
    total = 0
    while True:
        async with db.session() as s:
            n = await purge_expired_replays(s, now, limit=PURGE_BATCH)
        total += n
        if n < PURGE_BATCH:
            return total


async def purge_replays_every(
    db: Database, interval_seconds: float, *, on_purge: Callable[[int, datetime], None] | None = None
) -> None:
    """Run until cancelled (the serve lifespan's background task): every ``interval_seconds``
    (setting ``CAIRN_REPLAY_PURGE_INTERVAL_SECONDS``) :func:`purge_replays`, then
    ``on_purge(deleted, when)``. A failed run is logged and the loop goes on; at most one run
    at a time (each waits for the previous to finish, then the full interval)."""
    while True:
        await asyncio.sleep(interval_seconds)
        try:
            when = utcnow()
            n = await purge_replays(db, when)
        except Exception:
            log.exception("periodic replay purge failed")
            continue
        if on_purge is not None:
            on_purge(n, when)
