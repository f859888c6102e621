"""Storage and database outages as coded 503 errors: ``STORAGE_FULL``, ``DATABASE_UNAVAILABLE``.

A full disk or a stopped database is not the client's fault and not a bug: every channel
answers it with HTTP 503, ``Retry-After`` and a code saying what is wrong, never 400/500
``INTERNAL_SERVER_ERROR``. :func:`recognise` finds such a failure anywhere in an exception's
chain (``__cause__``/``__context__``); :func:`app.core.errors.outage_of` makes it the coded
error, and is the one rule the mapper (:func:`app.core.errors.to_response`) and the database
engine's hooks (:func:`app.core.db.make_engine`) apply:

- storage full (``STORAGE_FULL``): ``OSError`` ``ENOSPC``/``EDQUOT``/``EROFS`` from Whoosh,
  the replay or index-state files; SQLite's ``database or disk is full`` and ``attempt to write
  a readonly database``; the embedded Qdrant engine's ``No space left on device (os error 28)``
  (it reports Rust I/O errors as text); PostgreSQL's ``53100 disk_full``;
- database unavailable (``DATABASE_UNAVAILABLE``): the database cannot be reached or was lost
  mid-call — a refused/reset/timed-out connection while connecting (only when the database
  engine's hook says the error came from the database: a refused connection elsewhere, e.g. an
  embeddings endpoint, is not the database), SQLAlchemy's pool timeout, a connection SQLAlchemy
  marks as a disconnect, PostgreSQL's connection-exception (``08…``) and operator-intervention
  (``57P…``: shutdown, cannot connect now) states, SQLite's ``unable to open database file``
  and ``disk I/O error``.
"""

from __future__ import annotations

import errno
import sqlite3
from collections.abc import Iterator
from typing import Literal

Outage = tuple[Literal["storage", "database"], str]
"""What :func:`recognise` found: the kind (``storage``: ``STORAGE_FULL``; ``database``:
``DATABASE_UNAVAILABLE``) and what failed, in words fit for a client (no host, port or path)."""

SPACE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS})
"""``OSError`` numbers that mean "this volume takes no more writes"."""

_SPACE_TEXTS = (
    "no space left on device",  # ENOSPC as text (Rust's io::Error: "... (os error 28)")
    "disk quota exceeded",  # EDQUOT
    "read-only file system",  # EROFS
    "database or disk is full",  # SQLITE_FULL
    "attempt to write a readonly database",  # SQLITE_READONLY
)
_UNREACHABLE_TEXTS = ("unable to open database file", "disk i/o error")  # SQLITE_CANTOPEN, SQLITE_IOERR


def chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc``, then its causes and contexts (and a SQLAlchemy error's driver error ``orig``), each once."""
    seen: set[int] = set()
    pending: list[BaseException | None] = [exc]
    while pending:
        e = pending.pop(0)
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        yield e
        orig = getattr(e, "orig", None)
        pending.extend([orig if isinstance(orig, BaseException) else None, e.__cause__, e.__context__])


def recognise(exc: BaseException, *, from_database: bool = False, disconnect: bool = False) -> Outage | None:
    """The outage ``exc`` stands for, or None when it is no outage (module doc).

    Args:
        exc: Any exception.
        from_database: The error was raised by the database engine (connecting or executing):
            then plain connection errors (refused, reset, timed out, name not resolved) mean
            the database is unavailable.
        disconnect: SQLAlchemy's verdict that the connection is gone (``is_disconnect``).

    Returns:
        ``(kind, detail)`` (:data:`Outage`; storage is checked first along the whole chain, as
        a full disk also breaks the database), or None. The detail names the kind of failure,
        never a host, port or path (those stay in the server log).
    """
    errors = list(chain(exc))
    for e in errors:
        if isinstance(e, OSError) and e.errno in SPACE_ERRNOS:
            return ("storage", (e.strerror or errno.errorcode.get(e.errno or 0, "")).lower())
        text = str(e).lower()
        if getattr(e, "sqlstate", None) == "53100" or getattr(e, "pgcode", None) == "53100":
            return ("storage", "the database server's disk is full")
        if (
            isinstance(e, sqlite3.Error | OSError)
            or type(e).__module__.startswith(("sqlalchemy", "qdrant"))
            or ("os error" in text)
        ):
            for needle in _SPACE_TEXTS:
                if needle in text:
                    return ("storage", needle)
    for e in errors:
        state = str(getattr(e, "sqlstate", None) or getattr(e, "pgcode", None) or "")
        if state.startswith(("08", "57P")):
            return ("database", f"the server ended or refused the connection (SQLSTATE {state})")
        if isinstance(e, sqlite3.Error) and any(needle in str(e).lower() for needle in _UNREACHABLE_TEXTS):
            return ("database", f"SQLite: {str(e).lower()}")
        if type(e).__module__.startswith("sqlalchemy") and type(e).__name__ == "TimeoutError":
            return ("database", "no pooled connection became free in time")
        if type(e).__module__.startswith("asyncpg") and type(e).__name__ in _ASYNCPG_LOST:
            return ("database", "the connection was lost")
    if disconnect or getattr(exc, "connection_invalidated", False):
        return ("database", "the connection was lost")
    if from_database:
        for e in errors:
            if isinstance(e, ConnectionError | TimeoutError) or (isinstance(e, OSError) and e.errno in _NETWORK_ERRNOS):
                return ("database", "cannot connect (refused, reset or timed out)")
    return None


_ASYNCPG_LOST = frozenset(
    {"ConnectionDoesNotExistError", "CannotConnectNowError", "ConnectionFailureError", "ClientCannotConnectError"}
)
_NETWORK_ERRNOS = frozenset(
    {errno.ECONNREFUSED, errno.ECONNRESET, errno.EHOSTUNREACH, errno.ENETUNREACH, errno.ETIMEDOUT, errno.EPIPE}
)
