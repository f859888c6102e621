"""Replay's errors: one class per code, each with its HTTP status."""

from __future__ import annotations

from cairn.app.core.errors import Gone


class ReplayExpired(Gone):
    """The replay record is past its 30 days and not purged yet (410 ``AGENT_REPLAY_EXPIRED``, ``field`` replayId)."""

    code = "AGENT_REPLAY_EXPIRED"
