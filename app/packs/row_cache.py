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
replaces the dict; packs in flight keep the old one). A write that commits while a pack runs
can leave the pack holding rows of one document from before it and after it; the pack finds
such a document and reads its passages again (:func:`app.packs.resolve.mend_torn_documents`).

The bound is in rows (a passage has one per version of its document, all sharing one text
object: :func:`app.packs.resolve.fetch_rows`), so documents with many versions cannot make
the cache large.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from cairn.app.packs.pipeline_types import PassageRow, RowCache

MAX_CACHED_ROWS = 40_000
"""Rows kept per process over all workspaces (a passage's text, ~1.2 KB, once per passage;
~0.3 KB per row besides: at most ~60 MB). When a pack finds more, its workspace keeps the
passages of the newest half of the rows and other workspaces' rows go."""


class CountedRows(dict[str, list[PassageRow]]):
    """A :data:`RowCache` that counts its rows (``rows``) as passages are added, and keeps
    each passage's settled as-of reading (``as_of``, :func:`app.packs.resolve.passage_views`).

    Only ``[key] = rows`` and :meth:`update` add; nothing is removed. Replacing a passage's
    rows forgets its as-of reading (it was computed from the old rows)."""

    def __init__(self) -> None:
        super().__init__()
        self.rows = 0
        self.as_of: dict[str, tuple[datetime, object]] = {}

    def __setitem__(self, key: str, value: list[PassageRow]) -> None:
        old = self.get(key)
        self.rows += len(value) - (len(old) if old is not None else 0)
        if old is not None:
            self.as_of.pop(key, None)
        super().__setitem__(key, value)

    def update(self, other: Mapping[str, list[PassageRow]], /) -> None:  # type: ignore[override]
        """Add every passage of ``other`` (through ``__setitem__``, so rows are counted)."""
        for key, value in other.items():
            self[key] = value


class PassageRowCache:
    """``workspace id -> (corpus generation, passage id -> rows)`` for one process.

    Args:
        max_rows: Rows kept over all workspaces before trimming, >= 2.

    Raises:
        ValueError: ``max_rows`` < 2.
    """

    def __init__(self, max_rows: int = MAX_CACHED_ROWS) -> None:
        if max_rows < 2:
            raise ValueError(f"max_rows must be >= 2, got {max_rows}")
        self.max_rows = max_rows
        self._held: dict[str, tuple[int, CountedRows]] = {}

    def rows_for(self, workspace_id: str, generation: int) -> RowCache:
        """The rows kept for ``workspace_id`` at ``generation`` (a new empty dict for any other
        generation, replacing the old one). The caller adds to it, never removes."""
        held = self._held.get(workspace_id)
        if held is None or held[0] != generation:
            held = (generation, CountedRows())
            self._held[workspace_id] = held
        rows = held[1]
        if len(self) > self.max_rows:
            newest, budget = [], self.max_rows // 2
            for pid in reversed(rows):  # the newest passages, up to half the bound in rows
                budget -= len(rows[pid])
                if budget < 0:
                    break
                newest.append(pid)
            trimmed = CountedRows()
            trimmed.update({pid: rows[pid] for pid in reversed(newest)})
            rows = trimmed
            self._held = {workspace_id: (generation, rows)}
        return rows

    def __len__(self) -> int:
        """Rows held over all workspaces."""
        return sum(r.rows for _, r in self._held.values())
