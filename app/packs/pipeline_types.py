"""Typed values passed between the stages of the pack pipeline (pipeline-internal).

:class:`PassageRow` (one row of :func:`app.packs.resolve.fetch_rows`) → :class:`Candidate`
(a fused passage resolved as of the pack's read point) → :class:`PackEntry` (a deduplicated
group, or a whole document, with its token count) → :class:`app.packs.types.PackItem`.
:class:`LegResults` (the retrieval legs' ranked ids) comes from :mod:`retrieval.pipeline`
(it knows nothing of tenants, so it lives there) and is re-exported here.
:class:`PackTimings` collects the footer's per-stage milliseconds.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, Protocol

from cairn.app.core.db import Database
from cairn.app.corpus import SearchIndexes
from cairn.app.observability import Telemetry, span
from cairn.retrieval.dedup import DedupGroup
from cairn.retrieval.pipeline import LegResults

__all__ = [
    "Candidate",
    "LegResults",
    "PackEntry",
    "PackServices",
    "PackTimings",
    "PassageRow",
    "RowCache",
    "RowStore",
    "WholeDocument",
]


class PackServices(Protocol):
    """What the pack pipeline uses of :class:`app.context.Services` (the database, indexes, metrics and
    the process's passage rows)."""

    @property
    def db(self) -> Database: ...

    @property
    def indexes(self) -> SearchIndexes: ...

    @property
    def telemetry(self) -> Telemetry: ...

    @property
    def passage_rows(self) -> RowStore: ...


class RowStore(Protocol):
    """Passage rows kept across packs (:class:`app.packs.row_cache.PassageRowCache`)."""

    def rows_for(self, workspace_id: str, generation: int) -> RowCache: ...


@dataclass(frozen=True, slots=True)
class PassageRow:
    """One row of :func:`app.packs.resolve.fetch_rows`: a passage joined with one version of
    its document (field order = the ``select`` column order).

    Attributes:
        passage_id, document_id, text, sha256: The passage (``sha256`` of ``text``, hex).
        tokens: The passage's cl100k token count.
        collection_id: The document's collection.
        title: The document's title (None when it has none).
        external_id: The document's external id (the caller's key).
        collection_name: The collection's name.
        version_id, version_number, valid_from, valid_to, recorded_at: One version of the
            document (valid time interval; ``recorded_at`` = its system time).
        doc_deleted_at, coll_deleted_at: System times of the document's / collection's
            deletion (None while live).
        start, end: The passage's span in that version's text (None when the version does
            not contain the passage).
    """

    passage_id: str
    document_id: str
    text: str
    sha256: str
    tokens: int
    collection_id: str
    title: str | None
    external_id: str
    collection_name: str
    version_id: str
    version_number: int
    valid_from: datetime
    valid_to: datetime | None
    recorded_at: datetime
    doc_deleted_at: datetime | None
    coll_deleted_at: datetime | None
    start: int | None
    end: int | None


RowCache = dict[str, list[PassageRow]]
"""Passage id → its :class:`PassageRow` s (one per version of its document)."""


@dataclass(frozen=True, slots=True)
class Candidate:
    """A fused passage with its text, the version chosen as of the read point, its span in that
    version and the version's validity.

    Attributes:
        id: Passage id.
        score: Fused score (:func:`retrieval.fusion.hybrid_fusion`).
        ranks: Leg name → 1-based rank in that leg.
        doc, version, collection: Document, chosen version and collection ids.
        text, sha, tokens: The passage text, its SHA-256 (hex) and cl100k token count.
        start, end: Character span of the passage in the version's text.
        title: The document's title ("" when it has none).
        external_id, collection_name: The document's external id and its collection's name.
        valid_from, valid_to, superseded: The chosen version's validity and whether a newer
            version exists.
    """

    id: str
    score: float
    ranks: dict[str, int]
    doc: str
    text: str
    sha: str
    tokens: int
    collection: str
    version: str
    start: int
    end: int
    title: str
    valid_from: datetime
    valid_to: datetime | None
    superseded: bool
    external_id: str = ""
    collection_name: str = ""


@dataclass(frozen=True, slots=True)
class WholeDocument:
    """The full text of a candidate's chosen version (``sources: DOCUMENTS``)."""

    text: str
    sha256: str


@dataclass(frozen=True, slots=True, eq=False)
class PackEntry:
    """One packable entry, in rank order: a dedup group (``EVIDENCE``: its kept candidate, the
    duplicates as alternate citations) or a whole document (``WHOLE_DOCUMENT``: the group whose
    kept candidate ranked its document first, and the version's full text in ``whole``).

    Compared by identity (``eq=False``): the budget check asks whether *this* top entry fit.
    """

    kind: Literal["EVIDENCE", "WHOLE_DOCUMENT"]
    group: DedupGroup[Candidate]
    tokens: int
    whole: WholeDocument | None = None


@dataclass
class PackTimings:
    """Server-side time per stage (the footer's ``timings``): key → ms, rounded to 2 decimals.

    Keys are the wire names (``legsMs``, ``fusionMs``, ``resolveMs``, ``dedupPackMs``, …) that
    ``bench/latency.py`` and the GraphQL ``PackTimings`` type read.
    """

    values: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Time the ``with`` block into ``values[name]`` (not recorded if the block raises), inside
        a trace span ``pack.<stage>`` (``legsMs`` → ``pack.legs``; a no-op with tracing off)."""
        with span(f"pack.{name.removesuffix('Ms')}"):
            t = time.perf_counter()
            yield
            self.values[name] = round((time.perf_counter() - t) * 1000, 2)
