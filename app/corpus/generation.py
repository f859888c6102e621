"""Each workspace's corpus generation: a number that changes whenever its documents change.

A pack reads the rows of ~400 leg passages from SQL to apply the as-of rule (their document's
versions, deletions, spans); the same passages recur from pack to pack. A process may keep
those rows (:class:`app.packs.row_cache.PassageRowCache`) only while nothing they hold can
have changed, and with several workers on one database the writer may be another process.
So SQL keeps, per workspace, the count of committed transactions that changed its documents
(:class:`~app.core.models.CorpusGeneration`), and a reader keeps rows under the generation
it read *before* reading them.

Writers: :func:`app.corpus.documents.upsert_document` (a new version; an unchanged upsert
writes nothing) and :func:`app.corpus.documents.delete_document` call :func:`mark_changed`;
the number is raised once per transaction, as its last statement before ``COMMIT`` (a
``before_commit`` listener on SQLAlchemy's :class:`~sqlalchemy.orm.Session`). Raising it
last keeps the row lock (PostgreSQL) for the commit only: a transaction never waits for it
while holding other locks another transaction holding it needs, so it cannot deadlock with
the per-collection write locks. A transaction that rolls back raises nothing (its mark stays
on the session and raises the number at the session's next commit: a spurious change only
empties caches, a missed one would serve stale rows).

Why a reader that reads the generation first is never served stale rows: rows read after
reading generation g include every change committed before that read; a change committed
later makes the generation g + 1 before a later reader looks, and that reader starts an
empty cache. Rows read under g may be *newer* than g (a commit between the two reads); they
are then dropped at g + 1, never kept past it.
"""

from __future__ import annotations

from sqlalchemy import Table, event, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session
from sqlmodel import col

from cairn.app.core.db import Database
from cairn.app.core.models import CorpusGeneration

_CHANGED = "cairn.corpus.changed"
"""``Session.info`` key: the workspace ids this session's transaction changed documents of."""


def mark_changed(s: AsyncSession, workspace_id: str) -> None:
    """Raise ``workspace_id``'s generation by one when the session's transaction commits.

    Args:
        s: The session that wrote a document version or a deletion.
        workspace_id: The workspace whose documents changed.
    """
    s.sync_session.info.setdefault(_CHANGED, set()).add(workspace_id)


@event.listens_for(Session, "before_commit")
def _raise_generations(session: Session) -> None:
    """The ``before_commit`` listener: one upsert per workspace marked by :func:`mark_changed`."""
    if session.in_nested_transaction() or not session.info.get(_CHANGED):
        return  # a savepoint's release is not the commit
    session.flush()  # pending writes first: the generation row is the transaction's last write
    changed: set[str] = session.info.pop(_CHANGED)
    dialect = session.get_bind().dialect.name
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    # SQLAlchemy's declarative sets __table__ when the class is made; SQLModel's stubs do not declare it
    table: Table = CorpusGeneration.__table__  # type: ignore[attr-defined]
    for workspace_id in sorted(changed):  # one order for every writer
        session.execute(
            insert(table)
            .values(workspace_id=workspace_id, generation=1)
            .on_conflict_do_update(index_elements=["workspace_id"], set_={"generation": table.c.generation + 1})
        )


async def read_generation(db: Database, workspace_id: str) -> int:
    """The workspace's committed corpus generation (0 before its first document write)."""
    async with db.engine.connect() as conn:
        value = (
            await conn.execute(
                select(col(CorpusGeneration.generation)).where(col(CorpusGeneration.workspace_id) == workspace_id)
            )
        ).scalar_one_or_none()
    return int(value or 0)
