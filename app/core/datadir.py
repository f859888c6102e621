"""The embedded data dir: one process at a time, and "is there a Cairn store here?".

The embedded vector engines allow one process per storage path and fail deep inside when a
second one opens it (qdrant-edge: ``Can't init WAL: WouldBlock``; qdrant-client local mode:
"already accessed by another instance"), after migrations have run and a model has loaded.
So every process that opens the indexes (``cairn serve``, ``ingest``, ``reindex``, ``demo``)
first takes Cairn's own lock: ``<data_dir>/cairn.lock``, an advisory ``fcntl.flock``
(exclusive, non-blocking) on a file that holds the owner's pid. The kernel drops the lock when
the process exits, so a crash never leaves a stale lock (the file stays, with the last pid;
only the flock counts). The lock is re-entrant within a process (``cairn serve`` holds it
while the app's start-up opens the indexes again).

``fcntl.flock`` directly, not a lock library: the libraries at hand (filelock, portalocker)
do not tell the refused process *who* holds the lock, which is the message's point.
"""

from __future__ import annotations

import errno
import fcntl
import os
import threading
from pathlib import Path

from cairn.app.core.config import Settings

LOCK_NAME = "cairn.lock"

_held: dict[Path, list[int]] = {}  # resolved data dir -> [fd, reference count]
_guard = threading.Lock()


class DataDirInUse(RuntimeError):
    """Another process holds the data dir (its pid when known).

    Attributes:
        path: The data dir.
        pid: The holder's pid, or None when unknown (e.g. a non-Cairn process holds the
            embedded engine's own lock).
        message: One line for the operator.
    """

    def __init__(self, path: Path, pid: int | None) -> None:
        self.path = Path(path)
        self.pid = pid
        who = f"process {pid}" if pid else "another process"
        self._what = f"the data dir {self.path} is in use by {who} (cairn serve?)"
        # what else to do depends on the refused command: the CLI adds it (app.cli.common.DATA_DIR_ALTERNATIVES)
        self.message = self.with_hint("stop it first")
        super().__init__(self.message)

    def with_hint(self, hint: str) -> str:
        """The one line with another hint after the holder (what the refused command can do)."""
        return f"{self._what}; {hint}"


def holder_pid(data_dir: Path) -> int | None:
    """The pid written in ``data_dir/cairn.lock`` (the last holder; None if absent/unreadable)."""
    try:
        text = (Path(data_dir) / LOCK_NAME).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None


class DataDirLock:
    """A held lock on one data dir; :meth:`release` (or ``with``) gives it back.

    Args:
        data_dir: The embedded data dir (created if missing).

    Raises:
        DataDirInUse: another process holds it.
    """

    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir)
        self._key = self.path.resolve()
        self._released = False
        with _guard:
            entry = _held.get(self._key)
            if entry is not None:
                entry[1] += 1
                return
            self.path.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                os.close(fd)
                if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    raise DataDirInUse(self.path, holder_pid(self.path)) from None
                raise
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode("ascii"))
            _held[self._key] = [fd, 1]

    def release(self) -> None:
        """Give the lock back (the last holder in this process unlocks the file). Idempotent."""
        with _guard:
            if self._released:
                return
            self._released = True
            entry = _held.get(self._key)
            if entry is None:
                return
            entry[1] -= 1
            if entry[1] == 0:
                del _held[self._key]
                fcntl.flock(entry[0], fcntl.LOCK_UN)
                os.close(entry[0])

    def __enter__(self) -> DataDirLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def store_exists(settings: Settings) -> bool:
    """Whether ``settings`` point at an existing Cairn store (without creating anything).

    Embedded SQLite: ``data_dir/cairn.db`` (or the file of a ``sqlite`` ``CAIRN_DATABASE_URL``)
    exists. A server database: it has Alembic's ``alembic_version`` table (connecting does not
    create a database).

    Args:
        settings: :class:`app.core.config.Settings`.
    """
    from sqlalchemy import inspect, make_url

    if not settings.database_url:
        return (Path(settings.data_dir) / "cairn.db").is_file()
    database_url = settings.database_url
    url = make_url(database_url)
    if url.get_backend_name() == "sqlite":  # connecting would create the file
        if not url.database:
            return False
        return url.database != ":memory:" and Path(url.database).is_file()
    import asyncio

    from sqlalchemy.ext.asyncio import create_async_engine

    async def check() -> bool:
        engine = create_async_engine(database_url)
        try:
            async with engine.connect() as conn:
                return await conn.run_sync(lambda c: inspect(c).has_table("alembic_version"))
        finally:
            await engine.dispose()

    return asyncio.run(check())


WORKERS_DIR = "workers"
"""Folder under the data dir holding each ``cairn serve --workers N`` process's own indexes."""

MAX_WORKER_SLOTS = 128
"""Slots :func:`claim_worker_dir` tries: more than ``--workers``' maximum (64), because uvicorn's
rolling restart (SIGHUP) and SIGTTIN start a process while the others still hold theirs."""


def claim_worker_dir(data_dir: Path, limit: int = MAX_WORKER_SLOTS) -> tuple[int, DataDirLock]:
    """Lock the first free worker slot of ``cairn serve --workers N`` for this process.

    Slot ``k`` (0 ≤ k < ``limit``) is the folder ``data_dir/workers/<k>``: that process's own
    Whoosh index, vector store and change-log cursor (``index_state.json``), each process's
    indexes following the one SQL store (:mod:`app.corpus.changes`). A process that exits frees
    its slot (the kernel drops the flock), so the process uvicorn starts in its place takes the
    same slot and its indexes, up to date but for what changed meanwhile. A process started
    while all N run (uvicorn's rolling restart on SIGHUP, or SIGTTIN) takes the next slot and
    builds its indexes there from the database before it serves.

    Args:
        data_dir: The data dir that ``cairn serve`` holds (:class:`DataDirLock`).
        limit: Slots tried (>= 1).

    Returns:
        ``(k, lock)``: the slot number and its held lock (kept for the process's life).

    Raises:
        ValueError: ``limit`` < 1.
        DataDirInUse: all ``limit`` slots are held.
        OSError: a slot's folder cannot be made (``workers`` is a file, no permission).
    """
    if limit < 1:
        raise ValueError(f"limit must be >= 1, got {limit}")
    root = Path(data_dir) / WORKERS_DIR
    for k in range(limit):
        try:
            return k, DataDirLock(root / str(k))
        except DataDirInUse:
            continue
    raise DataDirInUse(root, None)
