"""Keep a worker's indexes following the change log while it serves (issue 19).

:class:`ChangeFollower` runs :meth:`app.corpus.SearchIndexes.index_pending` in a loop: on
PostgreSQL it wakes on ``NOTIFY cairn_index_changes`` (a dedicated asyncpg connection doing
``LISTEN``; a write queues the notification in its own transaction, delivered at commit) and
at least every ``poll_seconds`` anyway (the polling fallback: a lost notification, a dropped
listener connection, or a change deferred behind an older running transaction is picked up
by the next poll). On SQLite it polls (another process writing to the same file is the rare
case; this process's own writes are indexed by the write itself).

Lag bound (a write on another worker until it is in this worker's packs): with LISTEN, the
notification round trip plus the time to apply the batch (Whoosh commit + encoding, ~50 ms a
passage on 2 cores); without it, at most ``poll_seconds`` more. A change also waits for write
transactions that started before it to end (:mod:`app.corpus.changes`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from cairn.app.core.db import Database
from cairn.app.core.errors import as_cairn_error
from cairn.app.corpus.changes import CHANNEL

log = logging.getLogger("cairn.indexing")


class ChangeFollower:
    """Catches ``indexes`` up with the change log of ``db`` until cancelled.

    Args:
        db: The database.
        indexes: The process's :class:`app.corpus.SearchIndexes`.
        poll_seconds: Longest wait between two catch-ups (> 0).

    Raises:
        ValueError: ``poll_seconds`` is not positive.
    """

    def __init__(self, db: Database, indexes: Any, *, poll_seconds: float = 1.0) -> None:
        if not poll_seconds > 0:
            raise ValueError(f"poll_seconds must be > 0, got {poll_seconds}")
        self.db = db
        self.indexes = indexes
        self.poll_seconds = float(poll_seconds)
        self.listening = False
        """True while a LISTEN connection is up (PostgreSQL)."""
        self._wake = asyncio.Event()
        self._conn: Any = None

    def wake(self) -> None:
        """Catch up now (e.g. after a notification)."""
        self._wake.set()

    async def _listen(self) -> None:
        """Open the LISTEN connection if on PostgreSQL and not yet open; failures fall back to polling."""
        if self.db.dialect != "postgresql" or self._conn is not None:
            return
        import asyncpg
        from sqlalchemy import make_url

        url = make_url(self.db.url)
        try:
            conn = await asyncpg.connect(
                host=url.host,
                port=url.port,
                user=url.username,
                password=url.password,
                database=url.database,
                timeout=5,
            )
            await conn.add_listener(CHANNEL, lambda *_: self._wake.set())
            conn.add_termination_listener(lambda *_: self._dropped())
        except Exception as exc:  # noqa: BLE001 - polling continues; logged once per attempt
            log.warning("LISTEN %s unavailable (%s); polling every %.1f s", CHANNEL, exc, self.poll_seconds)
            return
        self._conn = conn
        self.listening = True

    def _dropped(self) -> None:
        self._conn = None
        self.listening = False
        self._wake.set()

    async def run(self) -> None:
        """Follow until cancelled (errors are logged and retried at the next poll)."""
        try:
            while True:
                await self._listen()
                self._wake.clear()
                try:
                    await self.indexes.index_pending(self.db)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    outage = as_cairn_error(exc)
                    if outage is None:
                        log.exception("catching up with the change log failed; retrying")
                    else:  # a full disk or a stopped database: one line per poll, not a traceback
                        log.warning("catching up with the change log: %s (%s); retrying", outage.code, outage.message)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), self.poll_seconds)
        finally:
            await self.close()

    async def close(self) -> None:
        """Close the LISTEN connection (idempotent)."""
        conn, self._conn, self.listening = self._conn, None, False
        if conn is not None:
            with contextlib.suppress(Exception):
                await conn.close(timeout=2)
