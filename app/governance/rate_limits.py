"""Per-credential rate limits by operation class, counted in the SQL database.

Every authenticated call counts against one class of its operation
(:attr:`app.governance.operation.Operation.rate_class`): ``packs``, ``decisions``, ``writes`` or
``reads``; a GraphQL document that runs no governed field counts one ``reads`` call
(:func:`app.governance.adapter.meter_document`). The limit is per subject — an agent credential, or a member (member tokens are
keyed by member) — per fixed one-minute window, from Settings
``rate_limit_<class>_per_minute`` (0 = unlimited). Over the limit the call is refused with
:class:`RateLimited` (HTTP 429, ``RATE_LIMITED``, ``retryAfter`` seconds until the window
ends → the ``Retry-After`` header).

Counters live in the ``rate_limit_counter`` table so that several workers (processes or
hosts sharing a PostgreSQL database) share them. Each check is ONE statement,
``INSERT … ON CONFLICT (subject, rate_class, window_start) DO UPDATE SET hits = hits + 1
RETURNING hits``: the database serialises concurrent increments of one row, so of a burst
of N + k concurrent calls at limit N exactly N see ``hits <= N``. Refused calls are counted
too (they cannot push an allowed call over). Rows older than two windows are deleted at
most once a minute per process. On PostgreSQL the transaction commits with
``synchronous_commit = off`` (a crash may forget the last few counts; the increment is still
atomic and seen by every other worker at once), which cuts a check from a WAL flush (~4 ms
here) to a round trip; see ``bench/rate_limits.py``.

A fixed window admits up to 2N calls across a window boundary (N at the end of one window,
N at the start of the next); that is the accepted cost of one row and one statement per
call. Purpose-specific limits (memory's 120 remembers/h, the judge's 429) apply on top.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from sqlalchemy import Table, delete, text
from sqlalchemy.dialects import postgresql, sqlite

from cairn.app.core.config import Settings
from cairn.app.core.db import Database
from cairn.app.core.errors import CairnError
from cairn.app.core.models import RateLimitCounter
from cairn.app.governance.auth import Principal
from cairn.app.governance.operation import RATE_CLASSES

WINDOW_SECONDS = 60
"""Length of one fixed window (limits are configured per minute)."""

CLEANUP_EVERY_SECONDS = 60.0
"""A process deletes old windows at most this often."""

_NO_SYNC_COMMIT = text("SET LOCAL synchronous_commit = off")


class RateLimited(CairnError):
    """Too many calls of one class by one credential in the current window (429 ``RATE_LIMITED``).

    ``extensions``: ``rateClass``, ``limit`` (calls per window), ``window`` (seconds),
    ``retryAfter`` (whole seconds until the window ends, ≥ 1).
    """

    code = "RATE_LIMITED"
    http_status = 429


def subject_of(principal: Principal) -> str:
    """The counter key of a principal: ``agent:<credential id>`` or ``member:<member id>``."""
    return f"{principal.kind}:{principal.id}"


class RateLimiter:
    """Checks and counts calls against the configured limits (one instance per process).

    Args:
        limits: Calls per window for each class of :data:`~app.governance.operation.RATE_CLASSES`;
            0 (or a missing class) means unlimited.
        clock: Returns Unix seconds (``time.time``; tests may pass a fixed clock).
    """

    def __init__(self, limits: dict[str, int], clock: Callable[[], float] = time.time) -> None:
        unknown = set(limits) - set(RATE_CLASSES)
        if unknown:
            raise ValueError(f"unknown rate classes {sorted(unknown)}; known: {list(RATE_CLASSES)}")
        self.limits = dict(limits)
        self.clock = clock
        self._last_cleanup = 0.0

    @classmethod
    def from_settings(cls, settings: Settings) -> RateLimiter:
        """The limiter of Settings ``rate_limit_<class>_per_minute``."""
        return cls({c: getattr(settings, f"rate_limit_{c}_per_minute") for c in RATE_CLASSES})

    async def check(self, db: Database, subject: str, rate_class: str | None) -> int | None:
        """Count one call of ``subject`` in ``rate_class``; refuse it if over the limit.

        Args:
            db: The :class:`~app.core.db.Database` (SQLite or PostgreSQL).
            subject: From :func:`subject_of`.
            rate_class: One of :data:`~app.governance.operation.RATE_CLASSES`; ``None`` → not limited.

        Returns:
            The call's count in the current window, or None when the class is unlimited.

        Raises:
            RateLimited: the count is over the limit.
        """
        limit = self.limits.get(rate_class or "", 0)
        if not limit:
            return None
        now = self.clock()
        window_start = int(now // WINDOW_SECONDS) * WINDOW_SECONDS
        insert = postgresql.insert if db.dialect == "postgresql" else sqlite.insert
        # SQLAlchemy's declarative sets __table__ when the class is made; SQLModel's stubs do not declare it
        table: Table = RateLimitCounter.__table__  # type: ignore[attr-defined]
        stmt = (
            insert(table)
            .values(subject=subject, rate_class=rate_class, window_start=window_start, hits=1)
            .on_conflict_do_update(
                index_elements=["subject", "rate_class", "window_start"], set_={"hits": table.c.hits + 1}
            )
            .returning(table.c.hits)
        )
        async with db.session() as s:
            if db.dialect == "postgresql":  # a counter need not survive a crash: don't wait for the WAL flush
                await s.execute(_NO_SYNC_COMMIT)
            hits = (await s.execute(stmt)).scalar_one()
            if now - self._last_cleanup >= CLEANUP_EVERY_SECONDS:
                self._last_cleanup = now
                await s.execute(delete(table).where(table.c.window_start < window_start - WINDOW_SECONDS))
        if hits > limit:
            retry = max(1, math.ceil(window_start + WINDOW_SECONDS - now))
            raise RateLimited(
                f"at most {limit} {rate_class} per minute per credential; retry after {retry} s",
                rateClass=rate_class,
                limit=limit,
                window=WINDOW_SECONDS,
                retryAfter=retry,
            )
        return hits
