"""Decision API idempotency on the live server (SQLite and PostgreSQL): Idempotency-Key replays
(validation errors, judged decisions, stored failures over GraphQL), key reuse with changed
bytes, keys scoped per credential, and 20 concurrent identical requests running the judge
once (the embedded Gemma 3 270M, loaded once per test session)."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests import local_http
from tests.graphql.decisions_helpers import (
    Q_BOOL,
    Q_BOOL_GQL,
    SESSION_CREATE,
    body,
    code_of,
    decider,
    err_of,
    post,
)

pytestmark = pytest.mark.both_backends  # idempotency keys: stored replies, conflicting concurrent writes


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
