"""What the web console needs from the public API (issue 17), on SQLite and PostgreSQL:
the viewer's workspace and display name, a credential's ``lastUsedAt``, a memory key's
versions (``listMemories(allVersions)``) and forgetting one version (``onlyVersion``)."""

from __future__ import annotations

import asyncio

import pytest

from tests.graphql.conftest import _agent
from tests.graphql.test_memory import FORGET, _workspace

pytestmark = pytest.mark.both_backends  # stored versions of a memory key, lastUsedAt written at authentication

CREDS = "{agentCredentials{id name lastUsedAt}}"
VERSIONS = "query($i:ListMemoriesInput){listMemories(input:$i){memories{id key text version supersededAt sourceState}}}"
REMEMBER = "mutation($i:RememberMemoryInput!){rememberMemory(input:$i){memory{id version}}}"


def test_viewer_names_the_workspace_and_the_caller(live):
    v = live.data("{viewer{kind name workspaceName role}}", token=live.tokens["viewer"])["viewer"]
    assert v == {"kind": "member", "name": "viewer-a", "workspaceName": "acme", "role": "viewer"}
    v = live.data("{viewer{kind name workspaceName}}", token=live.tokens["agentReadOnly"])["viewer"]
    assert v == {"kind": "agent", "name": "read-only", "workspaceName": "acme"}


def test_last_used_is_null_until_the_credential_authenticates_a_call(live):
    token = _agent(live, "console-last-used", ["context:read"])
    cid = live.ids["cred:console-last-used"]

    def last_used() -> str | None:
        rows = live.data(CREDS, token=live.tokens["owner"])["agentCredentials"]
        return next(c["lastUsedAt"] for c in rows if c["id"] == cid)

    assert last_used() is None
    live.data("{viewer{id}}", token=token)
    first = last_used()
    assert first is not None
    live.data("{viewer{id}}", token=token)  # within the minute: not written again
    assert last_used() == first


def test_a_keys_versions_and_forgetting_one_version(live):
    t = asyncio.run(_workspace(live.settings.resolved_database_url, "consolemem"))
    live.data("mutation{setMemorySettings(enabled:true){enabled}}", token=t["owner"])
    ids = [
        live.data(REMEMBER, {"i": {"namespace": "prefs", "key": "lunch", "text": text}}, t["aliceAgent"])[
            "rememberMemory"
        ]["memory"]["id"]
        for text in ("Dana likes soup", "Dana likes salad", "Dana likes noodles")
    ]
    history = {"namespace": "prefs", "key": "lunch", "allVersions": True}
    rows = live.data(VERSIONS, {"i": history}, t["alice"])["listMemories"]["memories"]
    assert [r["version"] for r in rows] == [3, 2, 1]
    assert rows[0]["supersededAt"] is None and rows[1]["supersededAt"] is not None
    assert [
        r["version"] for r in live.data(VERSIONS, {"i": {"key": "lunch"}}, t["alice"])["listMemories"]["memories"]
    ] == [3]
    # another member sees none of them
    assert live.data(VERSIONS, {"i": history}, t["bob"])["listMemories"]["memories"] == []

    # an old version: only it goes
    out = live.data(FORGET, {"i": {"memoryId": ids[0], "onlyVersion": True}}, t["alice"])
    assert out["forgetMemory"]["deleted"] == 1
    rows = live.data(VERSIONS, {"i": history}, t["alice"])["listMemories"]["memories"]
    assert [r["version"] for r in rows] == [3, 2]
    # the current version: the newest remaining becomes current again
    live.data(FORGET, {"i": {"memoryId": ids[2], "onlyVersion": True}}, t["alice"])
    rows = live.data(VERSIONS, {"i": {"key": "lunch"}}, t["alice"])["listMemories"]["memories"]
    assert [(r["version"], r["text"], r["supersededAt"]) for r in rows] == [(2, "Dana likes salad", None)]
    # onlyVersion needs a memory id
    r = live.gql(FORGET, {"i": {"namespace": "prefs", "key": "lunch", "onlyVersion": True}}, t["alice"])
    err = r.json()["errors"][0]
    assert err["extensions"]["code"] == "BAD_USER_INPUT" and "onlyVersion" in err["message"]


def test_agent_scopes_say_defaults_and_the_creators_minimum_role(live):
    rows = live.data("{agentScopes{name default permissions minimumRole}}", token=live.tokens["viewer"])["agentScopes"]
    by_name = {r["name"]: r for r in rows}
    assert [r["name"] for r in rows if r["default"]] == ["context:read", "queries:run", "replay:run"]
    assert by_name["memory:write"] == {
        "name": "memory:write",
        "default": False,
        "permissions": ["agent:run", "document:read"],
        "minimumRole": "editor",
    }
    assert by_name["context:read"]["minimumRole"] == "viewer"
    r = live.gql("{agentScopes{name}}", token=live.tokens["agent"])  # members only
    assert r.json()["errors"][0]["extensions"]["code"] == "AGENT_OPERATION_NOT_ALLOWED"
