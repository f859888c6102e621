"""Temporal index (issue 14): time-scoped statements parsed from documents, ``timeline`` and
``currentFacts`` reads, and the GRAPH leg of context packs.

Public surface: other packages import only the names below (import-linter contract in
pyproject.toml).
"""

from cairn.app.temporal.leg import GraphLeg, temporal_leg
from cairn.app.temporal.operations import TemporalRead, current_facts, timeline, validate_read
from cairn.app.temporal.service import Fact, ensure_indexed, rebuild_index
from cairn.app.temporal.timex import Interval, intervals, task_constraint

__all__ = [
    "Fact",
    "GraphLeg",
    "Interval",
    "TemporalRead",
    "current_facts",
    "ensure_indexed",
    "intervals",
    "rebuild_index",
    "task_constraint",
    "temporal_leg",
    "timeline",
    "validate_read",
]
