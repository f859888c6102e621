"""Replay a recorded pack: ``VERIFY`` its items against current documents, or ``RECOMPUTE`` it.

A replay record (written by :func:`app.packs.stream_pack`, compact form of
:mod:`app.packs.replay_codec`) keeps the pack's conditions and, per item, the citation's ids,
span and SHA-256 — never text. Rules:

- Only the credential (or member) that made the pack, in its workspace, can replay it; any
  other caller gets ``NOT_FOUND`` (as if the id did not exist).
- Records expire 30 days after the pack: ``AGENT_REPLAY_EXPIRED`` (410) until purged
  (:func:`purge_replays`, run at start-up and then every
  ``CAIRN_REPLAY_PURGE_INTERVAL_SECONDS`` by :func:`purge_replays_every`), ``NOT_FOUND`` after.
- A non-retaining workspace keeps no records, so every replay there is ``NOT_FOUND`` with
  ``reason: NOT_RETAINED`` and a message saying so.

``VERIFY`` — per recorded item, against the document's version as of now:
``UNAVAILABLE`` (document deleted, collection deleted, no version valid now, or not readable
by the caller), ``UNCHANGED`` (the current version still holds the cited text: the same
version, the same passage with the same SHA-256 — possibly at another offset — or, for a
whole document, the same content hash; for a ``FACT`` the same statement hash), else
``CHANGED``. Each check carries the current version id (null when unavailable).

``RECOMPUTE`` — rebuilds the pack with the recorded conditions (both asOf times, filters,
sources, retrieval mode, budget, context set) and the caller's ``task``, whose SHA-256 must
equal the recorded one (the record keeps no text). Returns the new pack and the diff keyed
by (kind, passage or document id, SHA-256): added, removed, moved (old → new rank).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import delete, select

from cairn.app.core.errors import BadInput, NotFound
from cairn.app.core.ids import as_utc, sha256_text, utcnow
from cairn.app.core.models import (
    Collection,
    ContextSet,
    ContextSetEntry,
    Document,
    DocumentVersion,
    Passage,
    ReplayRecord,
    TemporalStatement,
    VersionPassage,
    Workspace,
)
from cairn.app.core.text_rules import require_storable, validate_identifier
from cairn.app.corpus import VersionMeta, choose_versions
from cairn.app.governance import Principal
from cairn.app.packs import Pack, PackRequest, RecordedItem, build_pack, decode_record, legacy_items, recorded_item
from cairn.app.replay.errors import ReplayExpired

log = logging.getLogger("cairn.replay")

REPLAY_MODES = ("VERIFY", "RECOMPUTE")


@dataclass(frozen=True)
class ReplayRequest:
    """``replay(replayId, mode, task)`` input (validated by :func:`validate_replay_request`)."""

    replay_id: str
    mode: str
    task: str | None = None


@dataclass(frozen=True)
class ItemCheck:
    """VERIFY result for one recorded item."""

    item: RecordedItem
    status: str  # UNCHANGED | CHANGED | UNAVAILABLE
    current_version_id: str | None


@dataclass(frozen=True)
class Moved:
    """An item in both packs at different ranks."""

    item: RecordedItem
    old_rank: int
    new_rank: int


@dataclass(frozen=True)
class ReplayResult:
    """What a replay answers; ``checks`` for VERIFY, ``pack`` and the diff for RECOMPUTE."""

    replay_id: str
    pack_id: str
    mode: str
    recorded_at: datetime
    expires_at: datetime
    conditions: dict[str, Any]
    recorded: tuple[RecordedItem, ...]
    checks: tuple[ItemCheck, ...] = ()
    pack: Pack | None = None
    added: tuple[RecordedItem, ...] = ()
    removed: tuple[RecordedItem, ...] = ()
    moved: tuple[Moved, ...] = ()
    unchanged_ranks: int = 0


def validate_replay_request(req: ReplayRequest) -> None:
    """Check the shape: a replay id, a known mode, and a task for RECOMPUTE (1–4,000 chars).

    Raises:
        BadInput: naming ``replayId``, ``mode`` or ``task``.
    """
    validate_identifier(req.replay_id, "replayId")
    if req.mode not in REPLAY_MODES:
        raise BadInput(f"mode must be one of {REPLAY_MODES} (got {req.mode!r})", field="mode")
    if req.task is not None:
        require_storable(req.task, "task")
        if not 1 <= len(req.task) <= 4000:
            raise BadInput("task must be 1–4,000 characters", field="task", limit="1-4000")
    if req.mode == "RECOMPUTE" and req.task is None:
        raise BadInput(
            "task is required for RECOMPUTE: replay records keep only the task's SHA-256, never its text",
            field="task",
        )


def replay_request_from_json(replay_id: str, body: Any) -> ReplayRequest:
    """``POST /v1/replays/{replayId}`` body ``{"mode": "VERIFY"|"RECOMPUTE", "task"?: str}``.

    Raises:
        BadInput: not an object, unknown members, wrong types.
    """
    if not isinstance(body, dict):
        raise BadInput("the body must be a JSON object {mode, task?}", field="body")
    unknown = sorted(set(body) - {"mode", "task"})
    if unknown:
        raise BadInput(f"unknown body members {unknown}; allowed: mode, task", field=unknown[0])
    mode, task = body.get("mode"), body.get("task")
    if not isinstance(mode, str):
        raise BadInput("mode must be a string: VERIFY or RECOMPUTE", field="mode")
    if task is not None and not isinstance(task, str):
        raise BadInput("task must be a string", field="task")
    req = ReplayRequest(replay_id, mode, task)
    validate_replay_request(req)
    return req


async def _load(services, principal: Principal, replay_id: str) -> ReplayRecord:
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


async def replay_pack(services, principal: Principal, req: ReplayRequest) -> ReplayResult:
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
    base = dict(
        replay_id=rec.id,
        pack_id=rec.pack_id,
        mode=req.mode,
        recorded_at=as_utc(rec.created_at),
        expires_at=as_utc(rec.expires_at),
        conditions=conditions,
        recorded=tuple(items),
    )
    if req.mode == "VERIFY":
        return ReplayResult(**base, checks=tuple(await verify_items(services, principal, items)))
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


async def verify_items(services, principal: Principal, items: list[RecordedItem]) -> list[ItemCheck]:
    """Check each recorded item against its document's version as of now (module doc)."""
    if not items:
        return []
    now = utcnow()
    doc_ids = sorted({i.document_id for i in items})
    can_read = "document:read" in principal.permissions
    async with services.db.session() as s:
        live = set(
            (
                await s.execute(
                    select(Document.id)
                    .join(Collection, Collection.id == Document.collection_id)
                    .where(
                        Document.id.in_(doc_ids),
                        Document.workspace_id == principal.workspace_id,
                        Document.deleted_at.is_(None),
                        Collection.deleted_at.is_(None),
                    )
                )
            ).scalars()
        )
        rows = (
            await s.execute(
                select(
                    DocumentVersion.id,
                    DocumentVersion.document_id,
                    DocumentVersion.number,
                    DocumentVersion.valid_from,
                    DocumentVersion.valid_to,
                    DocumentVersion.recorded_at,
                    DocumentVersion.content_sha256,
                ).where(DocumentVersion.document_id.in_(sorted(live)))
            )
        ).all()
        current = choose_versions([VersionMeta(*r[:6]) for r in rows], valid_time=now, system_time=now)
        content_sha = {r[0]: r[6] for r in rows}
        cur_ids = sorted({v.id for v in current.values()})
        held: set[tuple[str, str, str]] = set()
        if cur_ids:
            for vid, pid, sha in (
                await s.execute(
                    select(VersionPassage.version_id, VersionPassage.passage_id, Passage.sha256)
                    .join(Passage, Passage.id == VersionPassage.passage_id)
                    .where(VersionPassage.version_id.in_(cur_ids))
                )
            ).all():
                held.add((vid, pid, sha))
            for vid, sha in (
                await s.execute(
                    select(TemporalStatement.version_id, TemporalStatement.sha256).where(
                        TemporalStatement.version_id.in_(cur_ids)
                    )
                )
            ).all():
                held.add((vid, "", sha))
        set_state = await _set_entries_now(s, principal, [i for i in items if i.kind in SET_KINDS])
    out: list[ItemCheck] = []
    for it in items:
        if it.kind in SET_KINDS:  # an approved context-set entry: recorded as set id, entry id@version
            out.append(ItemCheck(it, set_state.get(it.version_id, "UNAVAILABLE"), None))
            continue
        view = current.get(it.document_id) if can_read and it.document_id in live else None
        if view is None:
            out.append(ItemCheck(it, "UNAVAILABLE", None))
            continue
        if view.id == it.version_id:
            same = True
        elif it.kind == "WHOLE_DOCUMENT":
            same = content_sha.get(view.id) == it.sha256
        elif it.kind == "FACT":
            same = (view.id, "", it.sha256) in held
        else:
            same = (view.id, it.passage_id or "", it.sha256) in held
        out.append(ItemCheck(it, "UNCHANGED" if same else "CHANGED", view.id))
    return out


SET_KINDS = frozenset({"VERIFIED_ANSWER", "DEFINITION", "INSTRUCTION", "REQUIRED_EVIDENCE"})


async def _set_entries_now(s, principal: Principal, items: list[RecordedItem]) -> dict[str, str]:
    """VERIFY of context-set items, keyed by their recorded ``"<entry id>@<set version>"``:
    UNCHANGED while the entry exists in its active set and the set is at that version,
    CHANGED when the set has moved on but the entry is still there, else UNAVAILABLE."""
    if not items:
        return {}
    entry_ids = sorted({i.version_id.split("@", 1)[0] for i in items})
    rows = (
        await s.execute(
            select(ContextSetEntry.id, ContextSet.version, ContextSet.active)
            .join(ContextSet, ContextSet.id == ContextSetEntry.context_set_id)
            .where(ContextSetEntry.id.in_(entry_ids), ContextSet.workspace_id == principal.workspace_id)
        )
    ).all()
    now = {eid: (version, active) for eid, version, active in rows}
    out: dict[str, str] = {}
    for i in items:
        eid, _, version = i.version_id.partition("@")
        state = now.get(eid)
        bound_elsewhere = principal.context_set_id not in (None, i.document_id)
        if state is None or not state[1] or bound_elsewhere:
            out[i.version_id] = "UNAVAILABLE"
        else:
            out[i.version_id] = "UNCHANGED" if str(state[0]) == version else "CHANGED"
    return out


PURGE_BATCH = 1000
"""Expired replay records deleted per transaction by :func:`purge_replays`."""


async def purge_expired_replays(s, now: datetime | None = None, *, limit: int | None = None) -> int:
    """Delete replay records whose 30 days have passed (``expires_at`` at or before ``now``,
    default the current time) in session ``s``, at most ``limit`` of them (oldest expiry
    first; None: all); returns how many were deleted."""
    cut = now or utcnow()
    q = select(ReplayRecord.id).where(ReplayRecord.expires_at <= cut).order_by(ReplayRecord.expires_at)
    if limit is not None:
        q = q.limit(limit)
    ids = list((await s.execute(q)).scalars().all())
    for i in range(0, len(ids), 500):
        await s.execute(delete(ReplayRecord).where(ReplayRecord.id.in_(ids[i : i + 500])))
    return len(ids)


async def purge_replays(db, now: datetime | None = None) -> int:
    """Delete every expired replay record, :data:`PURGE_BATCH` per transaction (so a large
    backlog never holds one long write lock); returns how many were deleted."""
    total = 0
    while True:
        async with db.session() as s:
            n = await purge_expired_replays(s, now, limit=PURGE_BATCH)
        total += n
        if n < PURGE_BATCH:
            return total


async def purge_replays_every(
    db, interval_seconds: float, *, on_purge: Callable[[int, datetime], None] | None = None
) -> None:
    """Run until cancelled (the serve lifespan's background task): every ``interval_seconds``
    (setting ``CAIRN_REPLAY_PURGE_INTERVAL_SECONDS``) :func:`purge_replays`, then
    ``on_purge(deleted, when)``. A failed run is logged and the loop goes on; at most one run
    at a time (each waits for the previous to finish, then the full interval)."""
    while True:
        await asyncio.sleep(interval_seconds)
        try:
            when = utcnow()
            n = await purge_replays(db, when)
        except Exception:
            log.exception("periodic replay purge failed")
            continue
        if on_purge is not None:
            on_purge(n, when)


def _item_json(i: RecordedItem) -> dict[str, Any]:
    return {
        "rank": i.rank,
        "kind": i.kind,
        "citation": {
            "documentId": i.document_id,
            "versionId": i.version_id,
            "passageId": i.passage_id,
            "start": i.start,
            "end": i.end,
            "sha256": i.sha256,
        },
    }


def result_json(r: ReplayResult) -> dict[str, Any]:
    """A replay result as JSON (the HTTP route's body; field names as in GraphQL)."""
    from cairn.app.packs import event_json

    out: dict[str, Any] = {
        "replayId": r.replay_id,
        "packId": r.pack_id,
        "mode": r.mode,
        "recordedAt": r.recorded_at.isoformat(),
        "expiresAt": r.expires_at.isoformat(),
        "conditions": r.conditions,
    }
    if r.mode == "VERIFY":
        out["items"] = [
            {**_item_json(c.item), "status": c.status, "currentVersionId": c.current_version_id} for c in r.checks
        ]
    else:
        assert r.pack is not None
        out["pack"] = {
            "packId": r.pack.header.pack_id,
            "replayId": r.pack.header.replay_id,
            "items": [event_json(i) for i in r.pack.items],
        }
        out["diff"] = {
            "added": [_item_json(i) for i in r.added],
            "removed": [_item_json(i) for i in r.removed],
            "moved": [{**_item_json(m.item), "oldRank": m.old_rank, "newRank": m.new_rank} for m in r.moved],
            "unchanged": r.unchanged_ranks,
        }
    return out
