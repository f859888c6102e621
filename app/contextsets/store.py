"""Context sets: create, change (versioned), and the recorded versions.

Writes are for members holding ``document:write`` (editors and up; the registry says so).
Every change bumps ``ContextSet.version`` and writes one :class:`ContextSetVersion` row
(who, when, what changed, the whole set after the change), under a per-set lock so two
concurrent editors get consecutive versions, never a lost write. The sections an update gives
replace those sections whole (:mod:`app.contextsets.entries`); every write first passes the
scope checks (:mod:`app.contextsets.checks`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from cairn.app.contextsets.checks import check_refs
from cairn.app.contextsets.entries import replace_entries
from cairn.app.contextsets.errors import ContextSetLimit, ContextSetNameTaken
from cairn.app.contextsets.loading import check_set_access, load_set
from cairn.app.contextsets.types import (
    MAX_SETS_PER_WORKSPACE,
    ContextSetView,
    ContextSetWrite,
    VersionView,
    validate_write,
)
from cairn.app.core.db import serialize
from cairn.app.core.ids import new_id, utcnow
from cairn.app.core.models import ContextSet, ContextSetVersion, Member
from cairn.app.core.text_rules import validate_identifier
from cairn.app.governance import DatabasePort, Principal


def snapshot(view: ContextSetView) -> dict[str, Any]:
    """The set as plain JSON (GraphQL field names): what a version row stores."""
    return {
        "name": view.name,
        "description": view.description,
        "active": view.active,
        "scope": {"collectionIds": list(view.collection_ids), "documentIds": list(view.document_ids)},
        "verifiedAnswers": [
            {"id": e.id, "question": e.key, "answer": e.value, "documentId": e.document_id, "passageId": e.passage_id}
            for e in view.of("VERIFIED_ANSWER")
        ],
        "definitions": [
            {"id": e.id, "term": e.key, "definition": e.value, "aliases": list(e.aliases)}
            for e in view.of("DEFINITION")
        ],
        "instructions": [{"id": e.id, "text": e.value} for e in view.of("INSTRUCTION")],
        "requiredEvidence": [
            {"id": e.id, "documentId": e.document_id, "passageId": e.passage_id} for e in view.of("REQUIRED_EVIDENCE")
        ],
    }


async def _record_version(s: AsyncSession, row: ContextSet, actor: str, change: str, now: datetime) -> ContextSetView:
    view = await load_set(s, row.workspace_id, row.id)
    s.add(
        ContextSetVersion(
            context_set_id=row.id,
            number=row.version,
            workspace_id=row.workspace_id,
            actor_id=actor,
            change=change[:200],
            snapshot=snapshot(view),
            changed_at=now,
        )
    )
    await s.flush()
    return view


async def create_context_set(services: DatabasePort, principal: Principal, w: ContextSetWrite) -> ContextSetView:
    """Create a set (version 1) with its entries.

    Raises:
        BadInput: a limit (:func:`~app.contextsets.types.validate_write`), required evidence
            outside the scope. NotFound: a scope id or reference. Conflict:
            ``CONTEXT_SET_NAME_TAKEN``, ``CONTEXT_SET_LIMIT`` (200 sets per workspace).
    """
    validate_write(w, creating=True)
    now, actor = utcnow(), principal.member_id
    async with services.db.session() as s:
        await serialize(s, "context-set-name", principal.workspace_id)
        count = (
            await s.execute(
                select(func.count())
                .select_from(ContextSet)
                .where(col(ContextSet.workspace_id) == principal.workspace_id)
            )
        ).scalar_one()
        if count >= MAX_SETS_PER_WORKSPACE:
            raise ContextSetLimit(
                f"this workspace has {MAX_SETS_PER_WORKSPACE} context sets (the limit); change or deactivate one",
                limit=MAX_SETS_PER_WORKSPACE,
            )
        taken = (
            await s.execute(
                select(col(ContextSet.id)).where(
                    col(ContextSet.workspace_id) == principal.workspace_id, col(ContextSet.name) == w.name
                )
            )
        ).scalar_one_or_none()
        if taken is not None:
            raise ContextSetNameTaken(
                f"a context set named {w.name!r} already exists ({taken})",
                field="input.name",
            )
        await check_refs(s, principal.workspace_id, w, None)
        row = ContextSet(
            id=new_id("cs"),
            workspace_id=principal.workspace_id,
            name=w.name or "",
            description=w.description or "",
            active=True if w.active is None else w.active,
            collection_ids=list(w.collection_ids or ()),
            document_ids=list(w.document_ids or ()),
            version=1,
            created_at=now,
            created_by=actor,
            updated_at=now,
            updated_by=actor,
        )
        s.add(row)
        await s.flush()
        full = ContextSetWrite(
            verified_answers=w.verified_answers or (),
            definitions=w.definitions or (),
            instructions=w.instructions or (),
            required_evidence=w.required_evidence or (),
        )
        await replace_entries(s, row, full, actor, now)
        return await _record_version(s, row, actor, "created", now)


async def update_context_set(
    services: DatabasePort, principal: Principal, set_id: str, w: ContextSetWrite
) -> ContextSetView:
    """Change a set: fields given replace; a new version is recorded (even for ``active`` alone).

    An update that changes nothing records no version and returns the set as it is.

    Raises:
        NotFound: no such set (``id``) or a reference. BadInput / Conflict: as
            :func:`create_context_set`.
    """
    validate_identifier(set_id, "id")
    validate_write(w)
    now, actor = utcnow(), principal.member_id
    async with services.db.session() as s:
        await serialize(s, "context-set", set_id)
        current = await load_set(s, principal.workspace_id, set_id, "id")
        row = await s.get(ContextSet, set_id, populate_existing=True)
        assert row is not None
        changes: list[str] = []
        if w.name is not None and w.name != row.name:
            await serialize(s, "context-set-name", principal.workspace_id)
            taken = (
                await s.execute(
                    select(col(ContextSet.id)).where(
                        col(ContextSet.workspace_id) == principal.workspace_id, col(ContextSet.name) == w.name
                    )
                )
            ).scalar_one_or_none()
            if taken is not None:
                raise ContextSetNameTaken(
                    f"a context set named {w.name!r} already exists ({taken})",
                    field="input.name",
                )
            row.name = w.name
            changes.append("name")
        await check_refs(s, principal.workspace_id, w, current)
        if w.description is not None and w.description != row.description:
            row.description = w.description
            changes.append("description")
        if w.active is not None and w.active != row.active:
            row.active = w.active
            changes.append("activated" if w.active else "deactivated")
        if w.collection_ids is not None and list(w.collection_ids) != list(row.collection_ids):
            row.collection_ids = list(w.collection_ids)
            changes.append("scope.collectionIds")
        if w.document_ids is not None and list(w.document_ids) != list(row.document_ids):
            row.document_ids = list(w.document_ids)
            changes.append("scope.documentIds")
        names = {
            "VERIFIED_ANSWER": "verifiedAnswers",
            "DEFINITION": "definitions",
            "INSTRUCTION": "instructions",
            "REQUIRED_EVIDENCE": "requiredEvidence",
        }
        section_changes = await replace_entries(s, row, w, actor, now)
        changes.extend(names[k] for k in section_changes)
        if not changes:
            return current
        row.version += 1
        row.updated_at, row.updated_by = now, actor
        s.add(row)
        try:
            await s.flush()
        except IntegrityError as exc:  # pragma: no cover - the name check above runs under the lock
            raise ContextSetNameTaken("a context set with that name already exists") from exc
        return await _record_version(s, row, actor, ", ".join(changes), now)


async def context_set_versions(
    services: DatabasePort, principal: Principal, set_id: str, limit: int
) -> list[VersionView]:
    """A set's recorded changes, newest first (at most ``limit``, 1–50).

    Raises:
        NotFound: no such set. ContextSetScopeRefused: a bound credential asking for another set.
    """
    from cairn.app.contextsets.types import validate_limit

    validate_identifier(set_id, "contextSetId")
    validate_limit(limit)
    check_set_access(principal, set_id)
    async with services.db.session() as s:
        await load_set(s, principal.workspace_id, set_id)
        rows = (
            (
                await s.execute(
                    select(ContextSetVersion)
                    .where(col(ContextSetVersion.context_set_id) == set_id)
                    .order_by(col(ContextSetVersion.number).desc())
                    .limit(limit)
                )
            )
            .scalars()
            .all()
        )
        ids = {r.actor_id for r in rows}
        found = await s.execute(select(col(Member.id), col(Member.name)).where(col(Member.id).in_(ids)))
        names: dict[str, str] = {str(row[0]): str(row[1]) for row in found.all()}
        return [
            VersionView(r.number, r.actor_id, r.change, r.changed_at, dict(r.snapshot), names.get(r.actor_id, ""))
            for r in rows
        ]
