"""Set-first packing (SPEC §3): what a context set puts at the head of a pack, and the
retrieval scope it leaves for the evidence after it.

:func:`plan_set` runs before retrieval and returns a :class:`SetPlan`: the set's items in
pack order within the budget, the tokens they use, and the collection/document filters
retrieval must use. The pack service (``app/packs/service.py``, marked hook) emits these
items first — before retrieval finishes — then fills the rest of the budget with evidence.

Order and matching (a 500-definition set adds only what the task uses):

1. ``VERIFIED_ANSWER`` (trust APPROVED): answers the task is about — ≥ 70 % of the stored
   question's subject words in the task, function words not counted, no subject word replaced
   (:attr:`~app.contextsets.matching.AnswerMatch.about`,
   :data:`~app.contextsets.matching.PACK_MIN_COVERAGE`) — best BM25 first, at most :data:`MAX_ANSWERS`;
2. ``DEFINITION`` (APPROVED): definitions whose term or an alias occurs in the task as a
   phrase of analysed words, in order of first occurrence, at most :data:`MAX_DEFINITIONS`;
3. ``INSTRUCTION`` (APPROVED): every instruction of the set, in its order (a set holds ≤ 20;
   instructions apply to every task the set serves);
4. ``REQUIRED_EVIDENCE`` (UNTRUSTED, cited): every required document (the version visible at
   the pack's asOf, whole) or passage (its span in that version), re-checked readable now.

The budget is filled greedily in that order (an item that does not fit is skipped, later
smaller ones may still fit). A required item that is unreadable, no longer in the visible
version or does not fit is *missing*: ``REQUIRE_COMPLETE`` then fails with
``CONTEXT_PACK_INCOMPLETE`` (reason ``REQUIRED_EVIDENCE``) before any event; ``BEST_EFFORT``
says so in the notes and marks the pack incomplete.

Scope: retrieval is limited to the set's collections plus its documents, intersected with
the request's filters. For a credential bound to the set, a filter outside the set is
refused (``AGENT_CONTEXT_SET_SCOPE_REFUSED``) rather than intersected.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from cairn.app.contextsets.library import answer_index, definition_index
from cairn.app.contextsets.loading import active_set
from cairn.app.contextsets.types import TRUST_APPROVED, ContextSetView, entry_text
from cairn.app.core.errors import CairnError, ContextSetScopeRefused
from cairn.app.core.ids import sha256_text
from cairn.app.core.models import Collection, Document
from cairn.app.corpus import deleted_by, read_document
from cairn.app.governance import DatabasePort, Principal
from cairn.retrieval.packing import pack_greedy
from cairn.retrieval.tokens import count_tokens

MAX_ANSWERS = 3
MAX_DEFINITIONS = 10


@dataclass(frozen=True)
class SetItem:
    """One set item for the pack (the pack service turns it into a ``PackItem``).

    ``document_id`` … ``sha256`` are the citation of required evidence (``version_id`` set)
    or the cited source of a verified answer (``version_id`` None); all None otherwise.
    Required evidence also names its source like any cited item: ``title`` (the document's),
    ``external_id``, ``collection_id`` and ``collection_name``.
    """

    kind: str
    text: str
    tokens: int
    trust: str
    title: str
    score: float
    context_set_id: str
    entry_id: str
    set_version: int
    document_id: str | None = None
    version_id: str | None = None
    passage_id: str | None = None
    start: int = 0
    end: int = 0
    sha256: str | None = None
    collection_id: str | None = None
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    superseded: bool = False
    external_id: str = ""
    collection_name: str = ""


@dataclass
class SetPlan:
    """What the set contributes: items in pack order, their tokens, the retrieval filters.

    ``collection_ids``/``document_ids`` follow the search functions' convention (None = no
    filter on that field, ``[]`` = nothing). ``required_passages``/``required_documents``
    let the pack drop evidence the required items already quote.
    """

    context_set: ContextSetView
    items: list[SetItem]
    tokens: int
    collection_ids: list[str] | None
    document_ids: list[str] | None
    missing_required: list[str] = field(default_factory=list)
    skipped: int = 0
    notes: list[str] = field(default_factory=list)
    required_passages: set[str] = field(default_factory=set)
    required_documents: set[str] = field(default_factory=set)
    over_budget: list[str] = field(default_factory=list)
    """Approved entries matched to the task that did not fit, named (``DEFINITION "RRF" (303 tokens)``)."""
    top_over_budget: bool = False
    """The set's first candidate — the pack's top item — is among them."""


async def _doc_collections(s: AsyncSession, workspace_id: str, ids: list[str]) -> dict[str, str]:
    if not ids:
        return {}
    rows = await s.execute(
        select(col(Document.id), col(Document.collection_id)).where(
            col(Document.id).in_(ids), col(Document.workspace_id) == workspace_id
        )
    )
    return {r[0]: r[1] for r in rows.all()}


async def _docs_in(s: AsyncSession, workspace_id: str, colls: list[str], system_time: datetime) -> list[str]:
    """Documents of ``colls`` not deleted by ``system_time`` (nor their collection)."""
    rows = await s.execute(
        select(col(Document.id), col(Document.deleted_at), col(Collection.deleted_at))
        .join(Collection, col(Collection.id) == col(Document.collection_id))
        .where(col(Document.collection_id).in_(colls), col(Document.workspace_id) == workspace_id)
        .order_by(Document.id)
    )
    return [
        d for d, gone, cgone in rows.all() if not deleted_by(gone, system_time) and not deleted_by(cgone, system_time)
    ]


async def _retrieval_scope(
    s: AsyncSession,
    principal: Principal,
    view: ContextSetView,
    rc: list[str] | None,
    rd: list[str] | None,
    system_time: datetime,
) -> tuple[list[str] | None, list[str] | None]:
    """The set's scope ∩ the request filters (module doc); refusals for a bound credential."""
    C, D = set(view.collection_ids), list(view.document_ids)
    dmap = await _doc_collections(s, principal.workspace_id, sorted(set(D) | set(rd or [])))
    bound = principal.context_set_id == view.id

    def in_scope(d: str) -> bool:
        return dmap.get(d) in C or d in D

    if bound:
        for i, c in enumerate(rc or []):
            if c not in C and not any(dmap.get(d) == c for d in D):
                raise ContextSetScopeRefused(
                    f"this credential is bound to context set {view.id}; collection {c!r} is outside its scope",
                    field=f"input.filters.collectionIds[{i}]",
                )
        for i, d in enumerate(rd or []):
            if not in_scope(d):
                raise ContextSetScopeRefused(
                    f"this credential is bound to context set {view.id}; document {d!r} is outside its scope",
                    field=f"input.filters.documentIds[{i}]",
                )
    if rd is not None:
        return None, [d for d in rd if in_scope(d) and (rc is None or dmap.get(d) in rc)]
    whole = sorted(C if rc is None else C & set(rc))
    single = [d for d in D if dmap.get(d) not in whole and (rc is None or dmap.get(d) in rc)]
    if not single:
        return whole, None
    if not whole:
        return None, single
    return None, sorted(set(await _docs_in(s, principal.workspace_id, whole, system_time)) | set(single))


async def _required(
    s: AsyncSession, principal: Principal, view: ContextSetView, valid_time: datetime, system_time: datetime
) -> tuple[list[SetItem], list[str]]:
    """Required evidence as items (as of the pack's read point), and the refs that are missing."""
    items: list[SetItem] = []
    missing: list[str] = []
    for e in view.of("REQUIRED_EVIDENCE"):
        label = f"requiredEvidence[{e.position}] ({e.document_id}{'/' + e.passage_id if e.passage_id else ''})"
        try:
            read = await read_document(
                s,
                workspace_id=principal.workspace_id,
                document_id=e.document_id or "",
                valid_time=valid_time,
                system_time=system_time,
            )
        except CairnError:
            missing.append(f"{label}: not readable")
            continue
        doc = read.document
        version = next((v for v in read.versions if v.id == read.chosen_version_id), None)
        if version is None or not principal.may_read(doc.collection_id, doc.id):
            missing.append(
                f"{label}: no version visible at the pack's asOf" if version is None else f"{label}: outside scope"
            )
            continue
        start, end, pid = 0, len(version.text), None
        if e.passage_id is not None:
            span = next((p for p in read.passages.get(version.id, []) if p[0] == e.passage_id), None)
            if span is None:
                missing.append(f"{label}: the passage is not in the version visible at the pack's asOf")
                continue
            pid, start, end = span[0], span[2], span[3]
        text = version.text[start:end]
        coll = await s.get(Collection, doc.collection_id)  # read_document loaded it: no query
        items.append(
            SetItem(
                "REQUIRED_EVIDENCE",
                text,
                count_tokens(text),
                "UNTRUSTED",
                doc.title,
                0.0,
                view.id,
                e.id,
                view.version,
                doc.id,
                version.id,
                pid,
                start,
                end,
                sha256_text(text),
                doc.collection_id,
                version.valid_from,
                version.valid_to,
                version.number != max(v.number for v in read.versions),
                doc.external_id,
                coll.name if coll is not None else "",
            )
        )
    return items, missing


def _approved(view: ContextSetView, task: str) -> list[SetItem]:
    """Verified answers, definitions and instructions that match the task (module doc), in order."""
    out: list[SetItem] = []
    aidx, answers = answer_index(view)
    for m in aidx.match(task, MAX_ANSWERS * 4):
        if not m.about:
            continue
        e = answers[m.index]
        text = entry_text(e)
        out.append(
            SetItem(
                "VERIFIED_ANSWER",
                text,
                count_tokens(text),
                TRUST_APPROVED,
                e.key,
                m.score,
                view.id,
                e.id,
                view.version,
                document_id=e.document_id,
                passage_id=e.passage_id,
            )
        )
        if sum(1 for i in out if i.kind == "VERIFIED_ANSWER") >= MAX_ANSWERS:
            break
    didx, defs = definition_index(view)
    for i, _pos in didx.in_text(task)[:MAX_DEFINITIONS]:
        e = defs[i]
        text = entry_text(e)
        out.append(
            SetItem("DEFINITION", text, count_tokens(text), TRUST_APPROVED, e.key, 1.0, view.id, e.id, view.version)
        )
    for e in view.of("INSTRUCTION"):
        out.append(
            SetItem(
                "INSTRUCTION",
                entry_text(e),
                count_tokens(e.value),
                TRUST_APPROVED,
                f"Instruction {e.position + 1}",
                1.0,
                view.id,
                e.id,
                view.version,
            )
        )
    return out


async def plan_set(
    services: DatabasePort,
    principal: Principal,
    *,
    task: str,
    context_set_id: str | None,
    collection_ids: list[str] | None,
    document_ids: list[str] | None,
    max_tokens: int,
    valid_time: datetime,
    system_time: datetime,
) -> SetPlan | None:
    """The set part of a pack (module doc), or None when no set applies.

    Args:
        context_set_id: ``input.contextSetId``; None = the credential's bound set, if any.
        collection_ids / document_ids: The request's filters (already checked to exist in
            the workspace).

    Raises:
        ContextSetScopeRefused: a bound credential naming another set or a filter outside it.
        ContextSetInactive: the set is deactivated. NotFound: no such set.
    """
    async with services.db.session() as s:
        view = await active_set(s, principal, context_set_id, "input.contextSetId")
        if view is None:
            return None
        colls, docs = await _retrieval_scope(s, principal, view, collection_ids, document_ids, system_time)
        required, missing = await _required(s, principal, view, valid_time, system_time)
    candidates = _approved(view, task) + required
    packed = pack_greedy(candidates, tokens=lambda i: i.tokens, max_tokens=max_tokens)
    missing += [
        f"requiredEvidence ({i.document_id}{'/' + i.passage_id if i.passage_id else ''}): {i.tokens} tokens do not fit"
        for i in packed.skipped
        if i.kind == "REQUIRED_EVIDENCE"
    ]
    notes = [
        f"context set {view.name} (v{view.version}): {len(packed.included)} set items first"
        + (f", {len(packed.skipped)} did not fit: " + "; ".join(map(_label, packed.skipped)) if packed.skipped else "")
    ]
    over = [i for i in packed.skipped if i.kind != "REQUIRED_EVIDENCE"]  # required: missing_required
    if colls == [] or docs == []:
        notes.append("the context set's scope leaves no documents to retrieve from: set items only")
    notes.extend(f"required evidence missing: {m}" for m in missing)
    kept_required = [i for i in packed.included if i.kind == "REQUIRED_EVIDENCE"]
    return SetPlan(
        view,
        list(packed.included),
        packed.tokens_used,
        colls,
        docs,
        missing,
        len(packed.skipped),
        notes,
        {i.passage_id for i in kept_required if i.passage_id},
        {i.document_id for i in kept_required if i.passage_id is None and i.document_id},
        [_label(i) for i in over],
        any(i is candidates[0] for i in over),
    )


def _label(i: SetItem) -> str:
    """A set item named for a note: kind, question / term / "Instruction n" or the required
    reference, and its tokens."""
    if i.kind == "REQUIRED_EVIDENCE":
        return f"{i.kind} {i.document_id}{'/' + i.passage_id if i.passage_id else ''} ({i.tokens} tokens)"
    return f'{i.kind} "{i.title}" ({i.tokens} tokens)'
