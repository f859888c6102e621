"""Agent profile boundaries (SPEC §9): BLOCKED by a hard boundary or an ungranted capability,
AVOID and RECONFIRM executed only with their single-use confirmation token, SUGGEST_ONLY
returning a proposal, and ALLOWED recorded in the envelope."""

from __future__ import annotations

import pytest

from tests.graphql.conftest import _agent
from tests.graphql.pack_calls import PACK, error_of


def _profiled(live, name: str, profile: dict) -> str:
    return _agent(live, name, ["context:read"], profile=profile)


def test_boundary_blocked_by_hard_boundary_and_by_not_granted(live):
    q, v = PACK
    for name, profile in (
        ("hard", {"hardBoundaries": ["context:pack"]}),
        ("ungranted", {"grantedCapabilities": ["document:read"]}),
    ):
        r = live.gql(q, v, _profiled(live, name, profile))
        err = error_of(r)
        assert err["extensions"]["code"] == "BOUNDARY_BLOCKED"
        assert err["extensions"]["boundary"]["decision"] == "BLOCKED"
        env = r.json()["extensions"]["envelope"]
        assert env["status"] == "REJECTED" and env["boundary"]["decision"] == "BLOCKED"
        assert r.json()["data"] is None


@pytest.mark.both_backends  # the token is consumed by one conditional UPDATE (expiry compared in SQL)
@pytest.mark.parametrize("listname,decision", [("naturalAvoidances", "AVOID"), ("reconfirmBefore", "RECONFIRM")])
def test_boundary_reconfirmation_executes_only_with_its_token(live, listname, decision):
    token = _profiled(live, f"re-{decision}", {listname: ["context:pack"]})
    q, v = PACK
    r = live.gql(q, v, token)
    err = error_of(r)
    assert err["extensions"]["code"] == "BOUNDARY_RECONFIRMATION_REQUIRED"
    b = err["extensions"]["boundary"]
    assert b["decision"] == decision and b["confirmationToken"].startswith("cnf_")
    assert r.json()["extensions"]["envelope"]["status"] == "REJECTED"
    # a different input does not accept the token
    other = {"i": {"task": "billing", "retrieval": "LEXICAL"}}
    r2 = live.gql(q, other, token, headers={"X-Cairn-Confirmation": b["confirmationToken"]})
    assert error_of(r2)["extensions"]["code"] == "BOUNDARY_RECONFIRMATION_REQUIRED"
    ok = live.gql(q, v, token, headers={"X-Cairn-Confirmation": b["confirmationToken"]}).json()
    assert not ok.get("errors") and ok["data"]["contextPack"]["packId"]
    assert ok["extensions"]["envelope"]["boundary"]["confirmed"] is True
    again = live.gql(q, v, token, headers={"X-Cairn-Confirmation": b["confirmationToken"]})
    assert error_of(again)["extensions"]["code"] == "BOUNDARY_RECONFIRMATION_REQUIRED"  # single use


def test_boundary_suggest_only_returns_a_proposal(live):
    token = _profiled(live, "suggester", {"suggestOnly": ["context:pack"]})
    q, v = PACK
    r = live.gql(q, v, token)
    err = error_of(r)
    assert err["extensions"]["code"] == "BOUNDARY_SUGGEST_ONLY"
    assert err["extensions"]["proposal"] == {
        "operation": "contextPack",
        "capability": "context:pack",
        "arguments": {
            "input": {**v["i"], "budget": None, "asOf": None, "filters": None, "contextSetId": None, "relevance": None}
        },
    }


def test_boundary_allowed_is_recorded_in_the_envelope(live):
    q, v = PACK
    env = live.gql(q, v, live.tokens["agent"]).json()["extensions"]["envelope"]
    assert env["boundary"] == {"decision": "ALLOWED", "capability": "context:pack", "reason": "granted"}
    assert env["coordinate"] == "G1.U1.P1.Z1.A1" and env["capability"] == "context:pack"
