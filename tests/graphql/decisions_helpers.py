"""Helpers shared by the Decision API test modules (tests/graphql/test_decisions_*.py): the
decider credential, posting to /api/v1/decisions, reading a wire error, request bodies and
the GraphQL session mutation."""

from __future__ import annotations

import json

import httpx

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


SESSION_CREATE = """mutation($t:String,$m:[SessionMessageInput!]){createSession(title:$t,messages:$m){
  id title messageCount archived messages{ordinal role content}}}"""
