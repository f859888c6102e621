"""Typed values passed between the stages of the pack pipeline (pipeline-internal).

:class:`PackRun` is one pack's read-only context (request, principal, read point, scope,
deadline, row cache, timings), built by the plan stage and passed to every stage after it;
:class:`Lead` is what heads the pack before the evidence (a context set's items);
:class:`PackHook` is the Protocol of the optional parts a request enables (context sets:
:mod:`app.packs.set_hook`; the GRAPH leg: :mod:`app.packs.graph_hook`).
:class:`PassageRow` (one row of :func:`app.packs.resolve.fetch_rows`) → :class:`Candidate`
(a fused passage resolved as of the pack's read point) → :class:`PackEntry` (a deduplicated
group, or a whole document, with its token count) → :class:`app.packs.types.PackItem`.
:class:`LegResults` (the retrieval legs' ranked ids) comes from :mod:`retrieval.pipeline`
(it knows nothing of tenants, so it lives there) and is re-exported here.
:class:`PackTimings` collects the footer's per-stage milliseconds; only :func:`app.packs.service.stream_pack`
writes to it (stages return their own measurements).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol

from cairn.app.core.db import Database
from cairn.app.corpus import SearchIndexes
from cairn.app.governance import Principal
from cairn.app.observability import Telemetry, span
from cairn.app.packs.types import PackItem, PackRequest
from cairn.retrieval.dedup import DedupGroup
from cairn.retrieval.pipeline import LegResults, Ranked, RetrievalConfig

__all__ = [
    "Candidate",
    "DenseServed",
    "Filters",
    "Lead",
    "LegResults",
    "LegSearch",
    "PackEntry",
    "PackHook",
    "PackRun",
    "PackServices",
    "PackTimings",
    "PassageRow",
    "RowCache",
    "RowStore",
    "WholeDocument",
]

Filters = tuple[list[str] | None, list[str] | None]
"""``(collection ids, document ids)`` retrieval is limited to; None: not filtered, ``[]``: nothing."""


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

    def add(self, name: str, ms: float) -> None:
        """Add ``ms`` to ``values[name]`` (a stage measured in parts), rounded to 2 decimals."""
        self.values[name] = round(self.values.get(name, 0.0) + ms, 2)

    def since(self, name: str, started: float) -> None:
        """Record ``values[name]`` = ms from ``started`` (``time.perf_counter()``) to now, once:
        a later call for the same name keeps the first (``firstEvidenceItemMs``)."""
        self.values.setdefault(name, round((time.perf_counter() - started) * 1000, 2))

    @contextmanager
    def stage(
        self, name: str, *, trace: str | None = None, attributes: Mapping[str, Any] | None = None, plus_ms: float = 0.0
    ) -> Iterator[Any]:
        """Time the ``with`` block into ``values[name]`` (plus ``plus_ms`` measured elsewhere; not
        recorded if the block raises), inside a trace span ``trace`` (default ``pack.<stage>``:
        ``legsMs`` → ``pack.legs``; a no-op with tracing off) with ``attributes``; ``as`` gives
        the span (None with tracing off) for attributes known at the end."""
        with span(trace or f"pack.{name.removesuffix('Ms')}", attributes) as s:
            t = time.perf_counter()
            yield s
            self.values[name] = round((time.perf_counter() - t) * 1000 + plus_ms, 2)


@dataclass(frozen=True, slots=True)
class DenseServed:
    """What the dense leg served, for fusion and the pack's notes.

    Attributes:
        models: Names of the models whose spaces were routed, in search order (empty without
            an embedding model, or when the scope left nothing to search).
        non_latin: The task was routed as non-Latin script (to the multilingual space only).
        space_of: Passage id → the space it was found in, for the visible dense passages.
        scale: The space whose cosines the dense leg's scores are (:func:`retrieval.dense.lead_space`:
            the first searched space with a visible passage; a passage of another space joined
            it with the lead cosine it stands out as much as), or None without dense results.
        best: Space → the best cosine of its visible passages in its own model (for notes).
    """

    models: tuple[str, ...] = ()
    non_latin: bool = False
    space_of: Mapping[str, str] = field(default_factory=dict)
    scale: str | None = None
    best: Mapping[str, float] = field(default_factory=dict)


class LegSearch(Protocol):
    """One leg's search bound to the pack's task and scope, run again deeper when as-of visibility
    hides passages (:func:`app.packs.resolve.visible_legs`); implementations in :mod:`app.packs.legs`."""

    def search(self, limit: int) -> Ranked:
        """The leg's top ``limit`` results, best first (blocking: callers run it in a thread)."""
        ...


@dataclass(frozen=True, slots=True)
class Lead:
    """What heads the pack before the evidence: a context set's approved and required items
    (:mod:`app.packs.set_hook`); empty without a set.

    Attributes:
        items: The items, ranked 1..n; emitted right after the header.
        tokens: The budget they take (evidence and FACT items get ``maxTokens - tokens``).
        notes: The pack's first notes; ``reasons``: its first incompleteness reasons.
        heads: The lead holds the pack's top item (its items, or its top entry over the budget),
            so the best evidence item not fitting is ``EVIDENCE_OVER_BUDGET``, not the top item.
        over_budget: What did not fit, named in ``REQUIRE_COMPLETE``'s error.
        truncated: Something of the lead was left out (the footer's ``truncated``).
    """

    items: tuple[PackItem, ...] = ()
    tokens: int = 0
    notes: tuple[str, ...] = ()
    reasons: tuple[str, ...] = ()
    heads: bool = False
    over_budget: tuple[str, ...] = ()
    truncated: bool = False


@dataclass(frozen=True, slots=True)
class PackRun:
    """One pack's context, read by every stage after the plan (:func:`app.packs.service.plan_run`).

    Attributes:
        services, principal, req: Who asks what, with which services.
        config: The retrieval mode's legs (:data:`retrieval.pipeline.RETRIEVAL_CONFIGS`).
        trace_id: The request's trace id (the header's ``traceId``).
        now: The request's instant (UTC); ``valid_time``, ``system_time``: the read point
            (``asOf``, defaulting to ``now``; a system time after ``now`` is read as ``now``).
        started: ``time.perf_counter()`` at the start (the footer's ``latencyMs`` counts from it).
        deadline: ``time.monotonic()`` seconds after which unfinished legs are dropped (``maxLatencyMs``).
        filters: The scope retrieval searches (the request's filters, narrowed by a context set).
        cache: Passage rows of this workspace's corpus generation (:mod:`app.packs.row_cache`):
            a shared cache, only ever added to.
        timings: The footer's per-stage ms; written by :func:`app.packs.service.stream_pack` only.
        lead: The items before the evidence (:class:`Lead`).
    """

    services: PackServices
    principal: Principal
    req: PackRequest
    config: RetrievalConfig
    trace_id: str
    now: datetime
    valid_time: datetime
    system_time: datetime
    started: float
    deadline: float
    filters: Filters
    cache: RowCache
    timings: PackTimings
    lead: Lead = Lead()

    @property
    def as_of_system_time(self) -> datetime | None:
        """The read point's system time when the request gave one (None: a pack as of now)."""
        return self.system_time if self.req.system_time is not None else None

    @property
    def evidence_tokens(self) -> int:
        """The budget left to evidence and FACT items after the lead (``maxTokens - lead.tokens``)."""
        return self.req.max_tokens - self.lead.tokens

    @property
    def first_rank(self) -> int:
        """The rank of the first item after the lead."""
        return len(self.lead.items) + 1


class PackHook(Protocol):
    """An optional part of a pack the request enables, run by :func:`app.packs.service.stream_pack`
    at fixed points; each method returns its result (a hook is frozen: one that carries what it
    found to a later point returns a new hook). Implementations: the context set
    (:class:`app.packs.set_hook.ContextSetHook`), the temporal GRAPH leg
    (:class:`app.packs.graph_hook.GraphHook`)."""

    def before_retrieval(self, run: PackRun) -> PackRun:
        """The run with its scope narrowed and its lead set (or ``run`` unchanged)."""
        ...

    async def before_fusion(self, run: PackRun, legs: LegResults) -> tuple[LegResults, PackHook]:
        """The visible legs with this hook's leg joined, and the hook as it continues."""
        ...

    def before_packing(self, groups: Sequence[DedupGroup[Candidate]]) -> list[DedupGroup[Candidate]]:
        """The evidence groups the budget packs (less what the lead already quotes)."""
        ...

    def after_packing(self, run: PackRun, items: Sequence[PackItem]) -> list[PackItem]:
        """The evidence items with this hook's items added (FACT items), within ``run.evidence_tokens``."""
        ...
