"""Decision API sessions on the live server (SQLite and PostgreSQL): create, append, archive,
read and privacy across members; a decision that fails after acceptance (a session without
messages, a state too large for the context) carries its decision_id and reads back failed;
and a session decision over GraphQL judged by the embedded Gemma 3 270M."""

from __future__ import annotations

import pytest

from tests import local_http
from tests.graphql.conftest import _agent
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


@pytest.mark.both_backends  # sessions are stored, appended, archived
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


@pytest.mark.both_backends  # the stored failure is read back
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


# ------------------------------------------------------------------ with the real judge model


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
