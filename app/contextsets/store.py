"""Context sets: create, change (versioned), read; the scope checks every write makes.

Writes are for members holding ``document:write`` (editors and up; the registry says so).
Every change bumps ``ContextSet.version`` and writes one :class:`ContextSetVersion` row
(who, when, what changed, the whole set after the change), under a per-set lock so two
concurrent editors get consecutive versions, never a lost write. A section given in an
update (``definitions``, ``instructions``, …) replaces that section whole; entry ids are
stable for unchanged content (``stable_id`` over set, kind, content), so an unchanged
definition keeps its id, ``createdAt`` and ``createdBy`` across versions.

Checks: scope collections/documents exist, live, in the workspace; required evidence and
answer citations name live documents (and passages of them) in the workspace, required
evidence and citations inside the set's scope (a bound credential must be able to read
what the set requires and cites).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from cairn.app.contextsets.errors import ContextSetLimit, ContextSetNameTaken
from cairn.app.contextsets.types import (
    KINDS,
    MAX_SETS_PER_WORKSPACE,
    TRUST_APPROVED,
    ContextSetView,
    ContextSetWrite,
    Entry,
    VersionView,
    validate_write,
)
from cairn.app.core.db import serialize
from cairn.app.core.errors import BadInput, ContextSetInactive, ContextSetScopeRefused, NotFound
from cairn.app.core.ids import new_id, stable_id, utcnow
from cairn.app.core.models import Collection, ContextSet, ContextSetEntry, ContextSetVersion, Document, Passage
from cairn.app.core.text_rules import validate_identifier
from cairn.app.governance import Principal


def _entry(e: ContextSetEntry) -> Entry:
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
        tuple(_entry(e) for e in ents),
    )


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


async def load_set(s: AsyncSession, workspace_id: str, set_id: str, field: str = "contextSetId") -> ContextSetView:
    """A set of the workspace with its entries.

    Raises:
        NotFound: no such set in the workspace (``field`` named).
    """
    validate_identifier(set_id, field)
    row = await s.get(ContextSet, set_id, populate_existing=True)
    if row is None or row.workspace_id != workspace_id:
        raise NotFound(f"context set {set_id!r} not found in this workspace", field=field)
    entries = list((await s.execute(select(ContextSetEntry).where(ContextSetEntry.context_set_id == set_id))).scalars())
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


async def _live_docs(s: AsyncSession, workspace_id: str, ids: list[str]) -> dict[str, str]:
    """Live documents (not deleted, collection live) of the workspace among ``ids``: id → collection id."""
    if not ids:
        return {}
    rows = await s.execute(
        select(Document.id, Document.collection_id)
        .join(Collection, Collection.id == Document.collection_id)
        .where(
            Document.id.in_(ids),
            Document.workspace_id == workspace_id,
            Document.deleted_at.is_(None),
            Collection.deleted_at.is_(None),
        )
    )
    return {r[0]: r[1] for r in rows.all()}


async def _passages(s: AsyncSession, workspace_id: str, ids: list[str]) -> dict[str, str]:
    """Passages of the workspace among ``ids``: id → document id."""
    if not ids:
        return {}
    rows = await s.execute(
        select(Passage.id, Passage.document_id).where(Passage.id.in_(ids), Passage.workspace_id == workspace_id)
    )
    return {r[0]: r[1] for r in rows.all()}


async def _check_refs(s: AsyncSession, workspace_id: str, w: ContextSetWrite, current: ContextSetView | None) -> None:
    """Scope ids, answer citations and required evidence exist, are live and readable (module doc).

    Raises:
        NotFound / BadInput: naming the field.
    """
    colls = list(w.collection_ids) if w.collection_ids is not None else list(current.collection_ids if current else ())
    docs = list(w.document_ids) if w.document_ids is not None else list(current.document_ids if current else ())
    if w.collection_ids:
        found = set(
            (
                await s.execute(
                    select(Collection.id).where(
                        Collection.id.in_(colls),
                        Collection.workspace_id == workspace_id,
                        Collection.deleted_at.is_(None),
                    )
                )
            ).scalars()
        )
        for i, c in enumerate(colls):
            if c not in found:
                raise NotFound(
                    f"input.scope.collectionIds[{i}]: no collection {c!r} in this workspace",
                    field=f"input.scope.collectionIds[{i}]",
                )
    if w.document_ids:
        live = await _live_docs(s, workspace_id, docs)
        for i, d in enumerate(docs):
            if d not in live:
                raise NotFound(
                    f"input.scope.documentIds[{i}]: no live document {d!r} in this workspace",
                    field=f"input.scope.documentIds[{i}]",
                )
    refs: list[tuple[str, str, str | None, bool]] = []  # (field, document, passage, must be in scope)
    for i, va in enumerate(w.verified_answers or ()):
        if va.document_id is not None:
            refs.append((f"input.verifiedAnswers[{i}].citation", va.document_id, va.passage_id, True))
    required = w.required_evidence
    if required is None and current is not None and (w.collection_ids is not None or w.document_ids is not None):
        from cairn.app.contextsets.types import EvidenceRef

        required = tuple(EvidenceRef(e.document_id or "", e.passage_id) for e in current.of("REQUIRED_EVIDENCE"))
    for i, r in enumerate(required or ()):
        refs.append((f"input.requiredEvidence[{i}]", r.document_id, r.passage_id, True))
    if not refs:
        return
    live = await _live_docs(s, workspace_id, sorted({r[1] for r in refs}))
    pmap = await _passages(s, workspace_id, sorted({r[2] for r in refs if r[2]}))
    for field, doc, passage, in_scope in refs:
        if doc not in live:
            raise NotFound(
                f"{field}.documentId: no live, readable document {doc!r} in this workspace", field=f"{field}.documentId"
            )
        if passage is not None and pmap.get(passage) != doc:
            raise NotFound(
                f"{field}.passageId: passage {passage!r} is not a passage of document {doc!r}",
                field=f"{field}.passageId",
            )
        if in_scope and live[doc] not in colls and doc not in docs:
            raise BadInput(
                f"{field}.documentId: document {doc!r} is outside the set's scope (add its collection or the "
                "document to scope): a credential bound to the set could not read it",
                field=f"{field}.documentId",
            )


def _rows_for(set_id: str, workspace_id: str, w: ContextSetWrite) -> dict[str, list[dict[str, Any]]]:
    """New entry columns per kind for the sections ``w`` replaces."""
    out: dict[str, list[dict[str, Any]]] = {}

    def add(kind: str, content: tuple, cols: dict[str, Any]) -> None:
        rows = out.setdefault(kind, [])
        occurrence = sum(1 for r in rows if r["_content"] == content)
        rows.append(
            {
                "_content": content,
                "id": stable_id("cse", set_id, kind, *[c or "" for c in content], occurrence),
                "kind": kind,
                "position": len(rows),
                **cols,
            }
        )

    if w.verified_answers is not None:
        out["VERIFIED_ANSWER"] = []
        for va in w.verified_answers:
            add(
                "VERIFIED_ANSWER",
                (va.question, va.answer, va.document_id, va.passage_id),
                {"key": va.question, "value": va.answer, "document_id": va.document_id, "passage_id": va.passage_id},
            )
    if w.definitions is not None:
        out["DEFINITION"] = []
        for d in w.definitions:
            add(
                "DEFINITION",
                (d.term, d.definition, "\x1f".join(d.aliases)),
                {"key": d.term, "value": d.definition, "aliases": list(d.aliases)},
            )
    if w.instructions is not None:
        out["INSTRUCTION"] = []
        for text in w.instructions:
            add("INSTRUCTION", (text,), {"value": text})
    if w.required_evidence is not None:
        out["REQUIRED_EVIDENCE"] = []
        for r in w.required_evidence:
            add(
                "REQUIRED_EVIDENCE",
                (r.document_id, r.passage_id),
                {"document_id": r.document_id, "passage_id": r.passage_id},
            )
    return out


async def _replace_entries(s: AsyncSession, row: ContextSet, w: ContextSetWrite, actor: str, now) -> list[str]:
    """Replace the sections ``w`` gives; returns the names of the sections that changed."""
    new = _rows_for(row.id, row.workspace_id, w)
    changed: list[str] = []
    for kind, rows in new.items():
        old = {
            e.id: e
            for e in (
                await s.execute(
                    select(ContextSetEntry).where(
                        ContextSetEntry.context_set_id == row.id, ContextSetEntry.kind == kind
                    )
                )
            ).scalars()
        }
        if [(r["id"], r["position"]) for r in rows] != sorted(
            ((e.id, e.position) for e in old.values()), key=lambda x: x[1]
        ):
            changed.append(kind)
        await s.execute(
            delete(ContextSetEntry).where(ContextSetEntry.context_set_id == row.id, ContextSetEntry.kind == kind)
        )
        await s.flush()
        for r in rows:
            prev = old.get(r["id"])
            cols = {k: v for k, v in r.items() if not k.startswith("_")}
            s.add(
                ContextSetEntry(
                    context_set_id=row.id,
                    workspace_id=row.workspace_id,
                    trust=TRUST_APPROVED,
                    created_at=prev.created_at if prev else now,
                    created_by=prev.created_by if prev else actor,
                    **cols,
                )
            )
    await s.flush()
    return changed


async def _record_version(s: AsyncSession, row: ContextSet, actor: str, change: str, now) -> ContextSetView:
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


async def create_context_set(services, principal: Principal, w: ContextSetWrite) -> ContextSetView:
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
                select(func.count()).select_from(ContextSet).where(ContextSet.workspace_id == principal.workspace_id)
            )
        ).scalar_one()
        if count >= MAX_SETS_PER_WORKSPACE:
            raise ContextSetLimit(
                f"this workspace has {MAX_SETS_PER_WORKSPACE} context sets (the limit); change or deactivate one",
                limit=MAX_SETS_PER_WORKSPACE,
            )
        taken = (
            await s.execute(
                select(ContextSet.id).where(
                    ContextSet.workspace_id == principal.workspace_id, ContextSet.name == w.name
                )
            )
        ).scalar_one_or_none()
        if taken is not None:
            raise ContextSetNameTaken(
                f"a context set named {w.name!r} already exists ({taken})",
                field="input.name",
            )
        await _check_refs(s, principal.workspace_id, w, None)
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
        await _replace_entries(s, row, full, actor, now)
        return await _record_version(s, row, actor, "created", now)


async def update_context_set(services, principal: Principal, set_id: str, w: ContextSetWrite) -> ContextSetView:
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
                    select(ContextSet.id).where(
                        ContextSet.workspace_id == principal.workspace_id, ContextSet.name == w.name
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
        await _check_refs(s, principal.workspace_id, w, current)
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
        section_changes = await _replace_entries(s, row, w, actor, now)
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


async def context_set_versions(services, principal: Principal, set_id: str, limit: int) -> list[VersionView]:
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
            await s.execute(
                select(ContextSetVersion)
                .where(ContextSetVersion.context_set_id == set_id)
                .order_by(ContextSetVersion.number.desc())
                .limit(limit)
            )
        ).scalars()
        return [VersionView(r.number, r.actor_id, r.change, r.changed_at, dict(r.snapshot)) for r in rows]


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
