"""Credential status through the live server: a removed or demoted creator's credentials
read as not active (``status``, ``lostScopes``) and stop counting toward the cap of 50."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import update

from cairn.app.core.db import Database
from cairn.app.core.ids import utcnow
from cairn.app.core.models import AgentCredential
from tests.graphql.conftest import _agent
from tests.graphql.test_concurrency import CREATE_CRED, new_workspace, outcome

pytestmark = pytest.mark.both_backends  # credential status and the cap of 50 are counted in SQL

LIST = "{agentCredentials{id name active status lostScopes}}"


def _states(live, token) -> dict[str, tuple]:
    rows = live.data(LIST, token=token)["agentCredentials"]
    return {r["name"]: (r["active"], r["status"], r["lostScopes"]) for r in rows}


def _create(live, token, name) -> str:
    return outcome(live.gql(CREATE_CRED, {"i": {"name": name, "expiresInDays": 3}}, token))


async def test_removed_or_demoted_creators_credentials_are_not_active_and_free_the_cap(live):
    """Before: a removed admin's credentials listed ``active: true`` and kept filling the cap."""
    w = await new_workspace(live, owners=1, admins=1, credentials=48)
    owner, admin = w["owner0"], w["admin0"]
    _agent(live, "narrow", ["queries:run"], token=admin)
    _agent(live, "wide", ["context:read", "queries:run"], token=admin)
    assert _create(live, owner, "full-1") == "AGENT_CREDENTIAL_LIMIT"  # 48 + 2 = 50
    s = _states(live, owner)
    assert s["narrow"] == (True, "ACTIVE", []) and s["wide"] == (True, "ACTIVE", [])

    live.data('mutation($m:ID!){setMemberRole(memberId:$m, role:"viewer"){role}}', {"m": w["id:admin0"]}, owner)
    s = _states(live, owner)
    assert s["narrow"] == (False, "AUTHORITY_LOST", ["queries:run"])  # a viewer holds none of its scopes
    assert s["wide"] == (True, "ACTIVE", ["queries:run"])  # context:read still works
    assert _create(live, owner, "after-demotion") == "OK"
    assert _create(live, owner, "full-2") == "AGENT_CREDENTIAL_LIMIT"

    live.data("mutation($m:ID!){removeMember(memberId:$m){id}}", {"m": w["id:admin0"]}, owner)
    s = _states(live, owner)
    assert s["narrow"] == (False, "AUTHORITY_LOST", ["queries:run"])
    assert s["wide"] == (False, "AUTHORITY_LOST", ["context:read", "queries:run"])
    assert s["pre-0"] == (True, "ACTIVE", [])
    assert _create(live, owner, "after-removal") == "OK"
    assert _create(live, owner, "full-3") == "AGENT_CREDENTIAL_LIMIT"


async def test_revoked_and_expired_credentials_say_so(live):
    w = await new_workspace(live, owners=1, credentials=2)
    owner = w["owner0"]
    rows = live.data("{agentCredentials{id name}}", token=owner)["agentCredentials"]
    ids = {r["name"]: r["id"] for r in rows}
    revoked = live.data(
        "mutation($id:ID!){revokeAgentCredential(id:$id){active status lostScopes}}", {"id": ids["pre-0"]}, owner
    )["revokeAgentCredential"]
    assert revoked == {"active": False, "status": "REVOKED", "lostScopes": []}
    db = Database(live.settings.resolved_database_url)
    try:
        async with db.session() as s:
            await s.execute(
                update(AgentCredential)
                .where(AgentCredential.id == ids["pre-1"])
                .values(expires_at=utcnow() - timedelta(minutes=1))
            )
    finally:
        await db.dispose()
    assert _states(live, owner)["pre-1"] == (False, "EXPIRED", [])
