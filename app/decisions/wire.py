"""The Decision API's HTTP wire format (seeds/003, the original Decisions API): the one mapping
between it and Cairn's own (GraphQL) spelling, both directions.

Cairn keeps one internal form — the GraphQL conventions: camelCase members (``sessionId``,
``createdAt``), upper-case enums (``CHOICE``, ``COMPLETED``, ``STATE``). Stored decisions
and stored idempotent replays are in that form. ``POST /api/v1/decisions`` and
``GET /api/v1/decisions/{id}`` speak the original API's wire format instead, converted here
and only here:

- **request in** (:data:`WIRE`, passed to :func:`~app.decisions.request.validate_request`):
  ``session_id`` (``sessionId`` is an unknown field on the wire), question ``type``
  ``choice`` | ``score`` (case-sensitive; ``CHOICE`` is refused with 400
  ``invalid_decision_input``). Refusals name the wire fields.
- **decision out** (:func:`decision_to_wire`): snake_case members (``session_id``,
  ``created_at``, ``completed_at``, ``judge_runs``, ``context.omitted_messages``), lower-case
  ``status`` (``running`` | ``completed`` | ``failed``), ``context.mode`` (``state`` |
  ``session``) and question/answer ``type`` (``choice`` | ``score``).
- **error out** (:func:`error_to_wire`): ``{"type": "error", "request_id", "error": {"type",
  "code", "message", "decision_id"?, "field"?, "limit"?, "retry_after"?}}`` at the error's
  HTTP status. ``error.type`` is the broad class (:func:`error_type`).

Idempotent replays are stored in the internal form and converted on the way out, like fresh
results: nothing stored needs migrating, and GraphQL replays of the same records stay GraphQL.
"""

from __future__ import annotations

import re
from typing import Any

from cairn.app.decisions.request import Dialect

WIRE = Dialect(session_key="session_id", types=("choice", "score"))
"""The wire dialect of the request validator: ``session_id``, ``choice`` | ``score``."""

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    405: "invalid_request_error",
    409: "invalid_request_error",
    413: "request_too_large",
    415: "invalid_request_error",
    429: "rate_limit_error",
}


def snake(name: str) -> str:
    """``createdAt`` → ``created_at`` (already snake names unchanged)."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def _lower(value: Any) -> Any:
    return value.lower() if isinstance(value, str) else value


def _question(q: dict[str, Any]) -> dict[str, Any]:
    return {**q, "type": _lower(q.get("type"))}


def _answer(a: dict[str, Any]) -> dict[str, Any]:
    return {snake(k): (_lower(v) if k == "type" else v) for k, v in a.items()}


def decision_to_wire(decision: dict[str, Any]) -> dict[str, Any]:
    """The wire form of a decision in the internal form (``decision_json``; fresh, stored or replayed).

    Returns:
        ``{id, session_id, source, status, questions, answers, context, error, created_at,
        completed_at, judge, judge_runs}`` with lower-case ``status``, ``context.mode`` and
        ``type`` values (module doc); members not listed are converted to snake_case.
    """
    out: dict[str, Any] = {}
    for key, value in decision.items():
        if key == "status":
            value = _lower(value)
        elif key == "questions":
            value = [_question(q) for q in value or []]
        elif key == "answers":
            value = [_answer(a) for a in value or []]
        elif key == "context":
            value = {snake(k): (_lower(v) if k == "mode" else v) for k, v in (value or {}).items()}
        elif key == "error" and value is not None:
            value = {snake(k): v for k, v in value.items()}
            value.setdefault("decision_id", decision.get("id"))
        out[snake(key)] = value
    return out


def error_type(status: int) -> str:
    """The wire ``error.type`` (the broad class) of an HTTP status: ``invalid_request_error`` (400,
    405, 409, 415), ``authentication_error`` (401), ``permission_error`` (403), ``not_found_error`` (404),
    ``request_too_large`` (413), ``rate_limit_error`` (429), else ``api_error`` (402, 422, 499, 5xx —
    the seed's example type for a failed decision)."""
    return _ERROR_TYPES.get(status, "api_error")


def error_to_wire(status: int, message: str, extensions: dict[str, Any], request_id: str | None) -> dict[str, Any]:
    """The wire error body from a Cairn error's status, message and ``extensions`` (``code`` + extras).

    ``decisionId`` → ``error.decision_id`` (failures after acceptance, ``decision_in_progress``),
    ``retryAfter`` → ``error.retry_after``; ``field`` as raised (the validator and the session
    lookup name the field as the caller spelled it, :data:`WIRE`).
    """
    err: dict[str, Any] = {"type": error_type(status), "code": extensions.get("code"), "message": message}
    for key, value in extensions.items():
        if key == "code":
            continue
        err[snake(key)] = value
    return {"type": "error", "request_id": request_id, "error": err}
