"""The Decision API's wire mapping (app/decisions/wire.py), both directions, on records in the
internal form as stored before and after the wire format (no database: pure functions)."""

from __future__ import annotations

import pytest

from cairn.app.decisions import WIRE, DecisionInputError, decision_to_wire, error_to_wire, validate_request

STORED = {  # a decision as decision_json / a stored idempotent replay holds it (camelCase)
    "id": "dec_1",
    "sessionId": "sess_1",
    "source": "api",
    "status": "FAILED",
    "questions": [{"type": "SCORE", "instructions": "x", "levels": [{"label": "a", "score": 0}]}],
    "answers": [{"type": "SCORE", "name": None, "score": 0, "label": "a", "probabilities": []}],
    "context": {"mode": "SESSION", "tokens": 3, "messages": 1, "omittedMessages": 0},
    "error": {"code": "decision_timeout", "message": "late"},
    "judge": "local:x",
    "judgeRuns": 1,
    "createdAt": "2026-10-26T10:00:00Z",
    "completedAt": "2026-10-26T10:00:02Z",
}


def test_stored_camel_case_decision_leaves_in_the_wire_format():
    w = decision_to_wire(STORED)
    assert set(w) == {
        "id",
        "session_id",
        "source",
        "status",
        "questions",
        "answers",
        "context",
        "error",
        "judge",
        "judge_runs",
        "created_at",
        "completed_at",
    }
    assert (w["status"], w["questions"][0]["type"], w["answers"][0]["type"]) == ("failed", "score", "score")
    assert w["context"] == {"mode": "session", "tokens": 3, "messages": 1, "omitted_messages": 0}
    assert w["error"] == {"code": "decision_timeout", "message": "late", "decision_id": "dec_1"}


def test_error_to_wire_matches_the_seed_shape():
    body = error_to_wire(504, "Decision deadline exceeded.", {"code": "decision_timeout", "decisionId": "dec_x"}, "t1")
    assert body == {
        "type": "error",
        "request_id": "t1",
        "error": {
            "type": "api_error",
            "code": "decision_timeout",
            "message": "Decision deadline exceeded.",
            "decision_id": "dec_x",
        },
    }
    e = error_to_wire(404, "session_id: gone", {"code": "NOT_FOUND", "field": "session_id", "retryAfter": 3}, None)
    assert (e["error"]["type"], e["error"]["field"], e["error"]["retry_after"]) == ("not_found_error", "session_id", 3)


def test_wire_requests_validate_to_the_internal_form():
    req = validate_request(
        {
            "session_id": "s1",
            "questions": [{"type": "choice", "instructions": "x", "choices": [{"value": "a"}, {"value": "b"}]}],
        },
        WIRE,
    )
    assert (req.session_id, req.questions[0].type, req.questions[0].raw["type"]) == ("s1", "CHOICE", "CHOICE")
    with pytest.raises(DecisionInputError) as exc:
        validate_request({"sessionId": "s1", "questions": []}, WIRE)
    assert exc.value.extra["field"] == "sessionId" and "session_id" in exc.value.message
    with pytest.raises(DecisionInputError) as exc:
        validate_request({"state": {"a": 1}, "questions": [{"type": "CHOICE", "instructions": "x"}]}, WIRE)
    assert "choice or score" in exc.value.message
