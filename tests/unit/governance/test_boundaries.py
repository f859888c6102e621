"""Five-level boundary evaluation: first match wins, in the SPEC's order."""

from __future__ import annotations

import pytest

from cairn.app.governance.boundaries import Boundary, evaluate

ALL = {
    "grantedCapabilities": ["context:pack", "document:read"],
    "naturalAvoidances": [],
    "suggestOnly": [],
    "reconfirmBefore": [],
    "hardBoundaries": [],
}


@pytest.mark.parametrize(
    "overrides,capability,expected,reason",
    [
        ({}, "context:pack", Boundary.ALLOWED, "granted"),
        ({}, "memory:write", Boundary.BLOCKED, "not in grantedCapabilities"),
        (
            {"hardBoundaries": ["context:pack"], "naturalAvoidances": ["context:pack"]},
            "context:pack",
            Boundary.BLOCKED,
            "hardBoundaries: context:pack",
        ),
        (
            {"naturalAvoidances": ["context:pack"], "suggestOnly": ["context:pack"]},
            "context:pack",
            Boundary.AVOID,
            "naturalAvoidances: context:pack",
        ),
        (
            {"suggestOnly": ["context:*"], "reconfirmBefore": ["context:pack"]},
            "context:pack",
            Boundary.SUGGEST_ONLY,
            "suggestOnly: context:*",
        ),
        ({"reconfirmBefore": ["*"]}, "document:read", Boundary.RECONFIRM, "reconfirmBefore: *"),
        ({"grantedCapabilities": ["*"]}, "anything:else", Boundary.ALLOWED, "granted"),
        ({"grantedCapabilities": ["context:*"]}, "document:read", Boundary.BLOCKED, "not in grantedCapabilities"),
    ],
)
def test_evaluation_order(overrides, capability, expected, reason):
    decision = evaluate(capability, {**ALL, **overrides})
    assert decision.boundary is expected
    assert decision.reason == reason


def test_missing_lists_count_as_empty():
    assert evaluate("context:pack", {}).boundary is Boundary.BLOCKED
