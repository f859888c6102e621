"""Running an approved template on the business database: bound parameters, read-only, timed, capped.

The business database (``CAIRN_TEMPLATES_DATABASE_URL``) is not Cairn's own database: it holds
the data templates read (PostgreSQL in production; a SQLite Northwind for the demo). One
:class:`QueryDatabase` per process holds its engine.

Every run:

* binds the checked values with SQLAlchemy ``text().bindparams`` — a list parameter as an
  expanding ``IN :name`` list; the SQL text itself never contains a value;
* is read-only: PostgreSQL ``SET TRANSACTION READ ONLY`` as the transaction's first statement;
  SQLite ``PRAGMA query_only = ON`` on every connection; the transaction is rolled back after;
* has a deadline: PostgreSQL ``SET LOCAL statement_timeout`` (the server cancels, SQLSTATE
  57014); SQLite a progress handler called every :data:`PROGRESS_STEPS` virtual-machine
  instructions that interrupts the statement once the deadline passed. Either way the run
  fails with 504 ``QUERY_TIMEOUT`` naming the limit;
* fetches through a server-side cursor at most ``max_rows + 1`` rows; when there are more,
  the first ``max_rows`` are returned with ``truncated`` and a ``QUERY_ROW_CAP_REACHED`` notice.

Result values become JSON: dates/times ISO text, ``Decimal`` → float, bytes → hex. Column
types are read from the values (``integer``, ``float``, ``string``, ``boolean``, ``date``,
``datetime``, ``bytes``, ``null`` when every value is null). SQLite has no date type: a date
column of a SQLite database is ``string``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from datetime import time as dtime
from decimal import Decimal
from typing import Any
from urllib.parse import quote

from sqlalchemy import bindparam, event, text
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from cairn.app.templates.approval import DIALECTS
from cairn.app.templates.errors import QueryFailed, QueryTimeout, TemplatesDatabaseMissing, TemplatesDatabaseUnavailable
from cairn.app.templates.params import ParameterSpec

log = logging.getLogger("cairn.templates")

PROGRESS_STEPS = 1_000
"""SQLite virtual-machine instructions between two deadline checks (~10–50 µs)."""


@dataclass(frozen=True)
class ResultColumn:
    """A result column: its name and the type read from its values."""

    name: str
    type: str


@dataclass(frozen=True)
class Notice:
    """Something the caller must know about a result (e.g. ``QUERY_ROW_CAP_REACHED``)."""

    code: str
    message: str


@dataclass
class QueryResult:
    """The rows of one run.

    Attributes:
        columns: In SELECT order.
        rows: One JSON object per row (column name → JSON value), at most ``row_cap``.
        truncated: True when the statement had more than ``row_cap`` rows.
        row_cap: The cap in force for this run.
        notices: Coded notices (``QUERY_ROW_CAP_REACHED``, ``DUPLICATE_COLUMN_RENAMED``).
        elapsed_ms: Wall time of the run on the business database.
    """

    columns: list[ResultColumn]
    rows: list[dict[str, Any]]
    truncated: bool
    row_cap: int
    elapsed_ms: float
    notices: list[Notice] = field(default_factory=list)


def async_url(url: str) -> str:
    """``sqlite:///…`` / ``postgresql://…`` → the async driver URL (aiosqlite / asyncpg).

    Raises:
        ValueError: neither SQLite nor PostgreSQL.
    """
    for plain, driver in (
        ("sqlite://", "sqlite+aiosqlite://"),
        ("postgresql://", "postgresql+asyncpg://"),
        ("postgres://", "postgresql+asyncpg://"),
    ):
        if url.startswith(plain):
            return driver + url[len(plain) :]
    if url.startswith(("sqlite+aiosqlite://", "postgresql+asyncpg://")):
        return url
    raise ValueError("the templates database must be PostgreSQL (postgresql://…) or SQLite (sqlite:///path)")


def read_only_sqlite_url(url: str) -> str:
    """``sqlite+aiosqlite:///path`` → the same file opened read-only (``file:…?mode=ro``, SQLite URI).

    A missing file is then an error (SQLite would otherwise create an empty database), and
    no statement can write. URLs that already carry a query string are left as they are.
    """
    prefix = "sqlite+aiosqlite:///"
    path = url[len(prefix) :] if url.startswith(prefix) else ""
    if not path or "?" in path or path == ":memory:" or path.startswith("file:"):
        return url
    return f"{prefix}file:{quote(path)}?mode=ro&uri=true"


def _sqlstate(exc: BaseException | None) -> str | None:
    seen = 0
    while exc is not None and seen < 6:
        for candidate in (exc, getattr(exc, "orig", None)):
            state = getattr(candidate, "sqlstate", None) or getattr(candidate, "pgcode", None)
            if isinstance(state, str):
                return state
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return None


def _json(value: Any) -> tuple[Any, str]:
    if value is None:
        return None, "null"
    if isinstance(value, bool):
        return value, "boolean"
    if isinstance(value, int):
        return value, "integer"
    if isinstance(value, float | Decimal):
        return float(value), "float"
    if isinstance(value, str):
        return value, "string"
    if isinstance(value, datetime):
        return value.isoformat(), "datetime"
    if isinstance(value, date):
        return value.isoformat(), "date"
    if isinstance(value, dtime):
        return value.isoformat(), "string"
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex(), "bytes"
    return str(value), "string"


def _bind_value(value: Any, dialect: str) -> Any:
    if dialect == "sqlite" and isinstance(value, date):
        return value.isoformat()  # SQLite keeps dates as ISO text
    if isinstance(value, list):
        return [_bind_value(v, dialect) for v in value]
    return value


class QueryDatabase:
    """The business database templates run on.

    Args:
        url: ``postgresql://…``, ``sqlite:///path`` or their async forms.

    Raises:
        ValueError: another kind of database.
    """

    def __init__(self, url: str) -> None:
        self.url = async_url(url)
        self.engine: AsyncEngine = self._make_engine(self.url)

    @staticmethod
    def _make_engine(url: str) -> AsyncEngine:
        if url.startswith("sqlite"):
            engine = create_async_engine(read_only_sqlite_url(url), connect_args={"timeout": 5})

            @event.listens_for(engine.sync_engine, "connect")
            def _read_only(dbapi_conn: Any, _record: Any) -> None:  # pragma: no cover - driver hook
                cur = dbapi_conn.cursor()
                cur.execute("PRAGMA query_only = ON")
                cur.close()

            return engine
        return create_async_engine(url, pool_size=5, max_overflow=5, pool_pre_ping=True)

    @property
    def dialect(self) -> str:
        """``sqlite`` or ``postgres`` (sqlglot's names, used by the approval check)."""
        return DIALECTS[self.engine.dialect.name]

    async def run(
        self,
        sql: str,
        specs: tuple[ParameterSpec, ...],
        values: dict[str, Any],
        *,
        timeout_seconds: float,
        max_rows: int,
    ) -> QueryResult:
        """Run ``sql`` with ``values`` bound (see the module doc for the guarantees).

        Args:
            sql: The approved SQL (named ``:param`` placeholders).
            specs: The declarations (lists are bound as expanding ``IN`` lists).
            values: Checked values from :func:`app.templates.params.bind_values`.
            timeout_seconds: Deadline of the whole run.
            max_rows: Row cap (≥ 1).

        Raises:
            QueryTimeout: the deadline passed (504).
            QueryFailed: the database refused the statement (500; details only in the log).
        """
        stmt = text(sql).bindparams(*(bindparam(s.name, expanding=True) for s in specs if s.type == "list"))
        bound = {k: _bind_value(v, self.dialect) for k, v in values.items()}
        started = time.perf_counter()
        deadline = time.monotonic() + timeout_seconds
        fired = {"timeout": False}

        def _progress() -> int:
            if time.monotonic() > deadline:
                fired["timeout"] = True
                return 1
            return 0

        connected = False
        try:
            async with self.engine.connect() as conn:
                connected = True
                raw = await conn.get_raw_connection()
                try:
                    if self.dialect == "sqlite":
                        # driver_connection is declared Optional (None once invalidated); just opened here
                        await raw.driver_connection.set_progress_handler(_progress, PROGRESS_STEPS)  # type: ignore[union-attr]
                    else:
                        await conn.execute(text("SET TRANSACTION READ ONLY"))
                        ms = max(1, int(timeout_seconds * 1000))
                        await conn.execute(text(f"SET LOCAL statement_timeout = {ms}"))
                    result = await conn.stream(stmt, bound)
                    keys = list(result.keys())
                    fetched = await result.fetchmany(max_rows + 1)
                    await result.close()
                finally:
                    if self.dialect == "sqlite":
                        await raw.driver_connection.set_progress_handler(None, PROGRESS_STEPS)  # type: ignore[union-attr]
                    await conn.rollback()
        except Exception as exc:
            if fired["timeout"] or _sqlstate(exc) == "57014":
                raise QueryTimeout(
                    f"the query ran longer than the {timeout_seconds:g} s timeout and was stopped",
                    limit=timeout_seconds,
                    field="timeoutSeconds",
                ) from None
            if not connected:
                log.warning("templates database unavailable: %s", exc.__class__.__name__, exc_info=exc)
                raise TemplatesDatabaseUnavailable(
                    f"the business database of query templates cannot be opened ({type(exc).__name__}); "
                    "check CAIRN_TEMPLATES_DATABASE_URL"
                ) from None
            log.warning("template statement failed: %s", exc.__class__.__name__, exc_info=exc)
            raise QueryFailed(
                f"the template's statement failed on the business database ({type(exc).__name__}"
                f"{', SQLSTATE ' + s if (s := _sqlstate(exc)) else ''}); an admin must fix the template",
            ) from None
        elapsed = round((time.perf_counter() - started) * 1000, 2)
        return _shape(keys, fetched, max_rows, elapsed)


def _shape(keys: list[str], fetched: Sequence[Any], max_rows: int, elapsed_ms: float) -> QueryResult:
    notices: list[Notice] = []
    names: list[str] = []
    for key in keys:
        name, n = key, 1
        while name in names:
            n += 1
            name = f"{key}_{n}"
        if name != key:
            notices.append(
                Notice("DUPLICATE_COLUMN_RENAMED", f"two result columns are called {key!r}; the later is {name!r}")
            )
        names.append(name)
    truncated = len(fetched) > max_rows
    rows: list[dict[str, Any]] = []
    types: list[str] = ["null"] * len(names)
    for row in fetched[:max_rows]:
        out = {}
        for i, value in enumerate(row):
            v, t = _json(value)
            if types[i] == "null" or (types[i] == "integer" and t == "float"):
                types[i] = t
            out[names[i]] = v
        rows.append(out)
    if truncated:
        notices.append(
            Notice(
                "QUERY_ROW_CAP_REACHED",
                f"the query has more than {max_rows:,} rows; only the first {max_rows:,} are returned "
                "(narrow the parameters, or ask an admin for a template that aggregates)",
            )
        )
    return QueryResult(
        columns=[ResultColumn(n, t) for n, t in zip(names, types)],
        rows=rows,
        truncated=truncated,
        row_cap=max_rows,
        elapsed_ms=elapsed_ms,
        notices=notices,
    )


def toon_rows(rows: list[dict[str, Any]]) -> str:
    """Rows as TOON (Token-Oriented Object Notation) with the ``toon-format`` package:
    ``toon_format.encode({"rows": rows})``; ``toon_format.decode`` gives them back."""
    from toon_format import encode

    return encode({"rows": rows})


class TemplatesDatabase:
    """The :class:`app.context.Services` member for the business database: holds the configured
    URL and opens one :class:`QueryDatabase` (its engine) on first use, so start-up connects to
    nothing and a server without templates never needs the URL.

    Args:
        url: ``CAIRN_TEMPLATES_DATABASE_URL`` (None or empty: not configured).
    """

    def __init__(self, url: str | None) -> None:
        self.url = url or None
        self._database: QueryDatabase | None = None

    def get(self) -> QueryDatabase:
        """The business database, opened on the first call.

        Raises:
            TemplatesDatabaseMissing: no URL configured (503).
            ValueError: the URL names another kind of database.
        """
        if self._database is None:
            if self.url is None:
                raise TemplatesDatabaseMissing(
                    "no business database is configured for query templates: set CAIRN_TEMPLATES_DATABASE_URL"
                )
            self._database = QueryDatabase(self.url)
        return self._database

    async def close(self) -> None:
        """Dispose the business database's connections, if it was opened (it may open again)."""
        if self._database is not None:
            await self._database.engine.dispose()
            self._database = None
