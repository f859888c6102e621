"""Decision API wire format on the live server (SQLite: the wire format does not depend on the database): authentication and
scope refusals, the original API's documented examples (seeds/003) sent byte for byte (the
state example judged and replayed, the session example, the documented error shapes) and a
wrong method answered in the wire format rather than the GraphQL envelope."""

from __future__ import annotations

import json

from tests import local_http
from tests.graphql.decisions_helpers import SESSION_CREATE, body, code_of, decider, err_of, post


def test_auth_and_scope_refusals(live):
    r = post(live, body())
    assert (r.status_code, code_of(r)) == (401, "UNAUTHENTICATED")
    r = post(live, body(), token=live.tokens["agent"])  # no decisions:run
    assert (r.status_code, code_of(r)) == (403, "AGENT_SCOPE_MISSING")
    r = post(live, body(), token=live.tokens["viewer"])  # members need agent:run (editor)
    assert r.status_code == 403
    r = post(live, body(), token=decider(live), headers=[("Origin", "https://evil.example")])
    assert (r.status_code, code_of(r)) == (403, "AGENT_BROWSER_REQUEST_REFUSED")


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
