"""Bulk import of context sets from YAML (``cairn sets import FILE.yaml``).

Format (every key but ``name`` optional; a set whose name exists is updated — the sections
given replace that section whole — otherwise created)::

    sets:
      - name: Python docs
        description: Curated answers over the Python documentation
        active: true
        scope:
          collections: [python-docs]          # collection names or ids
          documents: [{collection: python-docs, externalId: tutorial.md}]   # or document ids
        definitions:
          - {term: GIL, definition: "The global interpreter lock ...", aliases: [global interpreter lock]}
        verifiedAnswers:
          - question: How do I create a virtual environment?
            answer: Run python -m venv DIR.
            citation: {document: {collection: python-docs, externalId: venv.md}}   # optional; passageId too
        instructions: ["Cite the section you used."]
        requiredEvidence: [{document: doc_…}]

Unknown keys are refused (a typo would otherwise drop a section silently). Each set is one
versioned write through :mod:`app.contextsets.store` with the importing member as author.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from cairn.app.contextsets.store import create_context_set, update_context_set
from cairn.app.contextsets.types import (
    ContextSetView,
    ContextSetWrite,
    DefinitionInput,
    EvidenceRef,
    VerifiedAnswerInput,
)
from cairn.app.core.errors import BadInput, NotFound
from cairn.app.core.models import Collection, ContextSet, Document
from cairn.app.governance import DatabasePort, Principal

_SET_KEYS = {
    "name",
    "description",
    "active",
    "scope",
    "definitions",
    "verifiedAnswers",
    "instructions",
    "requiredEvidence",
}


def _keys(obj: Any, allowed: set[str], where: str) -> dict:
    if not isinstance(obj, dict):
        raise BadInput(f"{where} must be a mapping", field=where)
    extra = sorted(set(obj) - allowed)
    if extra:
        raise BadInput(f"{where} has unknown keys {extra}; allowed: {sorted(allowed)}", field=where)
    return obj


def _list(obj: Any, where: str) -> list:
    if obj is None:
        return []
    if not isinstance(obj, list):
        raise BadInput(f"{where} must be a list", field=where)
    return obj


async def _collection_id(s: AsyncSession, ws: str, ref: Any, where: str) -> str:
    if not isinstance(ref, str):
        raise BadInput(f"{where} must be a collection name or id", field=where)
    row = (
        await s.execute(
            select(col(Collection.id)).where(
                col(Collection.workspace_id) == ws,
                col(Collection.deleted_at).is_(None),
                (col(Collection.id) == ref) | (col(Collection.name) == ref),
            )
        )
    ).scalar_one_or_none()
    if row is None:
        raise NotFound(f"{where}: no collection named {ref!r} in this workspace", field=where)
    return row


async def _document_id(s: AsyncSession, ws: str, ref: Any, where: str) -> str:
    if isinstance(ref, str):
        return ref
    ref = _keys(ref, {"collection", "externalId"}, where)
    coll = await _collection_id(s, ws, ref.get("collection"), f"{where}.collection")
    doc = (
        await s.execute(
            select(col(Document.id)).where(
                col(Document.collection_id) == coll,
                Document.external_id == ref.get("externalId"),
                col(Document.deleted_at).is_(None),
            )
        )
    ).scalar_one_or_none()
    if doc is None:
        raise NotFound(
            f"{where}: no live document {ref.get('externalId')!r} in collection {ref.get('collection')!r}", field=where
        )
    return doc


async def _write(s: AsyncSession, ws: str, raw: Any, where: str) -> ContextSetWrite:
    d = _keys(raw, _SET_KEYS, where)
    scope = _keys(d.get("scope") or {}, {"collections", "documents"}, f"{where}.scope")
    colls = [
        await _collection_id(s, ws, c, f"{where}.scope.collections[{i}]")
        for i, c in enumerate(_list(scope.get("collections"), f"{where}.scope.collections"))
    ]
    docs = [
        await _document_id(s, ws, x, f"{where}.scope.documents[{i}]")
        for i, x in enumerate(_list(scope.get("documents"), f"{where}.scope.documents"))
    ]
    answers = []
    for i, a in enumerate(_list(d.get("verifiedAnswers"), f"{where}.verifiedAnswers")):
        a = _keys(a, {"question", "answer", "citation"}, f"{where}.verifiedAnswers[{i}]")
        doc = passage = None
        if a.get("citation") is not None:
            c = _keys(a["citation"], {"document", "passageId"}, f"{where}.verifiedAnswers[{i}].citation")
            doc = await _document_id(s, ws, c.get("document"), f"{where}.verifiedAnswers[{i}].citation.document")
            passage = c.get("passageId")
        answers.append(VerifiedAnswerInput(str(a.get("question", "")), str(a.get("answer", "")), doc, passage))
    defs = []
    for i, x in enumerate(_list(d.get("definitions"), f"{where}.definitions")):
        x = _keys(x, {"term", "definition", "aliases"}, f"{where}.definitions[{i}]")
        defs.append(
            DefinitionInput(
                str(x.get("term", "")),
                str(x.get("definition", "")),
                tuple(str(a) for a in _list(x.get("aliases"), f"{where}.definitions[{i}].aliases")),
            )
        )
    required = []
    for i, r in enumerate(_list(d.get("requiredEvidence"), f"{where}.requiredEvidence")):
        r = _keys(r, {"document", "passageId"}, f"{where}.requiredEvidence[{i}]")
        required.append(
            EvidenceRef(
                await _document_id(s, ws, r.get("document"), f"{where}.requiredEvidence[{i}].document"),
                r.get("passageId"),
            )
        )
    return ContextSetWrite(
        name=d.get("name"),
        description=d.get("description"),
        active=d.get("active"),
        collection_ids=tuple(colls) if "collections" in scope else None,
        document_ids=tuple(docs) if "documents" in scope else None,
        verified_answers=tuple(answers) if "verifiedAnswers" in d else None,
        definitions=tuple(defs) if "definitions" in d else None,
        instructions=tuple(str(t) for t in _list(d.get("instructions"), f"{where}.instructions"))
        if "instructions" in d
        else None,
        required_evidence=tuple(required) if "requiredEvidence" in d else None,
    )


async def import_context_sets(
    services: DatabasePort, principal: Principal, data: Any
) -> list[tuple[str, ContextSetView]]:
    """Create or update every set of a parsed YAML document (module doc).

    Returns:
        ``(status, set)`` per set in file order; status ``created`` / ``updated`` / ``unchanged``.

    Raises:
        BadInput / NotFound / Conflict: naming the set's path (``sets[2].definitions[0].term``).
            Sets before the failing one stay written (each is its own versioned change).
    """
    data = _keys(data, {"sets"}, "file")
    out: list[tuple[str, ContextSetView]] = []
    for i, raw in enumerate(_list(data.get("sets"), "sets")):
        where = f"sets[{i}]"
        async with services.db.session() as s:
            w = await _write(s, principal.workspace_id, raw, where)
            existing = (
                await s.execute(
                    select(col(ContextSet.id), col(ContextSet.version)).where(
                        col(ContextSet.workspace_id) == principal.workspace_id, col(ContextSet.name) == w.name
                    )
                )
            ).first()
        try:
            if existing is None:
                out.append(("created", await create_context_set(services, principal, w)))
            else:
                view = await update_context_set(services, principal, existing[0], w)
                out.append(("updated" if view.version != existing[1] else "unchanged", view))
        except BadInput as exc:
            raise BadInput(f"{where}: {exc.message}", **exc.extra) from None
    return out
