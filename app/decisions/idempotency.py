"""Idempotency-Key handling of decisions (SPEC §8): the header rule, the request fingerprint,
stored outcomes and their replay (how :class:`~app.decisions.service.DecisionRunner` uses them:
that module's doc, steps 1 and 5).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from cairn.app.core.errors import CairnError, error_class
from cairn.app.core.models import DecisionIdempotency
from cairn.app.decisions.errors import DecisionInProgress, DecisionInputError, IdempotencyKeyReused

IDEMPOTENCY_TTL = timedelta(hours=24)
MAX_KEY_BYTES = 256


def validate_idempotency_key(values: list[str]) -> str | None:
    """The ``Idempotency-Key`` header: absent, or sent once, 1–256 bytes after trimming, no controls.

    Args:
        values: Every value of the header in the request (0, 1 or more).

    Raises:
        DecisionInputError: field ``Idempotency-Key``.
    """
    if not values:
        return None
    if len(values) > 1:
        raise DecisionInputError(
            "the Idempotency-Key header was sent more than once; send it once", field="Idempotency-Key"
        )
    key = values[0].strip(" \t")
    size = len(key.encode("utf-8", "surrogateescape"))
    if not 1 <= size <= MAX_KEY_BYTES:
        raise DecisionInputError(
            f"Idempotency-Key must be 1–{MAX_KEY_BYTES} bytes after trimming (got {size})",
            field="Idempotency-Key",
            limit=f"1-{MAX_KEY_BYTES}",
        )
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in key):
        raise DecisionInputError("Idempotency-Key must not contain control characters", field="Idempotency-Key")
    return key


def body_sha256(raw: bytes) -> str:
    """Hex SHA-256 of the exact request bytes (the idempotency fingerprint)."""
    return hashlib.sha256(raw).hexdigest()


@dataclass
class Outcome:
    """What a create returns: the decision JSON, or the error; ``replayed`` for idempotent replays."""

    decision: dict[str, Any] | None = None
    error: CairnError | None = None
    replayed: bool = False


def error_json(exc: CairnError) -> dict[str, Any]:
    """A storable form of an error (replayed exactly)."""
    return {"code": exc.code, "message": exc.message, "httpStatus": exc.http_status, "extensions": exc.extra}


def error_from_json(data: dict[str, Any]) -> CairnError:
    """The :class:`CairnError` stored by :func:`error_json`."""
    cls = error_class(data["code"], data["httpStatus"])
    return cls(data["message"], **data.get("extensions", {}))


def _outcome_from_record(rec: DecisionIdempotency) -> Outcome:
    body = rec.response_body or {}
    if "decision" in body:
        return Outcome(decision=body["decision"], replayed=True)
    return Outcome(error=error_from_json(body["error"]), replayed=True)


def replay_or_conflict(rec: DecisionIdempotency, sha: str) -> Outcome | None:
    """What a request whose key already has a record gets.

    Returns:
        A 409 ``idempotency_key_reused`` (different body SHA-256), a 409 ``decision_in_progress``
        (still running), or the stored outcome replayed (``replayed=True``).
    """
    if rec.request_sha256 != sha:
        return Outcome(
            error=IdempotencyKeyReused(
                "this Idempotency-Key was used with a different request body; use a new key for a new request",
                field="Idempotency-Key",
            )
        )
    if rec.state == "RUNNING":
        return Outcome(
            error=DecisionInProgress(
                f"the decision for this Idempotency-Key is still running; read it later by id {rec.decision_id}",
                decisionId=rec.decision_id,
            )
        )
    return _outcome_from_record(rec)
