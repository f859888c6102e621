"""Decisions (SPEC §8): request validation, judging, judges (local Gemma, OpenAI-compatible), the
runner with idempotency, agent sessions.

Public surface: other packages import only the names below (import-linter contract in
pyproject.toml).
"""

from cairn.app.decisions.body import MAX_BODY_BYTES, check_json_value, parse_body
from cairn.app.decisions.errors import (
    DecisionBodyTooLarge,
    DecisionInputError,
    DecisionMethodNotAllowed,
    DecisionUnsupportedMediaType,
)
from cairn.app.decisions.idempotency import Outcome, body_sha256, validate_idempotency_key
from cairn.app.decisions.judges import Judge, LocalJudge, OpenAIJudge
from cairn.app.decisions.operations import (
    DecisionSubmission,
    NewSession,
    SessionAppend,
    SessionList,
    SessionRead,
    SessionView,
    append_to_session,
    close_session,
    list_agent_sessions,
    read_decision,
    read_session,
    start_session,
    submit_decision,
)
from cairn.app.decisions.request import validate_request, validate_session_id
from cairn.app.decisions.service import DecisionRunner
from cairn.app.decisions.sessions import (
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
from cairn.app.decisions.wire import WIRE, decision_to_wire, error_to_wire

__all__ = [
    "MAX_BODY_BYTES",
    "MAX_READ",
    "WIRE",
    "DecisionBodyTooLarge",
    "DecisionInputError",
    "DecisionMethodNotAllowed",
    "DecisionRunner",
    "DecisionSubmission",
    "DecisionUnsupportedMediaType",
    "Judge",
    "LocalJudge",
    "MessageIn",
    "NewSession",
    "OpenAIJudge",
    "Outcome",
    "SessionAppend",
    "SessionList",
    "SessionRead",
    "SessionView",
    "append_messages",
    "append_to_session",
    "archive_session",
    "body_sha256",
    "check_json_value",
    "close_session",
    "create_session",
    "decision_to_wire",
    "error_to_wire",
    "get_session",
    "list_agent_sessions",
    "list_sessions",
    "parse_body",
    "read_decision",
    "read_session",
    "recent_messages",
    "start_session",
    "submit_decision",
    "validate_idempotency_key",
    "validate_messages",
    "validate_request",
    "validate_session_id",
    "validate_title",
]
