"""Decision API end to end on the live server (SQLite and PostgreSQL): validation matrix,
sessions, failed decisions read back, idempotency (replay, reuse, 20 concurrent requests),
and real judging by the embedded Gemma 3 270M (loaded once per test session)."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests import local_http
from tests.graphql.conftest import _agent

Q_BOOL = {  # the wire format (seeds/003): lower-case type
    "type": "choice",
    "name": "resolved",
    "instructions": "Has the user confirmed the issue is resolved?",
    "choices": [{"value": True}, {"value": False}],
}


Q_BOOL_GQL = {**Q_BOOL, "type": "CHOICE"}  # GraphQL keeps its upper-case enum


def decider(live) -> str:
    """An agent credential with decisions:run (made once per server)."""
    if "decider" not in live.tokens:
        live.tokens["decider"] = _agent(live, "decider", ["decisions:run"])
        live.tokens["decider2"] = _agent(live, "decider-2", ["decisions:run"])
    return live.tokens["decider"]


def post(
    live,
    body: bytes | dict,
    *,
    token: str | None = None,
    headers: list | None = None,
    path: str = "/api/v1/decisions",
    ctype: str = "application/json",
) -> httpx.Response:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    h = [("Content-Type", ctype)]
    if token:
        h.append(("Authorization", f"Bearer {token}"))
    h.extend(headers or [])
    return local_http.post(f"{live.url}{path}", content=raw, headers=h, timeout=120)


def code_of(r: httpx.Response) -> str:
    """The wire error's code (``{"type": "error", "request_id", "error": {type, code, message, …}}``)."""
    return err_of(r)["code"]


def err_of(r: httpx.Response) -> dict:
    b = r.json()
    assert b["type"] == "error" and set(b) >= {"request_id", "error"}, b
    assert set(b["error"]) >= {"type", "code", "message"}, b
    return b["error"]


def body(**over) -> dict:
    b = {"state": {"message": "My issue is resolved, thanks!"}, "questions": [dict(Q_BOOL)]}
    b.update(over)
    return b


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


def test_auth_and_scope_refusals(live):
    r = post(live, body())
    assert (r.status_code, code_of(r)) == (401, "UNAUTHENTICATED")
    r = post(live, body(), token=live.tokens["agent"])  # no decisions:run
    assert (r.status_code, code_of(r)) == (403, "AGENT_SCOPE_MISSING")
    r = post(live, body(), token=live.tokens["viewer"])  # members need agent:run (editor)
    assert r.status_code == 403
    r = post(live, body(), token=decider(live), headers=[("Origin", "https://evil.example")])
    assert (r.status_code, code_of(r)) == (403, "AGENT_BROWSER_REQUEST_REFUSED")


SESSION_CREATE = """mutation($t:String,$m:[SessionMessageInput!]){createSession(title:$t,messages:$m){
  id title messageCount archived messages{ordinal role content}}}"""


def test_sessions_create_append_archive_read_and_privacy(live):
    token = decider(live)
    s = live.data(SESSION_CREATE, {"t": "support chat", "m": [{"role": "user", "content": "Hello"}]}, token)[
        "createSession"
    ]
    assert s["messageCount"] == 1 and s["messages"] == [{"ordinal": 1, "role": "user", "content": "Hello"}]
    a = live.data(
        """mutation($s:ID!,$m:[SessionMessageInput!]!){appendSessionMessages(sessionId:$s,messages:$m){
        messageCount messages{ordinal role content}}}""",
        {"s": s["id"], "m": [{"role": "assistant", "content": "Hi!"}, {"role": "user", "content": "Bye"}]},
        token,
    )["appendSessionMessages"]
    assert a["messageCount"] == 3 and [m["ordinal"] for m in a["messages"]] == [1, 2, 3]
    got = live.data("query($s:ID!){session(id:$s,lastMessages:2){messages{content}}}", {"s": s["id"]}, token)
    assert [m["content"] for m in got["session"]["messages"]] == ["Hi!", "Bye"]
    bad = live.gql(
        """mutation($s:ID!,$m:[SessionMessageInput!]!){appendSessionMessages(sessionId:$s,messages:$m){id}}""",
        {"s": s["id"], "m": [{"role": "robot", "content": "x"}]},
        token,
    ).json()
    assert bad["errors"][0]["extensions"]["field"] == "messages[0].role"
    # the same member's other credential sees it; another member's agent does not
    other = live.data("query{sessions{id}}", None, live.tokens["decider2"])["sessions"]
    assert s["id"] in [x["id"] for x in other]
    stranger = _agent(live, "stranger", ["decisions:run"], token=live.tokens["admin"])
    r = live.gql("query($s:ID!){session(id:$s){id}}", {"s": s["id"]}, stranger).json()
    assert r["errors"][0]["extensions"]["code"] == "NOT_FOUND"
    r = post(live, {"session_id": s["id"], "questions": [Q_BOOL]}, token=stranger)
    assert (r.status_code, err_of(r)["field"]) == (404, "session_id")
    arch = live.data("mutation($s:ID!){archiveSession(id:$s){archived}}", {"s": s["id"]}, token)
    assert arch["archiveSession"]["archived"] is True
    r = live.gql(
        """mutation($s:ID!,$m:[SessionMessageInput!]!){appendSessionMessages(sessionId:$s,messages:$m){id}}""",
        {"s": s["id"], "m": [{"role": "user", "content": "x"}]},
        token,
    ).json()
    assert r["errors"][0]["extensions"]["code"] == "SESSION_ARCHIVED"
    r = post(live, {"session_id": s["id"], "questions": [Q_BOOL]}, token=token)
    assert r.status_code == 404 and "archived" in err_of(r)["message"]
    assert s["id"] not in [x["id"] for x in live.data("query{sessions{id}}", None, token)["sessions"]]


def test_failure_after_acceptance_carries_decision_id_and_reads_back_failed(live):
    token = decider(live)
    sid = live.data(SESSION_CREATE, {"t": "empty"}, token)["createSession"]["id"]
    r = post(live, {"session_id": sid, "questions": [Q_BOOL]}, token=token)
    assert (r.status_code, code_of(r), err_of(r)["type"]) == (422, "decision_context_unavailable", "api_error")
    dec_id = err_of(r)["decision_id"]
    got = local_http.get(
        f"{live.url}/api/v1/decisions/{dec_id}", headers={"Authorization": f"Bearer {token}"}, timeout=30
    )
    assert got.status_code == 200
    d = got.json()
    assert (d["status"], d["error"]["code"], d["session_id"], d["context"]["mode"], d["judge_runs"]) == (
        "failed",
        "decision_context_unavailable",
        sid,
        "session",
        0,
    )
    assert d["questions"][0]["type"] == "choice" and d["created_at"].endswith("Z") and d["completed_at"]
    r = post(live, body(state={"text": "word " * 2000}), token=token)
    assert (r.status_code, code_of(r)) == (422, "decision_context_too_large")
    g = live.data(
        "query($i:ID!){decision(id:$i){status error{code} context{mode}}}", {"i": err_of(r)["decision_id"]}, token
    )["decision"]
    assert g == {"status": "FAILED", "error": {"code": "decision_context_too_large"}, "context": {"mode": "STATE"}}
    # another member's agent cannot read it
    r = local_http.get(
        f"{live.url}/api/v1/decisions/{dec_id}",
        headers={"Authorization": f"Bearer {live.tokens['ownerB']}"},
        timeout=30,
    )
    assert r.status_code in (403, 404)


def test_idempotency_replays_validation_errors_and_detects_reuse(live):
    token = decider(live)
    bad = json.dumps(body(model="x")).encode()
    r1 = post(live, bad, token=token, headers=[("Idempotency-Key", "idem-bad-1")])
    r2 = post(live, bad, token=token, headers=[("Idempotency-Key", "idem-bad-1")])
    assert r1.status_code == r2.status_code == 400
    assert r2.headers.get("idempotency-replayed") == "true" and "idempotency-replayed" not in r1.headers
    assert r1.json()["error"] == r2.json()["error"]
    r3 = post(live, bad.replace(b'"x"', b'"y"'), token=token, headers=[("Idempotency-Key", "idem-bad-1")])
    assert (r3.status_code, code_of(r3)) == (409, "idempotency_key_reused")
    # keys are scoped per credential: the other credential's same key is a fresh request
    r4 = post(
        live, bad.replace(b'"x"', b'"y"'), token=live.tokens["decider2"], headers=[("Idempotency-Key", "idem-bad-1")]
    )
    assert (r4.status_code, code_of(r4)) == (400, "invalid_decision_input")


# ------------------------------------------------------------------ with the real judge model


def test_state_decision_with_the_embedded_judge_replay_and_reuse(live):
    token = decider(live)
    raw = json.dumps(
        {
            "state": {"message": "Thanks, my issue is resolved now. Everything works."},
            "questions": [
                Q_BOOL,
                {
                    "type": "score",
                    "name": "mood",
                    "instructions": "How happy is the user?",
                    "levels": [{"label": "Angry", "score": 0}, {"label": "Happy", "score": 1}],
                },
            ],
        }
    ).encode()
    r = post(live, raw, token=token, headers=[("Idempotency-Key", "idem-ok-1")])
    assert r.status_code == 200, r.text[:500]
    d = r.json()
    assert d["id"].startswith("dec_") and d["status"] == "completed" and d["source"] == "api"
    assert d["context"]["mode"] == "state" and d["session_id"] is None and d["error"] is None
    assert d["judge"] == "local:gemma-3-270m-q4_k_m" and d["judge_runs"] == 1
    a_bool, a_score = d["answers"]
    assert (
        a_score["type"] == "score"
        and a_bool["type"] == "choice"
        and a_bool["name"] == "resolved"
        and a_bool["value"] in (True, False)
    )
    probs = [p["probability"] for p in a_bool["probabilities"]]
    assert abs(sum(probs) - 1) < 1e-4 and a_bool["value"] == [True, False][probs.index(max(probs))]
    assert a_score["score"] in (0, 1) and a_score["label"] in ("Angry", "Happy")
    assert d["extensions"]["envelope"]["status"] == "OK"
    # replay: same key and bytes → the same decision, the judge not run again
    r2 = post(live, raw, token=token, headers=[("Idempotency-Key", "idem-ok-1")])
    assert r2.status_code == 200 and r2.headers["idempotency-replayed"] == "true"
    assert r2.json()["id"] == d["id"] and r2.json()["answers"] == d["answers"]
    # one changed byte (whitespace) → reuse
    r3 = post(live, raw.replace(b'", "', b'","', 1), token=token, headers=[("Idempotency-Key", "idem-ok-1")])
    assert (r3.status_code, code_of(r3)) == (409, "idempotency_key_reused")
    read = local_http.get(
        f"{live.url}/api/v1/decisions/{d['id']}", headers={"Authorization": f"Bearer {token}"}, timeout=30
    ).json()
    assert read["judge_runs"] == 1 and read["answers"] == d["answers"]


def test_twenty_concurrent_identical_requests_run_the_judge_once(live):
    token = decider(live)
    raw = json.dumps(
        {
            "state": {"ticket": "Printer on floor 3 is jammed again."},
            "questions": [
                {
                    "type": "choice",
                    "name": "team",
                    "instructions": "Which team handles it?",
                    "choices": [{"value": "IT support"}, {"value": "Finance"}],
                }
            ],
        }
    ).encode()
    key = [("Idempotency-Key", "idem-race-1")]
    with ThreadPoolExecutor(max_workers=20) as pool:
        results = list(pool.map(lambda _: post(live, raw, token=token, headers=key), range(20)))
    ok = [r for r in results if r.status_code == 200]
    busy = [r for r in results if r.status_code == 409]
    assert len(ok) + len(busy) == 20, [r.text[:200] for r in results if r.status_code not in (200, 409)]
    assert all(code_of(r) == "decision_in_progress" for r in busy)
    ids = {r.json()["id"] for r in ok} | {err_of(r)["decision_id"] for r in busy}
    assert len(ids) == 1  # one decision for all twenty
    dec_id = ids.pop()
    final = post(live, raw, token=token, headers=key)
    assert final.status_code == 200 and final.json()["id"] == dec_id
    read = local_http.get(
        f"{live.url}/api/v1/decisions/{dec_id}", headers={"Authorization": f"Bearer {token}"}, timeout=30
    ).json()
    assert read["judge_runs"] == 1 and read["status"] == "completed"


def test_session_decision_over_graphql(live):
    token = decider(live)
    sid = live.data(
        SESSION_CREATE,
        {
            "t": "refund",
            "m": [
                {"role": "user", "content": "I want a refund for order 42, the blender arrived broken."},
                {"role": "assistant", "content": "Sorry! I have issued a full refund for order 42."},
                {"role": "user", "content": "Great, the refund is all I needed. Thank you!"},
            ],
        },
        token,
    )["createSession"]["id"]
    d = live.data(
        """mutation($i:CreateDecisionInput!){createDecision(input:$i){id status sessionId source
        context{mode messages} answers{type name value probabilities{value probability}} judgeRuns}}""",
        {
            "i": {
                "sessionId": sid,
                "questions": [
                    {
                        "type": "CHOICE",
                        "name": "topic",
                        "instructions": "What is the conversation about?",
                        "choices": [{"value": "refund"}, {"value": "weather"}],
                    }
                ],
            }
        },
        token,
    )["createDecision"]
    assert (d["status"], d["sessionId"], d["source"], d["context"]) == (
        "COMPLETED",
        sid,
        "graphql",
        {"mode": "SESSION", "messages": 3},
    )
    assert d["judgeRuns"] == 1 and d["answers"][0]["value"] in ("refund", "weather")
    r = live.gql(
        "mutation($i:CreateDecisionInput!){createDecision(input:$i){id}}",
        {
            "i": {
                "state": {"a": "x\u0001"},
                "questions": [{"type": "CHOICE", "instructions": "x", "choices": [{"value": 1}, {"value": "b"}]}],
            }
        },
        token,
    ).json()
    assert r["errors"][0]["extensions"]["code"] == "invalid_decision_input"
    r = live.gql(
        "mutation($i:CreateDecisionInput!){createDecision(input:$i){id}}",
        {"i": {"state": None, "sessionId": sid, "questions": [Q_BOOL_GQL]}},
        token,
    ).json()
    assert r["errors"][0]["extensions"]["field"] == "state"


def test_graphql_idempotency_key_replays_the_stored_failure(live):
    token = decider(live)
    sid = live.data(SESSION_CREATE, {"t": "empty-idem"}, token)["createSession"]["id"]
    mutation = "mutation($i:CreateDecisionInput!,$k:String){createDecision(input:$i,idempotencyKey:$k){id}}"
    inp = {"sessionId": sid, "questions": [Q_BOOL_GQL]}
    first = live.gql(mutation, {"i": inp, "k": "gql-idem-1"}, token)
    second = live.gql(mutation, {"i": inp, "k": "gql-idem-1"}, token)
    e1, e2 = first.json()["errors"][0]["extensions"], second.json()["errors"][0]["extensions"]
    assert first.status_code == second.status_code == 422
    assert e1["code"] == e2["code"] == "decision_context_unavailable" and e1["decisionId"] == e2["decisionId"]
    other = live.gql(mutation, {"i": {**inp, "questions": [{**Q_BOOL_GQL, "name": "other"}]}, "k": "gql-idem-1"}, token)
    assert other.json()["errors"][0]["extensions"]["code"] == "idempotency_key_reused"
    bad = live.gql(mutation, {"i": inp, "k": "x" * 300}, token).json()
    assert (bad["errors"][0]["extensions"]["code"], bad["errors"][0]["extensions"]["field"]) == (
        "invalid_decision_input",
        "Idempotency-Key",
    )


# ------------------------------------------------- the original API's documented examples (seeds/003)

# the request bodies exactly as the seed's curl examples send them (-d '…'), byte for byte
SEED_STATE_REQUEST = b"""{
    "state": {"message": "My issue is resolved."},
    "questions": [{
      "type": "choice",
      "name": "resolved",
      "instructions": "Has the user confirmed resolution?",
      "choices": [{"value": true}, {"value": false}]
    }]
  }"""
SEED_SESSION_REQUEST = b"""{
    "session_id": "sess_xxx",
    "questions": [{
      "type": "score",
      "name": "completion",
      "instructions": "Evaluate how completely the user request has been fulfilled.",
      "levels": [
        {"label": "Incomplete", "score": 0, "description": "The requested result is missing."},
        {"label": "Partial", "score": 0.5, "description": "Only part of the request is fulfilled."},
        {"label": "Complete", "score": 1, "description": "All requested results are provided."}
      ]
    }]
  }"""
# the members of the seed's "HTTP 200 OK" example
SEED_DECISION_KEYS = {
    "id",
    "session_id",
    "source",
    "status",
    "questions",
    "answers",
    "context",
    "error",
    "created_at",
    "completed_at",
}


def test_seed_state_example_verbatim_gives_the_documented_decision_and_replays(live):
    token = decider(live)
    key = [("Idempotency-Key", "0b6f9c1e-5d7a-4c1b-9a51-seed-003-state")]
    r = post(live, SEED_STATE_REQUEST, token=token, headers=key)
    assert r.status_code == 200, r.text[:500]
    d = r.json()
    assert set(d) >= SEED_DECISION_KEYS
    assert d["id"].startswith("dec_") and (d["session_id"], d["source"], d["status"]) == (None, "api", "completed")
    assert d["questions"] == json.loads(SEED_STATE_REQUEST)["questions"]  # echoed as sent
    (answer,) = d["answers"]
    assert {k: answer[k] for k in ("type", "name")} == {"type": "choice", "name": "resolved"}
    assert answer["value"] in (True, False)
    assert d["context"]["mode"] == "state" and d["error"] is None
    for stamp in ("created_at", "completed_at"):
        assert d[stamp].endswith("Z") and "T" in d[stamp]
    again = post(live, SEED_STATE_REQUEST, token=token, headers=key)  # the documented retry
    assert again.status_code == 200 and again.headers["idempotency-replayed"] == "true"
    assert {k: v for k, v in again.json().items() if k != "extensions"} == {
        k: v for k, v in d.items() if k != "extensions"
    }
    changed = post(live, SEED_STATE_REQUEST.replace(b"resolved.", b"resolved!"), token=token, headers=key)
    assert (changed.status_code, code_of(changed)) == (409, "idempotency_key_reused")


def test_seed_session_example_verbatim(live):
    token = decider(live)
    r = post(live, SEED_SESSION_REQUEST, token=token)  # sess_xxx does not exist: 404, no decision
    assert r.status_code == 404, r.text[:300]
    assert (err_of(r)["type"], err_of(r)["field"]) == ("not_found_error", "session_id")
    assert "decision_id" not in err_of(r) and r.json()["request_id"]
    sid = live.data(
        SESSION_CREATE,
        {
            "t": "seed",
            "m": [
                {"role": "user", "content": "Please send me the invoice for March and the one for April."},
                {"role": "assistant", "content": "Here are both invoices: March (attached) and April (attached)."},
            ],
        },
        token,
    )["createSession"]["id"]
    r = post(live, SEED_SESSION_REQUEST.replace(b"sess_xxx", sid.encode()), token=token)
    assert r.status_code == 200, r.text[:500]
    d = r.json()
    assert set(d) >= SEED_DECISION_KEYS
    assert (d["session_id"], d["status"], d["context"]["mode"]) == (sid, "completed", "session")
    (answer,) = d["answers"]
    assert (answer["type"], answer["name"]) == ("score", "completion") and answer["score"] in (0, 0.5, 1)
    assert "value" not in answer


def test_seed_error_shape_for_documented_codes(live):
    token = decider(live)
    # 400 invalid_decision_input: an unsupported protocol field, as the seed's error table says
    r = post(live, SEED_STATE_REQUEST.replace(b'"state"', b'"model": "x", "state"'), token=token)
    assert r.status_code == 400
    b = r.json()
    assert b["type"] == "error" and b["request_id"] and b["error"]["type"] == "invalid_request_error"
    assert (b["error"]["code"], b["error"]["field"]) == ("invalid_decision_input", "model")
    # 401 without credentials, same body shape
    r = post(live, SEED_STATE_REQUEST)
    assert r.status_code == 401 and err_of(r)["type"] == "authentication_error"


def test_a_wrong_method_answers_in_the_wire_format(live):
    for method, path, allow in (("PUT", "/api/v1/decisions", "POST"), ("DELETE", "/api/v1/decisions/dec_x", "GET")):
        r = local_http.request(method, f"{live.url}{path}", headers={"Authorization": f"Bearer {live.tokens['agent']}"})
        assert r.status_code == 405 and allow in r.headers["allow"]
        body = r.json()
        assert (body["type"], body["error"]["type"], body["error"]["code"]) == (
            "error",
            "invalid_request_error",
            "method_not_allowed",
        )
        assert body["request_id"] == r.headers["x-cairn-trace"] and "errors" not in body
        assert method in body["error"]["message"]
    # other paths keep the enveloped GraphQL-style body
    r = local_http.put(f"{live.url}/healthz")
    assert r.status_code == 405 and r.json()["errors"][0]["extensions"]["code"] == "METHOD_NOT_ALLOWED"
