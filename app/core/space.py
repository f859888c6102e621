"""Free space of the data dir's volume: the start-up check, the guard before index files grow,
and the write probe ``/readyz`` runs.

Why a minimum and not just the write errors: the embedded Qdrant engine maps its segment files
into memory and grows them by writing through the mapping; on a full volume that is a
``SIGBUS`` that ends the process with no message (issue 32), not an ``ENOSPC`` it could report.
So a server refuses to start below ``CAIRN_MIN_FREE_MB`` (:meth:`StorageSpace.shortfall`), and
every index write checks the same minimum first (:meth:`StorageSpace.ensure`, 503
``STORAGE_FULL``). Everything else (SQLite, Whoosh, the state files) reports a full volume as an
error, which :mod:`app.core.outages` turns into the same code.
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from cairn.app.core.errors import storage_full
from cairn.app.core.outages import SPACE_ERRNOS

PROBE_BYTES = 64 * 1024
"""Size of the readiness write probe: a few Whoosh postings blocks; written, fsynced, deleted."""

MIB = 1024 * 1024


@dataclass(frozen=True)
class StorageSpace:
    """The volume holding a data dir, against a minimum of free space.

    Attributes:
        path: The data dir (created if missing); its volume is the one measured.
        min_free_bytes: Writes that grow index files are refused below this (0: never).
    """

    path: Path
    min_free_bytes: int

    def free_bytes(self) -> int:
        """Bytes an unprivileged writer may still use on the volume (``statvfs``: ``f_bavail × f_frsize``).

        Raises:
            OSError: the data dir cannot be created or measured.
        """
        self.path.mkdir(parents=True, exist_ok=True)
        st = os.statvfs(self.path)
        return st.f_bavail * st.f_frsize

    def shortfall(self) -> str | None:
        """None when at least the minimum is free, else one line saying how much is free and
        what to do (the start-up refusal and ``/readyz``'s reason)."""
        free = self.free_bytes()
        if free >= self.min_free_bytes:
            return None
        return (
            f"only {free / MIB:.1f} MiB free on the volume of {self.path}, below CAIRN_MIN_FREE_MB="
            f"{self.min_free_bytes / MIB:.0f}: free space there (or lower CAIRN_MIN_FREE_MB)"
        )

    def ensure(self, what: str) -> None:
        """Refuse a write that would grow files (an index batch) when below the minimum.

        Args:
            what: What was about to be written, for the message (e.g. ``"vector index"``).

        Raises:
            StorageFull: 503 ``STORAGE_FULL`` (:func:`app.core.errors.storage_full`).
        """
        if self.min_free_bytes and self.free_bytes() < self.min_free_bytes:
            raise storage_full(f"{what}: free space is below CAIRN_MIN_FREE_MB={self.min_free_bytes // MIB}")

    def probe(self) -> str | None:
        """``/readyz``'s storage check: None when the minimum is free and a :data:`PROBE_BYTES`
        file can be written, fsynced and deleted in the data dir; else the reason (one line).
        A write that failed for space is thus reported until writing works again."""
        try:
            if (short := self.shortfall()) is not None:
                return short
            probe = self.path / f".cairn-write-probe-{secrets.token_hex(4)}"
            try:
                with open(probe, "wb") as f:
                    f.write(b"\0" * PROBE_BYTES)
                    f.flush()
                    os.fsync(f.fileno())
            finally:
                probe.unlink(missing_ok=True)
        except OSError as exc:
            if exc.errno in SPACE_ERRNOS:
                return f"a {PROBE_BYTES // 1024} KiB write to {self.path} failed: {exc.strerror}"
            return f"the data dir {self.path} is not writable: {exc.strerror or exc}"
        return None
