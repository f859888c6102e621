"""What ``GET /readyz`` answers: ready once start-up finished *and* while the database answers
and the data dir's volume takes writes.

Start-up (:class:`Readiness` ``ready``/``detail``): migrated, indexes caught up with the change
log, model warm — set by the app's lifespan. Live checks (:meth:`Readiness.check`), so a
balancer stops routing to a process that can only fail:

- ``database``: ``SELECT 1`` on a pooled connection within :data:`DATABASE_TIMEOUT_SECONDS`
  (a stopped PostgreSQL refuses at once; an unreachable host is cut off by the timeout);
- ``storage`` (when the data dir holds the SQLite file or an index):
  :meth:`app.core.space.StorageSpace.probe` — at least ``CAIRN_MIN_FREE_MB`` free and a 64 KiB
  write that succeeds, so after a write failed for space ``/readyz`` stays 503 until writing
  works again, then answers 200 by itself (no restart).

The live checks run at most once per :data:`CHECK_CACHE_SECONDS` whatever the request rate
(concurrent probes wait for the one running): ``/readyz`` needs no credential, so it must not
become a way to load the database or the disk. Any failure gives 503 with ``reason``.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from cairn.app.context import Services
from cairn.app.core.errors import as_cairn_error

CHECK_CACHE_SECONDS = 1.0
"""How long one round of live checks answers ``/readyz`` (any number of probes per second cost
one ``SELECT 1`` and one 64 KiB write)."""

DATABASE_TIMEOUT_SECONDS = 2.0
"""Longest wait for the database's answer to ``SELECT 1`` before ``/readyz`` says not ready."""


class Readiness:
    """Start-up state plus the live checks of the module doc.

    Attributes:
        ready: Start-up finished (set by the lifespan).
        detail: Start-up steps and their outcome (``indexCatchUp``, ``model``, …), shown by ``/readyz``.
    """

    def __init__(self) -> None:
        self.ready = False
        self.detail: dict[str, Any] = {"indexCatchUp": "pending", "model": "pending"}
        self._checked_at = float("-inf")
        self._checks: dict[str, str | None] = {}
        self._lock: asyncio.Lock | None = None

    async def check(self, services: Services | None) -> tuple[bool, dict[str, Any]]:
        """``(ready, body)`` for ``/readyz``: the start-up detail, ``database`` and ``storage``
        (``"ok"`` or the reason), and ``reason`` (the first failure) when not ready.

        Args:
            services: The process's :class:`~app.context.Services` (None before start-up).
        """
        body: dict[str, Any] = {"ready": self.ready, **self.detail}
        if not self.ready or services is None:
            return False, body
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if time.monotonic() - self._checked_at >= CHECK_CACHE_SECONDS:
                self._checks = {"database": await _database(services), "storage": await _storage(services)}
                self._checked_at = time.monotonic()
        failures = [reason for reason in self._checks.values() if reason is not None]
        body.update({name: reason or "ok" for name, reason in self._checks.items()})
        if failures:
            body["ready"] = False
            body["reason"] = failures[0]
        return not failures, body


async def _database(services: Services) -> str | None:
    """None when the database answers ``SELECT 1`` in time, else why not."""
    try:
        async with asyncio.timeout(DATABASE_TIMEOUT_SECONDS):
            async with services.db.engine.connect() as conn:
                await conn.exec_driver_sql("SELECT 1")
    except TimeoutError:
        return f"the database did not answer within {DATABASE_TIMEOUT_SECONDS:g} s"
    except Exception as exc:  # noqa: BLE001 - any failure means not ready; the reason is shown
        known = as_cairn_error(exc)
        return known.message if known is not None else f"the database failed a probe ({type(exc).__name__})"
    return None


async def _storage(services: Services) -> str | None:
    """None when the data dir's volume takes writes (or nothing is stored there), else why not."""
    space = services.settings.storage_space
    if space is None:
        return None
    return await asyncio.to_thread(space.probe)
