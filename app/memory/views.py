"""What memory operations return: a memory with its source re-check, and the outcomes of
remember, recall and list."""

from __future__ import annotations

from dataclasses import dataclass, field

from cairn.app.core.models import AgentMemory
from cairn.app.memory.candidates import LegReport
from cairn.app.memory.sources import SourceCheck


@dataclass
class MemoryView:
    """A memory as returned: masked text, version facts and the source re-check."""

    row: AgentMemory
    source: SourceCheck


@dataclass
class RememberOutcome:
    """``superseded`` is 1 when a previous version of the key was replaced; ``masked`` counts
    the distinct personal values masked per kind."""

    memory: MemoryView
    superseded: int
    masked: dict[str, int]


@dataclass
class RecallOutcome:
    """Ranked memories (``(view, score, ranks)``), hidden count, candidates and leg reports."""

    items: list[tuple[MemoryView, float, dict[str, int]]]
    hidden: int
    candidates: int
    legs: list[LegReport] = field(default_factory=list)


@dataclass
class ListOutcome:
    """A page of memories, the hidden count on that page and the next cursor (None: end)."""

    items: list[MemoryView]
    hidden: int
    next_cursor: str | None
