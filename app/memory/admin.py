"""Memory administration: the owner's settings and bulk delete, retention and source purges.

Every delete goes by memory id and never reads memory text (the owner's bulk delete
included). Purges: retention (versions older than the workspace's 1–365 days), memories
citing a deleted document, and memories filed under or citing a deleted collection.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, delete, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from cairn.app.core.errors import NonRetainingWorkspace
from cairn.app.core.ids import utcnow
from cairn.app.core.models import AgentMemory, MemoryCitation, MemoryTerm, MemoryWrite, Workspace

MIN_RETENTION, MAX_RETENTION = 1, 365


async def set_settings(
    s: AsyncSession, *, workspace_id: str, enabled: bool | None, retention_days: int | None
) -> Workspace:
    """Owner settings: the memory switch and the retention (1–365 days, checked by
    :class:`app.memory.requests.MemorySettingsChange`); purges at once.

    Raises:
        Forbidden: ``NON_RETAINING_WORKSPACE``.
    """
    ws = await s.get(Workspace, workspace_id)
    if ws is None or not ws.retaining:
        raise NonRetainingWorkspace("this workspace is non-retaining: it keeps no memories")
    if enabled is not None:
        ws.memory_enabled = enabled
    if retention_days is not None:
        ws.memory_retention_days = retention_days
    s.add(ws)
    await s.flush()
    await purge_expired(s, workspace_id=workspace_id)
    return ws


async def _delete_memories(s: AsyncSession, where: ColumnElement[bool]) -> int:
    """Delete the memories matching ``where``, their citations and analysed terms, by id (text never read)."""
    ids = list((await s.execute(select(col(AgentMemory.id)).where(where))).scalars())
    for i in range(0, len(ids), 500):
        chunk = ids[i : i + 500]
        await s.execute(delete(MemoryCitation).where(col(MemoryCitation.memory_id).in_(chunk)))
        await s.execute(delete(MemoryTerm).where(col(MemoryTerm.memory_id).in_(chunk)))
        await s.execute(delete(AgentMemory).where(col(AgentMemory.id).in_(chunk)))
    return len(ids)


async def purge_expired(s: AsyncSession, *, workspace_id: str | None = None, now: datetime | None = None) -> int:
    """Delete memory versions older than their workspace's retention, and stale ledger rows.

    Args:
        workspace_id: One workspace, or None for all.

    Returns:
        Number of memory versions deleted.
    """
    now = now or utcnow()
    q = select(col(Workspace.id), col(Workspace.memory_retention_days))
    if workspace_id is not None:
        q = q.where(col(Workspace.id) == workspace_id)
    total = 0
    for ws_id, days in (await s.execute(q)).all():
        cutoff = now - timedelta(days=days)
        total += await _delete_memories(
            s, (col(AgentMemory.workspace_id) == ws_id) & (col(AgentMemory.recorded_at) < cutoff)
        )
    await s.execute(delete(MemoryWrite).where(col(MemoryWrite.at) < now - timedelta(hours=1)))
    return total


async def purge_for_documents(s: AsyncSession, *, document_ids: Sequence[str]) -> int:
    """Delete every memory (all versions of its row) citing one of ``document_ids``."""
    cited = select(col(MemoryCitation.memory_id)).where(col(MemoryCitation.document_id).in_(list(document_ids)))
    return await _delete_memories(s, col(AgentMemory.id).in_(cited))


async def purge_for_collection(s: AsyncSession, *, collection_id: str) -> int:
    """Delete every memory filed under, or citing a passage of, ``collection_id``."""
    cited = select(col(MemoryCitation.memory_id)).where(col(MemoryCitation.collection_id) == collection_id)
    return await _delete_memories(s, col(AgentMemory.id).in_(cited) | (col(AgentMemory.collection_id) == collection_id))


async def delete_all(s: AsyncSession, *, workspace_id: str) -> int:
    """The owner's bulk delete: every memory of the workspace, by id, without reading text."""
    return await _delete_memories(s, col(AgentMemory.workspace_id) == workspace_id)
