"""Agent credentials' lifecycle and limits (SPEC §1): revocation and expiry take effect at once,
authority is lost with the creator's role, the creation rules and defaults, and fifty
active credentials per workspace."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from sqlalchemy import update

from cairn.app.core.db import Database
from cairn.app.core.ids import utcnow
from cairn.app.core.models import AgentCredential
from tests.graphql.conftest import _agent
from tests.graphql.pack_calls import PACK, PACK_QUERY, error_of

pytestmark = pytest.mark.both_backends  # revocation, expiry (time zones) and the cap of 50, in SQL


def test_revocation_is_immediate(live):
    token = _agent(live, "to-revoke", ["context:read"])
    q, v = PACK
    assert not live.gql(q, v, token).json().get("errors")
    live.data(
        "mutation($id:ID!){revokeAgentCredential(id:$id){active revokedAt}}",
        {"id": live.ids["cred:to-revoke"]},
        live.tokens["owner"],
    )
    r = live.gql(q, v, token)
    assert r.status_code == 401 and error_of(r)["extensions"]["code"] == "AGENT_CREDENTIAL_REVOKED"


async def test_expired_credentials_are_refused(live):
    token = _agent(live, "to-expire", ["context:read"])
    db = Database(live.settings.resolved_database_url)
    try:
        async with db.session() as s:
            await s.execute(
                update(AgentCredential)
                .where(AgentCredential.id == live.ids["cred:to-expire"])
                .values(expires_at=utcnow() - timedelta(seconds=1))
            )
    finally:
        await db.dispose()
    q, v = PACK
    r = await asyncio.to_thread(live.gql, q, v, token)
    assert r.status_code == 401 and error_of(r)["extensions"]["code"] == "AGENT_CREDENTIAL_EXPIRED"


def test_authority_lost_when_the_creator_is_demoted_or_removed(live):
    admin_token = live.data(
        'mutation{addMember(name:"temp-admin", role:"admin"){token member{id}}}', None, live.tokens["owner"]
    )["addMember"]
    member_id = admin_token["member"]["id"]
    agent = _agent(live, "from-temp-admin", ["context:read", "queries:run"], token=admin_token["token"])
    docs_pack = {"i": {"task": "volcano", "filters": {"sources": ["DOCUMENTS"]}}}
    assert not live.gql(PACK_QUERY, docs_pack, agent).json().get("errors")
    live.data(
        'mutation($m:ID!){setMemberRole(memberId:$m, role:"viewer"){role}}', {"m": member_id}, live.tokens["owner"]
    )
    r = live.gql(PACK_QUERY, docs_pack, agent)
    assert error_of(r)["extensions"]["code"] == "AGENT_CREDENTIAL_AUTHORITY_LOST"
    q, v = PACK
    assert not live.gql(q, v, agent).json().get("errors")  # context:read still within a viewer's rights
    live.data("mutation($m:ID!){removeMember(memberId:$m){id}}", {"m": member_id}, live.tokens["owner"])
    r = live.gql(q, v, agent)
    assert r.status_code == 403 and error_of(r)["extensions"]["code"] == "AGENT_CREDENTIAL_AUTHORITY_LOST"


def test_creation_rules(live):
    m = "mutation($i:CreateAgentCredentialInput!){createAgentCredential(input:$i){token}}"
    for days in (0, 366):
        r = live.gql(m, {"i": {"name": "x", "expiresInDays": days}}, live.tokens["owner"])
        assert error_of(r)["extensions"]["code"] == "BAD_USER_INPUT"
        assert error_of(r)["extensions"]["field"] == "input.expiresInDays"
    r = live.gql(m, {"i": {"name": "x", "expiresInDays": 5, "scopes": ["context:write"]}}, live.tokens["owner"])
    assert error_of(r)["extensions"]["code"] == "BAD_USER_INPUT"
    r = live.gql(m, {"i": {"name": "x", "expiresInDays": 5, "contextSetId": "cs_nope"}}, live.tokens["owner"])
    assert (
        error_of(r)["extensions"]["code"] == "NOT_FOUND" and error_of(r)["extensions"]["field"] == "input.contextSetId"
    )
    # an admin cannot mint what it could not do itself? admins hold every scope's permissions;
    # defaults: context:read queries:run replay:run; memory and decisions off
    r = live.data(
        m.replace("{token}", "{token credential{scopes profile{grantedCapabilities hardBoundaries}}}"),
        {"i": {"name": "defaults", "expiresInDays": 5}},
        live.tokens["admin"],
    )
    cred = r["createAgentCredential"]
    assert cred["credential"]["scopes"] == ["context:read", "queries:run", "replay:run"]
    assert "context:pack" in cred["credential"]["profile"]["grantedCapabilities"]
    assert cred["credential"]["profile"]["hardBoundaries"] == []
    assert cred["token"].startswith("ck_") and len(cred["token"]) == 3 + 16 + 1 + 43
    listed = live.data("{agentCredentials{id name}}", None, live.tokens["admin"])["agentCredentials"]
    assert all("token" not in c for c in listed)


def test_fifty_active_credentials_per_retaining_workspace(live):
    m = "mutation($i:CreateAgentCredentialInput!){createAgentCredential(input:$i){credential{id}}}"
    ids = [
        live.data(m, {"i": {"name": f"cap-{i}", "expiresInDays": 1}}, live.tokens["ownerCap"])["createAgentCredential"][
            "credential"
        ]["id"]
        for i in range(50)
    ]
    r = live.gql(m, {"i": {"name": "cap-51", "expiresInDays": 1}}, live.tokens["ownerCap"])
    err = error_of(r)
    assert err["extensions"]["code"] == "AGENT_CREDENTIAL_LIMIT" and err["extensions"]["limit"] == 50
    live.data("mutation($id:ID!){revokeAgentCredential(id:$id){id}}", {"id": ids[0]}, live.tokens["ownerCap"])
    assert live.data(m, {"i": {"name": "cap-51", "expiresInDays": 1}}, live.tokens["ownerCap"])
