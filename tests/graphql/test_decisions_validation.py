"""Decision API requests refused before acceptance, on the live server (SQLite: validation does not reach the database):
the body validation matrix (state/session_id, questions, choices, levels, JSON limits, size)
and request-level refusals (query parameters, Idempotency-Key header shape, content type);
no decision is created for any of them."""

from __future__ import annotations

import json

import pytest

from tests.graphql.decisions_helpers import Q_BOOL, body, code_of, decider, err_of, post


def q(**over) -> dict:
    d = dict(Q_BOOL)
    d.update(over)
    return {k: v for k, v in d.items() if v is not ...}


def _choices(n: int) -> list:
    return [{"value": f"v{i}"} for i in range(n)]


# (label, request body (dict or raw bytes), expected status, expected code, expected field)
MATRIX = [
    ("state and session_id", body(session_id="sess_x"), 400, "invalid_decision_input", "state"),
    ("neither state nor session_id", {"questions": [Q_BOOL]}, 400, "invalid_decision_input", "state"),
    ("state null is not absent", {"state": None, "questions": [Q_BOOL]}, 400, "invalid_decision_input", "state"),
    (
        "state null beside session_id",
        {"state": None, "session_id": "s", "questions": [Q_BOOL]},
        400,
        "invalid_decision_input",
        "state",
    ),
    ("session_id null", {"session_id": None, "questions": [Q_BOOL]}, 400, "invalid_decision_input", "session_id"),
    ("empty state", body(state={}), 400, "invalid_decision_input", "state"),
    ("state not an object", body(state=["a"]), 400, "invalid_decision_input", "state"),
    (
        "reserved state.session_context",
        body(state={"session_context": 1}),
        400,
        "invalid_decision_input",
        "state.session_context",
    ),
    (
        "case-sensitive Session_id",
        {"Session_id": "s", "questions": [Q_BOOL]},
        400,
        "invalid_decision_input",
        "Session_id",
    ),
    (
        "case-sensitive Questions",
        {"state": {"a": 1}, "Questions": [Q_BOOL]},
        400,
        "invalid_decision_input",
        "Questions",
    ),
    ("unknown protocol field model", body(model="gpt"), 400, "invalid_decision_input", "model"),
    ("unknown protocol field identity_id", body(identity_id="i"), 400, "invalid_decision_input", "identity_id"),
    (
        "GraphQL's sessionId on the wire",
        {"sessionId": "s", "questions": [Q_BOOL]},
        400,
        "invalid_decision_input",
        "sessionId",
    ),
    (
        "session_id with slash",
        {"session_id": "a/b", "questions": [Q_BOOL]},
        400,
        "invalid_decision_input",
        "session_id",
    ),
    (
        "session_id with whitespace",
        {"session_id": " s", "questions": [Q_BOOL]},
        400,
        "invalid_decision_input",
        "session_id",
    ),
    (
        "session_id over 256 bytes",
        {"session_id": "s" * 257, "questions": [Q_BOOL]},
        400,
        "invalid_decision_input",
        "session_id",
    ),
    ("session_id a number", {"session_id": 5, "questions": [Q_BOOL]}, 400, "invalid_decision_input", "session_id"),
    ("questions missing", {"state": {"a": 1}}, 400, "invalid_decision_input", "questions"),
    ("questions empty", body(questions=[]), 400, "invalid_decision_input", "questions"),
    ("questions not an array", body(questions={"a": 1}), 400, "invalid_decision_input", "questions"),
    (
        "GraphQL's upper-case type",
        body(questions=[q(type="CHOICE")]),
        400,
        "invalid_decision_input",
        "questions[0].type",
    ),
    ("type missing", body(questions=[q(type=...)]), 400, "invalid_decision_input", "questions[0].type"),
    ("unknown question field", body(questions=[q(model="x")]), 400, "invalid_decision_input", "questions[0].model"),
    (
        "instructions missing",
        body(questions=[q(instructions=...)]),
        400,
        "invalid_decision_input",
        "questions[0].instructions",
    ),
    (
        "instructions empty",
        body(questions=[q(instructions="  ")]),
        400,
        "invalid_decision_input",
        "questions[0].instructions",
    ),
    (
        "instructions null",
        body(questions=[q(instructions=None)]),
        400,
        "invalid_decision_input",
        "questions[0].instructions",
    ),
    ("name empty", body(questions=[q(name="")]), 400, "invalid_decision_input", "questions[0].name"),
    ("name null", body(questions=[q(name=None)]), 400, "invalid_decision_input", "questions[0].name"),
    ("name over 128 bytes", body(questions=[q(name="é" * 65)]), 400, "invalid_decision_input", "questions[0].name"),
    ("name with control char", body(questions=[q(name="a\tb")]), 400, "invalid_decision_input", "questions[0].name"),
    ("duplicate names", body(questions=[q(), q()]), 400, "invalid_decision_input", "questions[1].name"),
    (
        "choices on a score question",
        body(questions=[q(type="score", levels=[{"label": "a", "score": 0}, {"label": "b", "score": 1}])]),
        400,
        "invalid_decision_input",
        "questions[0].choices",
    ),
    (
        "levels on a choice question",
        body(questions=[q(levels=[{"label": "a", "score": 0}])]),
        400,
        "invalid_decision_input",
        "questions[0].levels",
    ),
    ("choices missing", body(questions=[q(choices=...)]), 400, "invalid_decision_input", "questions[0].choices"),
    ("one choice", body(questions=[q(choices=_choices(1))]), 400, "invalid_decision_input", "questions[0].choices"),
    ("33 choices", body(questions=[q(choices=_choices(33))]), 400, "invalid_decision_input", "questions[0].choices"),
    (
        "number as choice value",
        body(questions=[q(choices=[{"value": 1}, {"value": "b"}])]),
        400,
        "invalid_decision_input",
        "questions[0].choices[0].value",
    ),
    (
        "null as choice value",
        body(questions=[q(choices=[{"value": "a"}, {"value": None}])]),
        400,
        "invalid_decision_input",
        "questions[0].choices[1].value",
    ),
    (
        "empty choice value",
        body(questions=[q(choices=[{"value": ""}, {"value": "b"}])]),
        400,
        "invalid_decision_input",
        "questions[0].choices[0].value",
    ),
    (
        "duplicate choice value",
        body(questions=[q(choices=[{"value": "a"}, {"value": "a"}])]),
        400,
        "invalid_decision_input",
        "questions[0].choices[1].value",
    ),
    (
        "unknown choice field",
        body(questions=[q(choices=[{"value": "a", "label": "x"}, {"value": "b"}])]),
        400,
        "invalid_decision_input",
        "questions[0].choices[0].label",
    ),
    (
        "choice description null",
        body(questions=[q(choices=[{"value": "a", "description": None}, {"value": "b"}])]),
        400,
        "invalid_decision_input",
        "questions[0].choices[0].description",
    ),
    (
        "level score a string",
        body(
            questions=[
                {
                    "type": "score",
                    "instructions": "x",
                    "levels": [{"label": "a", "score": "0"}, {"label": "b", "score": 1}],
                }
            ]
        ),
        400,
        "invalid_decision_input",
        "questions[0].levels[0].score",
    ),
    (
        "level score boolean",
        body(
            questions=[
                {
                    "type": "score",
                    "instructions": "x",
                    "levels": [{"label": "a", "score": True}, {"label": "b", "score": 1}],
                }
            ]
        ),
        400,
        "invalid_decision_input",
        "questions[0].levels[0].score",
    ),
    (
        "level label missing",
        body(questions=[{"type": "score", "instructions": "x", "levels": [{"score": 0}, {"label": "b", "score": 1}]}]),
        400,
        "invalid_decision_input",
        "questions[0].levels[0].label",
    ),
    (
        "one level",
        body(questions=[{"type": "score", "instructions": "x", "levels": [{"label": "b", "score": 1}]}]),
        400,
        "invalid_decision_input",
        "questions[0].levels",
    ),
    ("duplicate keys", b'{"state":{"a":1},"state":{"b":2},"questions":[]}', 400, "invalid_decision_input", "body"),
    ("NaN", b'{"state":{"a":NaN},"questions":[]}', 400, "invalid_decision_input", "body"),
    ("Infinity", b'{"state":{"a":Infinity},"questions":[]}', 400, "invalid_decision_input", "body"),
    ("number over the double range", b'{"state":{"a":1e999},"questions":[]}', 400, "invalid_decision_input", "body"),
    ("control character", b'{"state":{"a":"x\\u0007"},"questions":[]}', 400, "invalid_decision_input", "state.a"),
    (
        "nesting 17",
        json.dumps({"state": json.loads('{"a":' * 16 + "1" + "}" * 16), "questions": []}).encode(),
        400,
        "invalid_decision_input",
        "state",
    ),
    (
        "1,001 members",
        json.dumps(body(state={f"k{i}": i for i in range(1001)})).encode(),
        400,
        "invalid_decision_input",
        "body",
    ),
    (
        "1,001 array items",
        json.dumps(body(state={"a": list(range(1001))})).encode(),
        400,
        "invalid_decision_input",
        "state.a",
    ),
    ("not UTF-8", b'{"state":{"a":"\xff"}}', 400, "invalid_decision_input", "body"),
    ("not an object", b'[{"state":{}}]', 400, "invalid_decision_input", "body"),
    ("not JSON", b'{"state":', 400, "invalid_decision_input", "body"),
    ("over 1 MiB", json.dumps(body(state={"p": "x" * (1024 * 1024)})).encode(), 413, "request_too_large", "body"),
]


@pytest.mark.parametrize("label,req,status,code,field", MATRIX, ids=[m[0] for m in MATRIX])
def test_validation_matrix(live, label, req, status, code, field):
    r = post(live, req, token=decider(live))
    assert r.status_code == status, (label, r.text[:400])
    err = err_of(r)
    assert (err["code"], err["type"]) == (code, "request_too_large" if status == 413 else "invalid_request_error")
    assert err["field"].startswith(field), (label, err)
    assert "decision_id" not in err  # refused before acceptance: no decision exists
    assert r.json()["extensions"]["envelope"]["coordinate"] == "G1.U2.P2.Z1.A1"


@pytest.mark.parametrize(
    "label,headers,path,ctype,status,code",
    [
        ("query parameter", [], "/api/v1/decisions?model=x", "application/json", 400, "invalid_decision_input"),
        (
            "empty Idempotency-Key",
            [("Idempotency-Key", "")],
            "/api/v1/decisions",
            "application/json",
            400,
            "invalid_decision_input",
        ),
        (
            "Idempotency-Key over 256 bytes",
            [("Idempotency-Key", "k" * 257)],
            "/api/v1/decisions",
            "application/json",
            400,
            "invalid_decision_input",
        ),
        (
            "Idempotency-Key sent twice",
            [("Idempotency-Key", "a"), ("Idempotency-Key", "a")],
            "/api/v1/decisions",
            "application/json",
            400,
            "invalid_decision_input",
        ),
        (
            "form content type",
            [],
            "/api/v1/decisions",
            "application/x-www-form-urlencoded",
            415,
            "unsupported_media_type",
        ),
    ],
)
def test_request_level_refusals(live, label, headers, path, ctype, status, code):
    r = post(live, body(), token=decider(live), headers=headers, path=path, ctype=ctype)
    assert (r.status_code, code_of(r)) == (status, code), (label, r.text[:300])
