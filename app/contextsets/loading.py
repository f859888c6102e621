"""Context sets: read — a set with its entries (cached by version), and which set a read or
pack may use.

:func:`load_set` reads a set of the workspace with its entries as a
:class:`~app.contextsets.types.ContextSetView` (entries in kind order, then position);
:func:`load_set_cached` does so through the index cache, keyed by the set's version. A
credential bound to a set may name only that set (:func:`check_set_access`);
:func:`active_set` is the set a read or pack uses, refused when deactivated.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from cairn.app.contextsets.types import KINDS, ContextSetView, Entry
from cairn.app.core.errors import ContextSetInactive, ContextSetScopeRefused, NotFound
from cairn.app.core.models import ContextSet, ContextSetEntry
from cairn.app.core.text_rules import validate_identifier
from cairn.app.governance import Principal


def entry_of(e: ContextSetEntry) -> Entry:
    """An entry row as the domain :class:`~app.contextsets.types.Entry`."""
    return Entry(
        e.id,
        e.kind,
        e.position,
        e.key,
        e.value,
        tuple(e.aliases or ()),
        e.document_id,
        e.passage_id,
        e.trust,
        e.created_at,
        e.created_by,
    )


def _view(row: ContextSet, entries: list[ContextSetEntry]) -> ContextSetView:
    order = {k: i for i, k in enumerate(KINDS)}
    ents = sorted(entries, key=lambda e: (order.get(e.kind, 9), e.position, e.id))
    return ContextSetView(
        row.id,
        row.workspace_id,
        row.name,
        row.description,
        row.active,
        tuple(row.collection_ids or ()),
        tuple(row.document_ids or ()),
        row.version,
        row.created_at,
        row.created_by,
        row.updated_at,
        row.updated_by,
        tuple(entry_of(e) for e in ents),
    )


async def load_set(s: AsyncSession, workspace_id: str, set_id: str, field: str = "contextSetId") -> ContextSetView:
    """A set of the workspace with its entries.

    Raises:
        NotFound: no such set in the workspace (``field`` named).
    """
    validate_identifier(set_id, field)
    row = await s.get(ContextSet, set_id, populate_existing=True)
    if row is None or row.workspace_id != workspace_id:
        raise NotFound(f"context set {set_id!r} not found in this workspace", field=field)
    entries = list(
        (await s.execute(select(ContextSetEntry).where(col(ContextSetEntry.context_set_id) == set_id))).scalars()
    )
    return _view(row, entries)


async def load_set_cached(
    s: AsyncSession, workspace_id: str, set_id: str, field: str = "contextSetId"
) -> ContextSetView:
    """:func:`load_set` through the index cache: one primary-key read when the set's version is
    cached (entries change only with the version), the full read otherwise.

    Raises:
        NotFound: as :func:`load_set`.
    """
    from cairn.app.contextsets.matching import INDEXES

    validate_identifier(set_id, field)
    row = await s.get(ContextSet, set_id, populate_existing=True)
    if row is None or row.workspace_id != workspace_id:
        raise NotFound(f"context set {set_id!r} not found in this workspace", field=field)
    key = (set_id, row.version, "VIEW")
    cached = INDEXES.get(key)
    if isinstance(cached, ContextSetView) and cached.active == row.active and cached.name == row.name:
        return cached
    view = await load_set(s, workspace_id, set_id, field)
    INDEXES.put((set_id, view.version, "VIEW"), view)
    return view


def check_set_access(principal: Principal, set_id: str, field: str = "contextSetId") -> None:
    """A bound credential may name only its own set.

    Raises:
        ContextSetScopeRefused: another set.
    """
    if principal.context_set_id is not None and set_id != principal.context_set_id:
        raise ContextSetScopeRefused(
            f"this credential is bound to context set {principal.context_set_id}; {field} {set_id!r} is outside it",
            field=field,
        )


async def active_set(s: AsyncSession, principal: Principal, set_id: str | None, field: str) -> ContextSetView | None:
    """The set a read or pack uses: ``set_id``, else the credential's bound set, else None.

    Raises:
        ContextSetScopeRefused: a bound credential naming another set.
        NotFound: no such set. ContextSetInactive: the set is deactivated.
    """
    if set_id is None:
        set_id = principal.context_set_id
        field = "credential.contextSetId" if set_id else field
    if set_id is None:
        return None
    check_set_access(principal, set_id, field)
    view = await load_set(s, principal.workspace_id, set_id, field)
    if not view.active:
        raise ContextSetInactive(
            f"context set {set_id!r} ({view.name}) is deactivated; an editor can reactivate it", field=field
        )
    return view
