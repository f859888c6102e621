"""Replay a recorded pack: ``VERIFY`` its items against current documents, or ``RECOMPUTE`` it.

A replay record (written by :func:`app.packs.stream_pack`, compact form of
:mod:`app.packs.replay_codec`) keeps the pack's conditions and, per item, the citation's ids,
span and SHA-256 — never text. Rules:

- Only the credential (or member) that made the pack, in its workspace, can replay it; any
  other caller gets ``NOT_FOUND`` (as if the id did not exist).
- Records expire 30 days after the pack: ``AGENT_REPLAY_EXPIRED`` (410) until purged
  (:func:`app.replay.retention.purge_replays`, run at start-up and then every
  ``CAIRN_REPLAY_PURGE_INTERVAL_SECONDS`` by :func:`app.replay.retention.purge_replays_every`),
  ``NOT_FOUND`` after.
- A non-retaining workspace keeps no records, so every replay there is ``NOT_FOUND`` with
  ``reason: NOT_RETAINED`` and a message saying so.

``VERIFY`` — per recorded item, against the document's version as of now:
``UNAVAILABLE`` (document deleted, collection deleted, no version valid now, or not readable
by the caller now — no ``document:read``, or outside the current scope of the context set the
credential is bound to), ``UNCHANGED`` (the current version still holds the cited text: the
same version, the same passage with the same SHA-256 — possibly at another offset — or, for a
whole document, the same content hash; for a ``FACT`` the same statement hash), else
``CHANGED``. Each check carries the current version id (null when unavailable). Context-set
items (:func:`app.contextsets.check_entries`): an approved entry is compared by the SHA-256 of
its text, never by the set's version number (``currentVersionId`` is then ``"<entry id>@<set
version>"``); required evidence is ``UNAVAILABLE`` once the set no longer requires it, else
checked as a cited document or passage.

``RECOMPUTE`` — rebuilds the pack with the recorded conditions (both asOf times, filters,
sources, retrieval mode, budget with ``maxItems``, relevance floor, context set) and the
caller's ``task``, whose SHA-256 must equal the recorded one (the record keeps no text).
Returns the new pack and the diff keyed by (kind, passage or document id, SHA-256): added,
removed, moved (old → new rank).

Request and result shapes: :mod:`app.replay.types`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

from sqlalchemy import select
from sqlmodel import col

from cairn.app.contextsets import RecordedEntry, check_entries
from cairn.app.core.errors import BadInput, NotFound
from cairn.app.core.ids import as_utc, sha256_text, utcnow
from cairn.app.core.models import (
    Collection,
    Document,
    DocumentVersion,
    Passage,
    ReplayRecord,
    TemporalStatement,
    VersionPassage,
    Workspace,
)
from cairn.app.corpus import SearchIndexes, VersionMeta, choose_versions
from cairn.app.governance import Principal, ServicesPort
from cairn.app.packs import (
    PackRequest,
    PassageRowCache,
    RecordedItem,
    build_pack,
    decode_record,
    legacy_items,
    recorded_item,
)
from cairn.app.replay.errors import ReplayExpired
from cairn.app.replay.types import ItemCheck, Moved, ReplayRequest, ReplayResult, validate_replay_request


class ReplayServices(ServicesPort, Protocol):
    """What :func:`replay_pack` uses beyond :class:`~app.governance.ServicesPort`: what
    :func:`app.packs.build_pack` needs to rebuild the pack (the search indexes, the passage rows)."""

    @property
    def indexes(self) -> SearchIndexes: ...

    @property
    def passage_rows(self) -> PassageRowCache: ...


async def _load(services: ServicesPort, principal: Principal, replay_id: str) -> ReplayRecord:
    async with services.db.session() as s:
        rec = await s.get(ReplayRecord, replay_id)
        if rec is None or rec.workspace_id != principal.workspace_id or rec.principal_id != principal.id:
            ws = await s.get(Workspace, principal.workspace_id)
            if ws is not None and not ws.retaining:
                raise NotFound(
                    f"replay {replay_id!r} not found: this workspace is non-retaining and keeps no replay "
                    "records, so its packs cannot be replayed",
                    field="replayId",
                    reason="NOT_RETAINED",
                )
            raise NotFound(f"replay {replay_id!r} not found for this credential", field="replayId")
        if as_utc(rec.expires_at) <= utcnow():
            raise ReplayExpired(
                f"replay {replay_id!r} expired at {as_utc(rec.expires_at).isoformat()} (records are kept 30 days)",
                field="replayId",
            )
        s.expunge(rec)
        return rec


def _decode(rec: ReplayRecord) -> tuple[dict[str, Any], list[RecordedItem]]:
    if rec.payload is not None:
        return decode_record(bytes(rec.payload))
    return dict(rec.conditions), legacy_items(list(rec.items))


async def replay_pack(services: ReplayServices, principal: Principal, req: ReplayRequest) -> ReplayResult:
    """Run one replay (module doc).

    Raises:
        BadInput: see :func:`validate_replay_request`; ``task`` whose SHA-256 differs from
            the recorded task's.
        NotFound: no record for this caller (or a non-retaining workspace).
        ReplayExpired: ``AGENT_REPLAY_EXPIRED`` (410).
    """
    validate_replay_request(req)
    rec = await _load(services, principal, req.replay_id)
    conditions, items = _decode(rec)
    base: dict[str, Any] = dict(
        replay_id=rec.id,
        pack_id=rec.pack_id,
        mode=req.mode,
        recorded_at=as_utc(rec.created_at),
        expires_at=as_utc(rec.expires_at),
        conditions=conditions,
        recorded=tuple(items),
    )
    if req.mode == "VERIFY":
        set_id = conditions.get("contextSetId") or principal.context_set_id
        return ReplayResult(**base, checks=tuple(await verify_items(services, principal, items, set_id)))
    assert req.task is not None
    if sha256_text(req.task) != rec.task_sha256:
        raise BadInput(
            "task does not match the recorded task (SHA-256 differs); send the exact task text of the pack",
            field="task",
        )
    pack = await build_pack(services, principal, _request(conditions, req.task))
    added, removed, moved, same = diff_items(items, [recorded_item(i) for i in pack.items])
    return ReplayResult(
        **base, pack=pack, added=tuple(added), removed=tuple(removed), moved=tuple(moved), unchanged_ranks=same
    )


def _request(c: dict[str, Any], task: str) -> PackRequest:
    return PackRequest(
        task=task,
        max_tokens=int(c["maxTokens"]),
        max_latency_ms=int(c["maxLatencyMs"]),
        coverage=str(c["coverage"]),
        valid_time=datetime.fromisoformat(c["validTime"]),
        system_time=datetime.fromisoformat(c["systemTime"]),
        collection_ids=tuple(c["collectionIds"]) or None,
        document_ids=tuple(c["documentIds"]) or None,
        sources=tuple(c["sources"]),
        retrieval=str(c["retrieval"]),
        context_set_id=c.get("contextSetId"),
        max_items=c.get("maxItems"),  # absent: not set (recorded only when set)
        min_relative_score=c.get("minRelativeScore"),
        fusion=c.get("fusion", "RANK"),  # records made before score fusion existed were fused by rank
    )


def _key(i: RecordedItem) -> tuple[str, str, str]:
    return (i.kind, i.passage_id or i.document_id, i.sha256)


def diff_items(
    old: list[RecordedItem], new: list[RecordedItem]
) -> tuple[list[RecordedItem], list[RecordedItem], list[Moved], int]:
    """``(added, removed, moved, unchanged count)`` between two item lists, keyed by
    (kind, passage or document id, SHA-256); ``moved`` keeps old and new ranks."""
    old_at = {_key(i): i for i in old}
    new_at = {_key(i): i for i in new}
    added = [i for i in new if _key(i) not in old_at]
    removed = [i for i in old if _key(i) not in new_at]
    moved = [
        Moved(i, old_at[_key(i)].rank, i.rank) for i in new if _key(i) in old_at and old_at[_key(i)].rank != i.rank
    ]
    same = sum(1 for i in new if _key(i) in old_at and old_at[_key(i)].rank == i.rank)
    return added, removed, moved, same


async def verify_items(
    services: ServicesPort, principal: Principal, items: list[RecordedItem], context_set_id: str | None = None
) -> list[ItemCheck]:
    """Check each recorded item against its document's version, or its context-set entry, as
    of now (module doc). ``context_set_id``: the pack's set (its ``contextSetId``, else the
    credential's binding), which required evidence was recorded under."""
    if not items:
        return []
    now = utcnow()
    entries = [_recorded_entry(i, context_set_id) for i in items if i.kind in SET_KINDS]
    doc_ids = sorted({i.document_id for i in items if i.kind not in APPROVED_KINDS})
    can_read = "document:read" in principal.permissions
    async with services.db.session() as s:
        set_checks = iter(await check_entries(s, principal, entries))
        live = {
            d: coll
            for d, coll in (
                await s.execute(
                    select(col(Document.id), col(Document.collection_id))
                    .join(Collection, col(Collection.id) == col(Document.collection_id))
                    .where(
                        col(Document.id).in_(doc_ids),
                        col(Document.workspace_id) == principal.workspace_id,
                        col(Document.deleted_at).is_(None),
                        col(Collection.deleted_at).is_(None),
                    )
                )
            ).all()
            # not readable now (issue 32 item 8): a bound credential reads only its set's current scope
            if can_read and principal.may_read(coll, d)
        }
        rows = (
            await s.execute(
                select(
                    col(DocumentVersion.id),
                    col(DocumentVersion.document_id),
                    col(DocumentVersion.number),
                    col(DocumentVersion.valid_from),
                    col(DocumentVersion.valid_to),
                    col(DocumentVersion.recorded_at),
                    col(DocumentVersion.content_sha256),
                ).where(col(DocumentVersion.document_id).in_(sorted(live)))
            )
        ).all()
        current = choose_versions([VersionMeta(*r[:6]) for r in rows], valid_time=now, system_time=now)
        content_sha = {r[0]: r[6] for r in rows}
        cur_ids = sorted({v.id for v in current.values()})
        held: set[tuple[str, str, str]] = set()
        if cur_ids:
            for vid, pid, sha in (
                await s.execute(
                    select(col(VersionPassage.version_id), col(VersionPassage.passage_id), col(Passage.sha256))
                    .join(Passage, col(Passage.id) == col(VersionPassage.passage_id))
                    .where(col(VersionPassage.version_id).in_(cur_ids))
                )
            ).all():
                held.add((vid, pid, sha))
            for vid, sha in (
                await s.execute(
                    select(col(TemporalStatement.version_id), col(TemporalStatement.sha256)).where(
                        col(TemporalStatement.version_id).in_(cur_ids)
                    )
                )
            ).all():
                held.add((vid, "", sha))
    out: list[ItemCheck] = []
    for it in items:
        if it.kind in SET_KINDS:
            entry = next(set_checks)
            if entry.status != "REQUIRED":  # an approved entry, or required evidence the set dropped
                out.append(ItemCheck(it, entry.status, entry.current))
                continue
        view = current.get(it.document_id)
        if view is None:
            out.append(ItemCheck(it, "UNAVAILABLE", None))
            continue
        if view.id == it.version_id:
            same = True
        elif it.passage_id is None and it.kind in ("WHOLE_DOCUMENT", "REQUIRED_EVIDENCE"):
            same = content_sha.get(view.id) == it.sha256
        elif it.kind == "FACT":
            same = (view.id, "", it.sha256) in held
        else:
            same = (view.id, it.passage_id or "", it.sha256) in held
        out.append(ItemCheck(it, "UNCHANGED" if same else "CHANGED", view.id))
    return out


SET_KINDS = frozenset({"VERIFIED_ANSWER", "DEFINITION", "INSTRUCTION", "REQUIRED_EVIDENCE"})
APPROVED_KINDS = frozenset({"VERIFIED_ANSWER", "DEFINITION", "INSTRUCTION"})


def _recorded_entry(i: RecordedItem, context_set_id: str | None) -> RecordedEntry:
    """A set item of the record as :func:`app.contextsets.check_entries` takes it: an approved
    entry was recorded as (set id, ``"<entry id>@<set version>"``, SHA-256 of its text);
    required evidence by its citation, under the pack's set."""
    if i.kind == "REQUIRED_EVIDENCE":
        return RecordedEntry(i.kind, context_set_id or "", document_id=i.document_id, passage_id=i.passage_id)
    entry_id, _, version = i.version_id.partition("@")
    return RecordedEntry(i.kind, i.document_id, entry_id, int(version) if version.isdigit() else 0, i.sha256)
