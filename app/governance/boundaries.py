"""Five-level responsibility boundaries (SPEC §9), evaluated per agent call.

Order, first match wins:
1. capability in ``hardBoundaries`` or not in ``grantedCapabilities`` → ``BLOCKED``
   (nothing executes; envelope status ``REJECTED``);
2. in ``naturalAvoidances`` → ``AVOID`` (a reconfirmation request instead of the result);
3. in ``suggestOnly`` → ``SUGGEST_ONLY`` (a proposal, nothing executes);
4. in ``reconfirmBefore`` → ``RECONFIRM`` (executes only with the confirmation token it issued);
5. otherwise ``ALLOWED``.

A ``"*"`` entry in a list matches every capability; ``"area:*"`` matches a prefix.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Boundary(str, Enum):
    """The decision of one evaluation."""

    BLOCKED = "BLOCKED"
    AVOID = "AVOID"
    SUGGEST_ONLY = "SUGGEST_ONLY"
    RECONFIRM = "RECONFIRM"
    ALLOWED = "ALLOWED"


@dataclass(frozen=True)
class BoundaryDecision:
    """Decision plus the list entry that produced it (``reason``)."""

    boundary: Boundary
    capability: str
    reason: str


def _matches(capability: str, entries: list[str]) -> str | None:
    for entry in sorted(entries):
        if entry == "*" or entry == capability:
            return entry
        if entry.endswith(":*") and capability.startswith(entry[:-1]):
            return entry
    return None


def evaluate(capability: str, profile: dict) -> BoundaryDecision:
    """Evaluate ``capability`` against a responsibility profile.

    Args:
        capability: e.g. ``context:pack``.
        profile: dict with the five lists (missing lists count as empty).

    Returns:
        The :class:`BoundaryDecision`.
    """
    hard = _matches(capability, profile.get("hardBoundaries", []))
    if hard:
        return BoundaryDecision(Boundary.BLOCKED, capability, f"hardBoundaries: {hard}")
    if not _matches(capability, profile.get("grantedCapabilities", [])):
        return BoundaryDecision(Boundary.BLOCKED, capability, "not in grantedCapabilities")
    for key, boundary in (
        ("naturalAvoidances", Boundary.AVOID),
        ("suggestOnly", Boundary.SUGGEST_ONLY),
        ("reconfirmBefore", Boundary.RECONFIRM),
    ):
        hit = _matches(capability, profile.get(key, []))
        if hit:
            return BoundaryDecision(boundary, capability, f"{key}: {hit}")
    return BoundaryDecision(Boundary.ALLOWED, capability, "granted")
