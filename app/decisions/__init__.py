"""Decisions (SPEC §8): request validation, judging, judges (local Gemma, OpenAI-compatible), the
runner with idempotency, agent sessions.

Public surface: other packages import only the names below (import-linter contract in
pyproject.toml).
"""

from app.decisions.body import MAX_BODY_BYTES, DecisionBodyTooLarge, DecisionInputError, check_json_value, parse_body
from app.decisions.judges import Judge, LocalJudge, OpenAIJudge
from app.decisions.request import validate_request, validate_session_id
from app.decisions.service import DecisionRunner, body_sha256, validate_idempotency_key
from app.decisions.sessions import (
    MAX_READ,
    MessageIn,
    append_messages,
    archive_session,
    create_session,
    get_session,
    list_sessions,
    recent_messages,
    validate_messages,
    validate_title,
)

__all__ = [
    "MAX_BODY_BYTES",
    "MAX_READ",
    "DecisionBodyTooLarge",
    "DecisionInputError",
    "DecisionRunner",
    "Judge",
    "LocalJudge",
    "MessageIn",
    "OpenAIJudge",
    "append_messages",
    "archive_session",
    "body_sha256",
    "check_json_value",
    "create_session",
    "get_session",
    "list_sessions",
    "parse_body",
    "recent_messages",
    "validate_idempotency_key",
    "validate_messages",
    "validate_request",
    "validate_session_id",
    "validate_title",
]
