"""Memory services: one function per operation, ``fn(services, principal, request)``.

Each takes a request of :mod:`app.memory.requests` (validated when it was built), opens and
commits its own session and returns domain objects (:mod:`app.memory.views`); the rules live in :mod:`app.memory.service` and :mod:`app.memory.admin`. Remember and recall
embed with ``services.indexes.embedder`` (None: no vector leg).

``services`` is the process's :class:`app.context.Services` (not imported: ``app.context``
imports this package).
"""

from __future__ import annotations

from dataclasses import dataclass

from cairn.app.core.errors import NotFound
from cairn.app.core.models import Workspace
from cairn.app.governance import Principal, ServicesPort
from cairn.app.memory import admin, service
from cairn.app.memory.requests import ForgetRequest, MemoryListQuery, MemoryNote, MemorySettingsChange, RecallQuery
from cairn.app.memory.views import ListOutcome, RecallOutcome, RememberOutcome


@dataclass(frozen=True)
class MemorySettingsView:
    """The memory switch, the retention in days, and whether the workspace retains history."""

    enabled: bool
    retention_days: int
    retaining: bool

    @classmethod
    def of(cls, ws: Workspace) -> MemorySettingsView:
        """From a workspace row."""
        return cls(ws.memory_enabled, ws.memory_retention_days, ws.retaining)


async def recall_memories(services: ServicesPort, principal: Principal, request: RecallQuery) -> RecallOutcome:
    """Ranked memories of the caller. Raises: see :func:`app.memory.service.recall`."""
    async with services.db.session() as s:
        return await service.recall(
            s,
            principal=principal,
            query=request.query,
            namespace=request.namespace,
            collection_id=request.collection_id,
            as_of=request.as_of,
            limit=request.limit,
            embedder=services.indexes.embedder,
        )


async def list_own_memories(services: ServicesPort, principal: Principal, request: MemoryListQuery) -> ListOutcome:
    """A page of the caller's memories. Raises: see :func:`app.memory.service.list_memories`."""
    async with services.db.session() as s:
        return await service.list_memories(
            s,
            principal=principal,
            namespace=request.namespace,
            key=request.key,
            collection_id=request.collection_id,
            as_of=request.as_of,
            limit=request.limit,
            cursor=request.cursor,
            all_versions=request.all_versions,
        )


async def memory_settings(services: ServicesPort, principal: Principal) -> MemorySettingsView:
    """The memory settings of the caller's workspace."""
    async with services.db.session() as s:
        ws = await s.get(Workspace, principal.workspace_id)
        if ws is None:  # the caller was authenticated in it: deleted meanwhile
            raise NotFound(f"workspace {principal.workspace_id!r} not found")
        return MemorySettingsView.of(ws)


async def remember_memory(services: ServicesPort, principal: Principal, request: MemoryNote) -> RememberOutcome:
    """Store a note (PII masked first). Raises: see :func:`app.memory.service.remember`."""
    async with services.db.session() as s:
        return await service.remember(
            s,
            principal=principal,
            namespace=request.namespace,
            text=request.text,
            key=request.key,
            collection_id=request.collection_id,
            citations=list(request.citations),
            embedder=services.indexes.embedder,
        )


async def forget_memory(services: ServicesPort, principal: Principal, request: ForgetRequest) -> int:
    """Delete a memory and every version of its key (or one version: ``only_version``); returns the versions deleted.

    Raises:
        NotFound: nothing of the caller's matches. Forbidden: the gate.
    """
    async with services.db.session() as s:
        return await service.forget(
            s,
            principal=principal,
            memory_id=request.memory_id,
            namespace=request.namespace,
            key=request.key,
            only_version=request.only_version,
        )


async def change_memory_settings(
    services: ServicesPort, principal: Principal, request: MemorySettingsChange
) -> MemorySettingsView:
    """Set the switch and/or retention of the caller's workspace (purges at once).

    Raises:
        BadInput: retention outside 1–365. Forbidden: ``NON_RETAINING_WORKSPACE``.
    """
    async with services.db.session() as s:
        ws = await admin.set_settings(
            s, workspace_id=principal.workspace_id, enabled=request.enabled, retention_days=request.retention_days
        )
        return MemorySettingsView.of(ws)


async def delete_all_memories(services: ServicesPort, principal: Principal) -> int:
    """Delete every memory of the caller's workspace without reading any; returns how many."""
    async with services.db.session() as s:
        return await admin.delete_all(s, workspace_id=principal.workspace_id)
