"""Replay requests and results (SPEC §3): their shapes, the request's validation and the
JSON of a result (the HTTP route's body).

A request names a replay id, a mode (:data:`REPLAY_MODES`) and, for ``RECOMPUTE``, the task;
a result carries the recorded conditions and items plus, for ``VERIFY``, one
:class:`ItemCheck` per item, or, for ``RECOMPUTE``, the new pack and the diff (added,
removed, :class:`Moved`). The replay itself: :mod:`app.replay.operations`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from cairn.app.core.errors import BadInput
from cairn.app.core.text_rules import require_storable, validate_identifier
from cairn.app.packs import Pack, RecordedItem

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
