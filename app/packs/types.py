"""Context-pack request, events and validation (SPEC §3).

A pack is a stream of events: one :class:`PackHeader`, then :class:`PackItem` in final pack
order, then one :class:`PackFooter`. The non-streamed pack is the same events collected,
so the concatenated streamed items equal the non-streamed pack by construction.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from cairn.app.core.errors import BadInput
from cairn.app.core.text_rules import require_storable, validate_identifier

TASK_MAX_CHARS = 4_000
MIN_TOKENS, MAX_TOKENS, DEFAULT_TOKENS = 256, 32_000, 4_000
MIN_LATENCY_MS, MAX_LATENCY_MS, DEFAULT_LATENCY_MS = 1_000, 60_000, 15_000
MAX_COLLECTION_FILTERS = 8
MAX_DOCUMENT_FILTERS = 20
MAX_ITEMS = 200
"""Upper limit of ``input.budget.maxItems``: a retrieval leg returns at most 200 passages
(:data:`retrieval.pipeline.LEG_DEPTH`), so no pack could hold more ranked items."""


class RetrievalMode(StrEnum):
    """Which legs retrieve (GraphQL ``RetrievalMode``; NDJSON ``retrieval``)."""

    HYBRID = "HYBRID"
    LEXICAL = "LEXICAL"
    DENSE = "DENSE"


class Coverage(StrEnum):
    """BEST_EFFORT returns what fits; REQUIRE_COMPLETE refuses an incomplete pack (GraphQL ``Coverage``)."""

    BEST_EFFORT = "BEST_EFFORT"
    REQUIRE_COMPLETE = "REQUIRE_COMPLETE"


class PackSource(StrEnum):
    """Evidence sources (GraphQL ``PackSource``; ``filters.sources``)."""

    PASSAGES = "PASSAGES"
    GRAPH = "GRAPH"
    DOCUMENTS = "DOCUMENTS"


class PackItemKind(StrEnum):
    """An item's kind, in set-first order (GraphQL ``PackItemKind``; :attr:`PackItem.kind`)."""

    VERIFIED_ANSWER = "VERIFIED_ANSWER"
    DEFINITION = "DEFINITION"
    INSTRUCTION = "INSTRUCTION"
    REQUIRED_EVIDENCE = "REQUIRED_EVIDENCE"
    EVIDENCE = "EVIDENCE"
    WHOLE_DOCUMENT = "WHOLE_DOCUMENT"
    FACT = "FACT"


class Trust(StrEnum):
    """APPROVED = curated by editors; UNTRUSTED = quoted from a document (GraphQL ``Trust``)."""

    APPROVED = "APPROVED"
    UNTRUSTED = "UNTRUSTED"


class TimePrecision(StrEnum):
    """How precisely a FACT's text gave its date (GraphQL ``TimePrecision``; upper case of the
    temporal index's ``day`` | ``month`` | ``year``)."""

    DAY = "DAY"
    MONTH = "MONTH"
    YEAR = "YEAR"


SOURCES = tuple(s.value for s in PackSource)
RETRIEVAL_MODES = tuple(m.value for m in RetrievalMode)
COVERAGES = tuple(c.value for c in Coverage)
RRF_K = 60

INCOMPLETE_REASONS: dict[str, str] = {
    "REQUIRED_EVIDENCE": "a context set's required evidence is unreadable, not in the version visible at "
    "asOf, or does not fit (notes name it)",
    "TOP_ITEM_OVER_BUDGET": "the pack's best-ranked item does not fit maxTokens (with a context set: its "
    "first matched entry; notes name it)",
    "SET_ITEM_OVER_BUDGET": "another approved context-set entry matched to the task does not fit (notes name it)",
    "EVIDENCE_OVER_BUDGET": "with a context set: the best evidence item does not fit the tokens the set's "
    "items left (notes give both counts)",
    "LATENCY": "maxLatencyMs was reached before a retrieval leg finished",
}
"""Every ``PackFooter.incomplete_reasons`` value and its meaning (``REQUIRE_COMPLETE`` fails
with ``CONTEXT_PACK_INCOMPLETE`` listing them)."""


@dataclass(frozen=True)
class PackRequest:
    """A validated-on-demand pack request (field names mirror ``ContextPackInput``)."""

    task: str
    max_tokens: int = DEFAULT_TOKENS
    max_latency_ms: int = DEFAULT_LATENCY_MS
    coverage: str = "BEST_EFFORT"
    valid_time: datetime | None = None
    system_time: datetime | None = None
    collection_ids: tuple[str, ...] | None = None
    document_ids: tuple[str, ...] | None = None
    sources: tuple[str, ...] = ("PASSAGES",)
    retrieval: str = "HYBRID"
    context_set_id: str | None = None
    max_items: int | None = None
    """At most this many ranked items (EVIDENCE, WHOLE_DOCUMENT), 1..:data:`MAX_ITEMS`; None: no
    limit but the token budget. A context set's approved items and FACT items (which follow their
    passage) are not counted (:func:`app.packs.items.pack_evidence`)."""
    min_relative_score: float | None = None
    """Relevance floor in (0, 1]: leave out ranked candidates whose fused score is under this
    share of the best candidate's (:func:`app.packs.relevance.relevance_floor`); None: no floor."""
    fusion: str | None = None
    """``SCORE`` (:func:`retrieval.fusion.hybrid_fusion`) or ``RANK`` (weighted RRF); None: RANK
    when the pack reads as of a given time (``valid_time``/``system_time``), else SCORE — see
    :func:`fusion_method`. Not a GraphQL input: RECOMPUTE passes the recorded method."""


def _check_id_filter(ids: tuple[str, ...] | None, field: str, limit: int) -> None:
    """An id filter is absent, or 1..limit ids (an empty list would silently match nothing)."""
    if ids is None:
        return
    if len(ids) > limit:
        raise BadInput(f"{field} has {len(ids)} ids; the limit is {limit}", field=field, limit=limit)
    if not ids:
        raise BadInput(f"{field}, when given, must not be empty (omit it for all)", field=field)
    for i, value in enumerate(ids):
        validate_identifier(value, f"{field}[{i}]")


FUSION_METHODS = ("SCORE", "RANK")


def fusion_method(req: PackRequest) -> str:
    """How a pack fuses its legs: ``req.fusion`` if set, else ``RANK`` for a pack read as of a
    given time and ``SCORE`` for a current one.

    Why two: score fusion (:func:`retrieval.fusion.hybrid_fusion`) ranks better (BENCHMARKS.md),
    but BM25 scores move with collection statistics (IDF, mean length) that every later write
    changes; weighted RRF depends on ranks only, and with legs filtered to what was visible at
    the read point (:func:`app.packs.resolve.visible_legs`) a pack as of a past time is then a
    function of what was visible then, so its RECOMPUTE equals it byte for byte however the
    corpus grows (issue 14). A current pack is read as of now, whose statistics are its own.
    """
    if req.fusion is not None:
        return req.fusion
    return "RANK" if req.valid_time is not None or req.system_time is not None else "SCORE"


def validate_pack_request(req: PackRequest) -> None:
    """Check every SPEC §3 limit; nothing is clamped.

    Raises:
        BadInput: with ``field`` (GraphQL input path) and ``limit``.
    """
    require_storable(req.task, "input.task")
    if req.context_set_id is not None:
        validate_identifier(req.context_set_id, "input.contextSetId")
    if not req.task.strip():
        raise BadInput("input.task must contain non-whitespace text", field="input.task", limit="1-4000")
    if len(req.task) > TASK_MAX_CHARS:
        raise BadInput(
            f"input.task is {len(req.task)} characters; the limit is 4,000",
            field="input.task",
            limit=TASK_MAX_CHARS,
        )
    if not MIN_TOKENS <= req.max_tokens <= MAX_TOKENS:
        raise BadInput(
            f"input.budget.maxTokens must be between 256 and 32,000 (got {req.max_tokens})",
            field="input.budget.maxTokens",
            limit="256-32000",
        )
    if not MIN_LATENCY_MS <= req.max_latency_ms <= MAX_LATENCY_MS:
        raise BadInput(
            f"input.budget.maxLatencyMs must be between 1,000 and 60,000 (got {req.max_latency_ms})",
            field="input.budget.maxLatencyMs",
            limit="1000-60000",
        )
    if req.coverage not in COVERAGES:
        raise BadInput(f"input.budget.coverage must be one of {COVERAGES}", field="input.budget.coverage")
    if req.retrieval not in RETRIEVAL_MODES:
        raise BadInput(f"input.retrieval must be one of {RETRIEVAL_MODES}", field="input.retrieval")
    _check_id_filter(req.collection_ids, "input.filters.collectionIds", MAX_COLLECTION_FILTERS)
    _check_id_filter(req.document_ids, "input.filters.documentIds", MAX_DOCUMENT_FILTERS)
    if not req.sources:
        raise BadInput(
            "input.filters.sources, when given, must name at least one source", field="input.filters.sources"
        )
    bad = [s for s in req.sources if s not in SOURCES]
    if bad:
        raise BadInput(f"input.filters.sources has unknown {bad}; allowed {SOURCES}", field="input.filters.sources")
    if len(set(req.sources)) != len(req.sources):
        raise BadInput("input.filters.sources lists a source twice", field="input.filters.sources")
    if req.max_items is not None and not 1 <= req.max_items <= MAX_ITEMS:
        raise BadInput(
            f"input.budget.maxItems must be between 1 and {MAX_ITEMS} (got {req.max_items}); omit it for no limit",
            field="input.budget.maxItems",
            limit=f"1-{MAX_ITEMS}",
        )
    r = req.min_relative_score
    if r is not None and not (math.isfinite(r) and 0.0 < r <= 1.0):
        raise BadInput(
            f"input.relevance.minRelativeScore must be greater than 0 and at most 1 (got {r}); omit it for no floor",
            field="input.relevance.minRelativeScore",
            limit="(0, 1]",
        )
    if req.valid_time is not None and req.valid_time.tzinfo is None:
        raise BadInput(
            "input.asOf.validTime needs a timezone (e.g. 2025-01-01T00:00:00Z)", field="input.asOf.validTime"
        )
    if req.system_time is not None and req.system_time.tzinfo is None:
        raise BadInput("input.asOf.systemTime needs a timezone", field="input.asOf.systemTime")


@dataclass(frozen=True)
class Citation:
    """Where an item's text comes from: ``version.text[start:end] == text``; SHA-256 of text.

    It names its source too, so a caller needs no extra call to label it: the document's
    ``external_id`` (the caller's key; ``cairn ingest``: the file's relative path), its
    ``document_title`` and its collection's id and name.
    """

    document_id: str
    version_id: str
    passage_id: str | None
    start: int
    end: int
    sha256: str
    external_id: str = ""
    document_title: str = ""
    collection_id: str = ""
    collection_name: str = ""


@dataclass(frozen=True)
class PackHeader:
    """First event: ids and the budget, emitted before retrieval finishes."""

    pack_id: str
    replay_id: str
    max_tokens: int
    max_latency_ms: int
    coverage: str  # a Coverage value
    retrieval: str  # a RetrievalMode value
    valid_time: datetime
    system_time: datetime
    tokenizer: str
    trace_id: str


@dataclass(frozen=True)
class PackItem:
    """One item of evidence, in final pack order (``rank`` from 1)."""

    rank: int
    kind: str  # a PackItemKind value
    text: str
    tokens: int
    trust: str  # a Trust value
    score: float
    lexical_rank: int | None
    dense_rank: int | None
    citation: Citation | None  # None: an approved context-set entry (not quoted from a document)
    alternates: tuple[Citation, ...]
    document_title: str  # approved entries: the question, term or "Instruction n"
    collection_id: str | None
    valid_from: datetime | None
    valid_to: datetime | None
    superseded: bool
    contradiction: bool
    contradicts: tuple[str, ...] = ()
    external_id: str = ""
    collection_name: str = ""
    interval: tuple[datetime | None, datetime | None, str] | None = None
    """FACT items: the statement's ``(validFrom, validTo, precision)`` (None for other kinds)."""
    context_set_entry: ContextSetEntryRef | None = None  # issue 13: set items only


@dataclass(frozen=True)
class ContextSetEntryRef:
    """Which context-set entry (and set version) a set item comes from; for a verified answer,
    the document/passage its answer cites (``cited_*``)."""

    context_set_id: str
    entry_id: str
    set_version: int
    cited_document_id: str | None = None
    cited_passage_id: str | None = None


@dataclass(frozen=True)
class Omitted:
    """Ranked evidence left out of a pack, by reason (the footer's ``omitted``).

    Attributes:
        below_relevance_floor: Fused candidate passages under ``minRelativeScore`` × the best
            candidate's score (never read).
        over_max_items: Ranked items after the first ``maxItems``, plus fused candidates not
            read because the pack already held ``maxItems``.
        over_token_budget: Ranked items that did not fit ``maxTokens``, plus fused candidates
            not read because the budget was full (the footer's ``truncated``).
    """

    below_relevance_floor: int = 0
    over_max_items: int = 0
    over_token_budget: int = 0


@dataclass(frozen=True)
class PackFooter:
    """Last event: totals, completeness and the server's own timing breakdown (ms)."""

    tokens_used: int
    item_count: int
    truncated: bool
    complete: bool
    incomplete_reasons: tuple[str, ...]
    latency_ms: float
    timings: dict[str, float] = field(default_factory=dict)
    candidates: int = 0
    duplicates_merged: int = 0
    notes: tuple[str, ...] = ()
    omitted: Omitted = field(default_factory=Omitted)
    """Ranked evidence left out, by reason: the relevance floor, ``maxItems``, the token budget."""


PackEvent = PackHeader | PackItem | PackFooter


@dataclass(frozen=True)
class Pack:
    """A whole pack: the header, items and footer of one stream."""

    header: PackHeader
    items: tuple[PackItem, ...]
    footer: PackFooter
