"""Passage rows kept across the packs of one process, per workspace and corpus generation.

Before fusion a pack reads the rows of every leg passage (~400 at the default leg depth:
text, document, each version of the document and the passage's span in it) to apply the as-of
rule (:func:`app.packs.resolve.visible_legs`). That read was the largest single cost of a pack
after the query embedding (12-15 ms on 2 cores at 10k passages), and the same passages recur
from pack to pack. The rows depend on nothing but the workspace's documents, whose changes
raise the workspace's corpus generation (:mod:`app.corpus.generation`); the as-of choice
itself (valid time, system time) is made per pack from the rows, so one set of rows serves
every ``asOf``.

A pack asks for the rows of its workspace *at the generation it read before any row*
(:meth:`PassageRowCache.rows_for`): the same generation returns the dict earlier packs
filled; another one starts an empty dict. The dict is the pack's ``RowCache``: it is only
ever added to, never emptied in place, so a pack holding it keeps every row it saw (trimming
replaces the dict; packs in flight keep the old one).
"""

from __future__ import annotations

from itertools import islice

from cairn.app.packs.pipeline_types import RowCache

MAX_CACHED_PASSAGES = 20_000
"""Passages kept per process over all workspaces (~2 KB each with their rows: ~40 MB). When
a pack finds more, its workspace keeps the newest half and other workspaces' rows go."""


class PassageRowCache:
    """``workspace id -> (corpus generation, passage id -> rows)`` for one process.

    Args:
        max_passages: Passages kept over all workspaces before trimming, >= 2.

    Raises:
        ValueError: ``max_passages`` < 2.
    """

    def __init__(self, max_passages: int = MAX_CACHED_PASSAGES) -> None:
        if max_passages < 2:
            raise ValueError(f"max_passages must be >= 2, got {max_passages}")
        self.max_passages = max_passages
        self._held: dict[str, tuple[int, RowCache]] = {}

    def rows_for(self, workspace_id: str, generation: int) -> RowCache:
        """The rows kept for ``workspace_id`` at ``generation`` (a new empty dict for any other
        generation, replacing the old one). The caller adds to it, never removes."""
        held = self._held.get(workspace_id)
        if held is None or held[0] != generation:
            held = (generation, {})
            self._held[workspace_id] = held
        rows = held[1]
        if len(self) > self.max_passages:
            keep = self.max_passages // 2
            rows = dict(islice(rows.items(), max(len(rows) - keep, 0), None))  # the newest half
            self._held = {workspace_id: (generation, rows)}
        return rows

    def __len__(self) -> int:
        """Passages held over all workspaces."""
        return sum(len(r) for _, r in self._held.values())
