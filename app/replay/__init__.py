"""Replay of recorded context packs (SPEC §3): VERIFY and RECOMPUTE, and the purge of expired
replay records. Request and result shapes: :mod:`app.replay.types`; the replay itself:
:mod:`app.replay.operations`; the purge: :mod:`app.replay.retention`.

Public surface: other packages import only the names below (import-linter contract in
pyproject.toml).
"""

from cairn.app.replay.errors import ReplayExpired
from cairn.app.replay.operations import replay_pack
from cairn.app.replay.retention import purge_expired_replays, purge_replays, purge_replays_every
from cairn.app.replay.types import (
    REPLAY_MODES,
    ItemCheck,
    Moved,
    ReplayRequest,
    ReplayResult,
    replay_request_from_json,
    result_json,
    validate_replay_request,
)

__all__ = [
    "REPLAY_MODES",
    "ItemCheck",
    "Moved",
    "ReplayExpired",
    "ReplayRequest",
    "ReplayResult",
    "purge_expired_replays",
    "purge_replays",
    "purge_replays_every",
    "replay_pack",
    "replay_request_from_json",
    "result_json",
    "validate_replay_request",
]
