"""The search-index change log: what every worker's embedded indexes follow (issue 19).

SQL is the one truth; each worker keeps its own Whoosh and Qdrant Edge indexes in its own data
dir. The only SQL write that changes what those indexes hold is a new passage (passages are
immutable, keyed by a content hash; versions, deletions and valid times are resolved against
SQL at query time by :mod:`app.packs.resolve`). So :func:`record_passages` appends one
:class:`~app.core.models.IndexChange` row per new passage *in the writing transaction*, and on
PostgreSQL queues ``NOTIFY cairn_index_changes`` in it (delivered at commit).

Followers read the log by a cursor ``(txid, seq)`` (:class:`Cursor`):

- SQLite has one writer at a time, and a writing transaction holds the write lock from its first
  insert to its commit, so ``seq`` order is commit order; ``txid`` is 0 and the cursor is ``seq``.
- PostgreSQL sequences are not commit-ordered: transaction A takes seq 10, B takes 11 and commits
  first; a reader that saw 11 and moved its cursor past 10 would skip A's row forever. Each row
  therefore carries its transaction's ``txid_current()``, and :func:`read_changes` returns only
  rows with ``txid < txid_snapshot_xmin(txid_current_snapshot())`` — transactions older than
  every transaction still running, which can no longer add rows — in ``(txid, seq)`` order. Every
  row that will ever appear below that horizon is already visible, so the cursor never passes
  a row that commits later. A row becomes readable once every write transaction that started
  before its own has ended: lag is the poll interval plus the longest concurrent write
  transaction (an ingest batch: 200 documents per transaction). Read-only transactions hold
  no txid and do not delay anything.

The cursor lives in the data dir (``index_state.json``, written by atomic rename after the
indexes committed the batch). Applying a change is idempotent (a passage already present in an
index is skipped, not re-added), so a crash or ``kill -9`` between an index commit and the
cursor write re-reads a batch and loses nothing.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import and_, insert, or_, select, text
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from cairn.app.core.db import Database, insert_if_absent
from cairn.app.core.ids import utcnow
from cairn.app.core.models import IndexChange, Passage, SharedValue

CHANNEL = "cairn_index_changes"
"""PostgreSQL ``LISTEN``/``NOTIFY`` channel a write signals on."""

STATE_FILE = "index_state.json"
"""The cursor file in the data dir."""

NO_HORIZON = 2**62
"""The read horizon on SQLite (no transaction can be running with rows not yet visible)."""


@dataclass(frozen=True, order=True)
class Cursor:
    """How far one data dir's indexes have followed the log: every row ``<= (txid, seq)`` is applied."""

    txid: int = 0
    seq: int = 0


@dataclass(frozen=True)
class Change:
    """One log row joined with its passage, ready to index."""

    txid: int
    seq: int
    passage_id: str
    workspace_id: str
    collection_id: str
    document_id: str
    title: str
    text: str

    @property
    def cursor(self) -> Cursor:
        """The cursor just past this row."""
        return Cursor(self.txid, self.seq)


async def record_passages(s: AsyncSession, passage_ids: Sequence[str], title: str) -> None:
    """Append one change per new passage in the caller's transaction (and signal followers).

    Args:
        s: The session that inserted the passages; the caller commits.
        passage_ids: New passages, in document order.
        title: The document title at this write (embedded with the passage text).
    """
    if not passage_ids:
        return
    postgres = s.get_bind().dialect.name == "postgresql"
    txid = int((await s.execute(text("SELECT txid_current()"))).scalar_one()) if postgres else 0
    await s.execute(insert(IndexChange), [{"txid": txid, "passage_id": pid, "title": title} for pid in passage_ids])
    if postgres:
        await s.execute(text("SELECT pg_notify(:c, '')"), {"c": CHANNEL})


async def read_horizon(s: AsyncSession) -> int:
    """Rows with ``txid`` below this are final (see the module doc); ``NO_HORIZON`` on SQLite."""
    if s.get_bind().dialect.name != "postgresql":
        return NO_HORIZON
    return int((await s.execute(text("SELECT txid_snapshot_xmin(txid_current_snapshot())"))).scalar_one())


def _select_changes() -> Any:
    """The columns of a :class:`Change` (a log row joined to its passage)."""
    return select(
        col(IndexChange.txid),
        col(IndexChange.seq),
        col(IndexChange.passage_id),
        col(Passage.workspace_id),
        col(Passage.collection_id),
        col(Passage.document_id),
        col(IndexChange.title),
        col(Passage.text),
    ).join(Passage, col(Passage.id) == col(IndexChange.passage_id))


def _after(cursor: Cursor) -> Any:
    """Rows after ``cursor`` in ``(txid, seq)`` order."""
    return or_(
        col(IndexChange.txid) > cursor.txid,
        and_(col(IndexChange.txid) == cursor.txid, col(IndexChange.seq) > cursor.seq),
    )


async def read_changes(db: Database, after: Cursor, limit: int) -> list[Change]:
    """Up to ``limit`` changes after ``after`` in ``(txid, seq)`` order, below the read horizon."""
    async with db.session() as s:
        horizon = await read_horizon(s)
        rows = await s.execute(
            _select_changes()
            .where(_after(after), IndexChange.txid < horizon)
            .order_by(IndexChange.txid, IndexChange.seq)
            .limit(limit)
        )
        return [Change(*r) for r in rows.all()]


async def count_after(db: Database, after: Cursor) -> int:
    """Changes after ``after`` (including those not yet below the horizon)."""
    from sqlalchemy import func

    async with db.session() as s:
        n = await s.execute(select(func.count()).where(_after(after)))
        return int(n.scalar_one())


async def changes_for(db: Database, passage_ids: Sequence[str]) -> list[Change]:
    """The log rows of the given passages (a writer indexes its own write at once with these)."""
    if not passage_ids:
        return []
    async with db.session() as s:
        rows = await s.execute(
            _select_changes()
            .where(IndexChange.passage_id.in_(list(passage_ids)))  # type: ignore[attr-defined]
            .order_by(IndexChange.txid, IndexChange.seq)
        )
        return [Change(*r) for r in rows.all()]


async def shared_value(db: Database, name: str) -> str:
    """The value ``name`` every worker of this database shares, made (random, 256 bits) on first use.

    Insert-if-absent then read: two workers racing both read the one row that won.
    """
    async with db.session() as s:
        values = {"name": name, "value": secrets.token_urlsafe(32), "created_at": utcnow()}
        await s.execute(insert_if_absent(s, SharedValue, ["name"]), values)
    async with db.session() as s:
        return str((await s.execute(select(col(SharedValue.value)).where(col(SharedValue.name) == name))).scalar_one())


@dataclass(frozen=True)
class IndexState:
    """What ``index_state.json`` holds: the database followed, the legs kept, and the cursor."""

    database_id: str
    legs: tuple[str, ...]
    cursor: Cursor


def load_state(data_dir: Path) -> IndexState | None:
    """The data dir's index state, or None (absent or unreadable: follow from the start)."""
    try:
        raw = json.loads((Path(data_dir) / STATE_FILE).read_text(encoding="utf-8"))
        return IndexState(str(raw["databaseId"]), tuple(raw["legs"]), Cursor(int(raw["txid"]), int(raw["seq"])))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def save_state(data_dir: Path, state: IndexState) -> None:
    """Write the index state atomically (temp file, fsync, rename, fsync of the folder)."""
    folder = Path(data_dir)
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".{STATE_FILE}.tmp"
    body = {
        "databaseId": state.database_id,
        "legs": list(state.legs),
        "txid": state.cursor.txid,
        "seq": state.cursor.seq,
    }
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(body, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, folder / STATE_FILE)
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def clear_state(data_dir: Path) -> None:
    """Forget the cursor (the next catch-up reads the log from the start)."""
    (Path(data_dir) / STATE_FILE).unlink(missing_ok=True)
