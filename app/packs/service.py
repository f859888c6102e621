"""Context packs (SPEC §3): hybrid retrieval, score fusion, as-of resolution, dedup, budget.

:func:`stream_pack` runs the stages below in order; each is a function that *returns* its result
(frozen values of :mod:`app.packs.pipeline_types` where it fits) and reads the pack's
:class:`~app.packs.pipeline_types.PackRun` (request, principal, read point, scope, deadline, row
cache); nothing is written into a stage's result after it returned. Stage times (ms) go to the
footer through :meth:`PackTimings.stage <app.packs.pipeline_types.PackTimings.stage>`. The parts
a request enables are :class:`~app.packs.pipeline_types.PackHook` s run at fixed points: a
context set (:class:`app.packs.set_hook.ContextSetHook`) and ``sources: GRAPH``
(:class:`app.packs.graph_hook.GraphHook`).

1. plan (:func:`plan_run`): limits, scopes, the read point ``(validTime, systemTime)``, filter
   ids, the workspace's passage rows at its corpus generation (:mod:`app.packs.row_cache`,
   :mod:`app.corpus.generation`: a recurring passage costs no SQL), and the hooks — a context
   set narrows the scope and its items become the pack's lead (``before_retrieval``). The
   header (:func:`pack_header`) and the lead's items are emitted at once (``BEST_EFFORT``);
2. legs (:func:`app.packs.legs.search_legs` runs :func:`retrieval.pipeline.run_legs`, legs per
   the mode's :class:`~retrieval.pipeline.RetrievalConfig`), concurrently: BM25 over Whoosh
   (``HYBRID``, ``LEXICAL``) and query embedding + Qdrant search (``HYBRID``, ``DENSE``; each
   vector space whose passages could match the task is searched with its own model's embedding
   of the task and the lists merged into one dense ranking: :mod:`retrieval.dense`; a note
   names the models when the multilingual one took part), each returning
   :data:`~retrieval.pipeline.LEG_DEPTH` (200) passage ids whatever the budget, so a passage's
   fused score and rank do not depend on ``maxTokens``. A leg still running at ``maxLatencyMs``
   is dropped with everything it would have returned;
3. visibility (:func:`app.packs.legs.visible_found`, :func:`app.packs.resolve.visible_legs`),
   per leg and before fusion: each leg keeps only passages of each document's version visible at
   ``(validTime, systemTime)`` (a leg left short of its depth by hidden passages searches again
   deeper through its :class:`~app.packs.pipeline_types.LegSearch`; a multi-space dense leg per
   space, then merged), so a later version or document never takes a rank and a pack as of a
   past time depends only on what was visible then. Then the hooks' ``before_fusion``: with
   ``sources: GRAPH`` the temporal leg (:mod:`app.packs.graph_hook`) joins as leg ``graph``;
4. fusion (:func:`app.packs.fusion.fuse_legs`; method by :func:`app.packs.types.fusion_method`):
   a current pack by :func:`retrieval.fusion.hybrid_fusion` (issue 18), a convex combination of
   leg scores scaled to each leg's top (Bruch et al. 2023), each leg weighted per query by how
   clearly its top result stands out (score gap), the dense leg's weight also scaled by the
   model's vocabulary coverage of the task (:func:`retrieval.pipeline.weigh_dense_leg`); ties by
   passage id ascending. It replaced weighted RRF, which let 13 passages found weakly by both
   legs push BM25's lone exact match of a rare code out of a 600-token pack, and trailed
   min-max on SciFact (bench/fusion.py, BENCHMARKS.md). A pack read as of a given time is
   fused by weighted RRF (Cormack et al. 2009; k = 60; ranks from 1), which depends on ranks
   only, so its RECOMPUTE is byte-identical however the corpus's BM25 statistics move;
   passages only the dense leg found must reach the model's cosine floor (the ``graph`` leg's
   pass it), and a pack without lexical evidence says so in its notes (:mod:`app.packs.evidence`).
   With ``relevance.minRelativeScore`` the fused candidates under that share of the best one's
   score are left out here, before anything is read (:mod:`app.packs.relevance`; counted in the
   footer's ``omitted.belowRelevanceFloor``);
5. resolve: only passages of each document's version visible at ``(validTime, systemTime)``
   survive (see :mod:`app.corpus.documents`);
6. dedup: exact (same SHA-256) and near duplicates (shingle Jaccard ≥ 0.8, or ≥ 70 % of the
   passage in lines that resemble the kept item's lines: :mod:`retrieval.dedup`) collapse
   onto the best-ranked item, which lists the others as alternate citations; steps 5–6 run on
   rank windows of the fused list (80 candidates at the default budget, then doubling) until
   the budget is nearly full (:func:`app.packs.resolve.resolve_windows`);
7. pack (:func:`app.packs.items.pack_evidence`): the hooks' ``before_packing`` (a context set
   drops what its required items quote), then greedy in rank order with measured cl100k token
   counts over the packable entries, within the budget the lead left; incompleteness
   (:func:`shortfall`); with ``budget.maxItems`` at most that many entries (the rest counted
   in ``omitted.overMaxItems``, those over the budget in ``omitted.overTokenBudget``);
8. re-check and items: every item's document must still be readable *now* (``document:read``;
   not deleted, collection live — for a pack with ``asOf.systemTime``: not deleted by then, a
   deletion being a system-time event like any other) just before it is emitted; items
   (:func:`app.packs.items.pack_item`), then the hooks' ``after_packing`` (with ``sources:
   GRAPH``, ``FACT`` items — a statement's span and interval — follow their host passages, the
   lowest-ranked items giving way to fit the budget);
9. emit: the items, the replay record (ids and hashes only; written while the items stream) and
   the footer, as events the transports serialize (:mod:`app.packs.serialize`,
   ``resolvers/packs.py``). Database reads and writes besides candidate rows: :mod:`app.packs.store`.

If ``maxLatencyMs`` passes while a leg is still running, the pack uses what has arrived and
is marked incomplete (``LATENCY``). ``REQUIRE_COMPLETE`` turns any incompleteness (latency,
a missing leg, or a top item that cannot fit) into ``CONTEXT_PACK_INCOMPLETE``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import replace

from cairn.app.core.errors import PackIncomplete
from cairn.app.core.ids import new_id, utcnow
from cairn.app.corpus import read_generation
from cairn.app.governance import Principal, require_scope
from cairn.app.observability import set_attributes, span
from cairn.app.packs.fusion import Fusion, fuse_legs
from cairn.app.packs.graph_hook import GraphHook
from cairn.app.packs.items import Packed, pack_evidence, pack_item
from cairn.app.packs.legs import search_legs, visible_found
from cairn.app.packs.pipeline_types import Candidate, LegResults, PackHook, PackRun, PackServices, PackTimings
from cairn.app.packs.relevance import Floored, floor_note, relevance_floor
from cairn.app.packs.resolve import Resolved, resolve_windows
from cairn.app.packs.set_hook import ContextSetHook
from cairn.app.packs.store import check_filters, readable_now, record_replay
from cairn.app.packs.types import (
    Omitted,
    Pack,
    PackEvent,
    PackFooter,
    PackHeader,
    PackItem,
    PackRequest,
    fusion_method,
    validate_pack_request,
)
from cairn.retrieval.contradiction import find_contradictions
from cairn.retrieval.dedup import DedupGroup
from cairn.retrieval.pipeline import RETRIEVAL_CONFIGS
from cairn.retrieval.tokens import TOKENIZER_NAME


async def stream_pack(
    services: PackServices, principal: Principal, req: PackRequest, *, trace_id: str = ""
) -> AsyncIterator[PackEvent]:
    """Build a pack as a stream of events: the stages of the module doc, each returning its result.

    Raises:
        BadInput: a limit of SPEC §3 (before any event is emitted).
        NotFound: a filter id outside the caller's workspace.
        Forbidden: ``DOCUMENTS`` source without ``queries:run`` (agents).
        PackIncomplete: ``REQUIRE_COMPLETE`` and the pack is incomplete (before any item).
        ContextSetScopeRefused, ContextSetInactive: the context set (``input.contextSetId`` or
            the credential's binding) refuses the request (:class:`app.packs.set_hook.ContextSetHook`).
    """
    run, hooks = await plan_run(services, principal, req, trace_id=trace_id)
    timings, header = run.timings, pack_header(run)
    if req.coverage == "BEST_EFFORT":
        for event in opening(run, header):
            yield event
    with timings.stage("legsMs"):
        found = await search_legs(run)
    with timings.stage("resolveMs"):  # as-of visibility before fusion (issue 14)
        legs, served = await visible_found(run, found)
    timings.values.update(legs.timings)
    legs = with_read_point_notes(run, legs)
    for n, hook in enumerate(hooks):
        legs, hooks[n] = await hook.before_fusion(run, legs)
    with timings.stage("fusionMs"):
        fusion = fuse_legs(legs, run.config, services.indexes.dense, served, fusion_method(req))
        floored = relevance_floor(fusion.fused, min_relative_score=req.min_relative_score)
    with span("pack.resolve", {"cairn.pack.fused": len(floored.kept)}):  # as-of resolution + dedup windows
        resolved = await resolve_windows(run, floored.kept)
    timings.add("resolveMs", resolved.resolve_ms)
    attrs = {"cairn.pack.max_tokens": req.max_tokens}
    with timings.stage("dedupPackMs", trace="pack.packing", attributes=attrs, plus_ms=resolved.dedup_ms) as s:
        packed = await pack_evidence(run, before_packing(hooks, resolved.groups))
        set_attributes(s, {"cairn.pack.entries": len(packed.entries), "cairn.pack.included": len(packed.included)})
    incomplete, budget_note = shortfall(run, legs, packed)
    if req.coverage == "REQUIRE_COMPLETE" and incomplete:
        raise PackIncomplete(incomplete_message(run, incomplete), reasons=incomplete)
    with timings.stage("recheckMs"):  # a pack as of a given system time keeps a document deleted after it
        readable = await readable_now(services, principal, cited(packed), as_of=run.as_of_system_time)
    if req.coverage == "REQUIRE_COMPLETE":
        for event in opening(run, header):
            yield event
    kept = [e for e in packed.included if e.group.kept.doc in readable]
    with timings.stage("contradictionMs"):
        flags = find_contradictions([(e.group.kept.id, e.group.kept.text) for e in kept if e.kind == "EVIDENCE"])
    items = [pack_item(rank, e, readable, flags) for rank, e in enumerate(kept, start=run.first_rank)]
    for hook in hooks:
        items = hook.after_packing(run, items)
    # The replay record is written while the items stream out; the footer waits for it, so
    # a client that has the footer can replay.
    replay = asyncio.ensure_future(record_replay(services, principal, header, req, [*run.lead.items, *items]))
    try:
        for item in items:
            timings.since("firstEvidenceItemMs", run.started)
            yield item
    finally:
        if not replay.done():
            await asyncio.shield(replay)
    timings.values["replayMs"] = replay.result()
    omitted = omissions(floored, resolved, packed)
    footer = PackFooter(
        tokens_used=sum(i.tokens for i in run.lead.items) + sum(i.tokens for i in items),
        item_count=len(run.lead.items) + len(items),
        truncated=omitted.over_token_budget > 0 or run.lead.truncated,
        complete=not incomplete,
        incomplete_reasons=tuple(incomplete),
        latency_ms=round((time.perf_counter() - run.started) * 1000, 2),
        timings=timings.values,
        candidates=len(resolved.candidates),
        duplicates_merged=sum(len(g.duplicates) for g in resolved.groups),
        notes=(*run.lead.notes, *legs.notes, *fusion.notes, *relevance_notes(req, floored, fusion), *budget_note),
        omitted=omitted,
    )
    services.telemetry.record_pack(
        retrieval=req.retrieval, complete=footer.complete, timings=footer.timings, latency_ms=footer.latency_ms
    )
    yield footer


async def plan_run(
    services: PackServices, principal: Principal, req: PackRequest, *, trace_id: str
) -> tuple[PackRun, list[PackHook]]:
    """The plan stage: check the request, fix the read point and deadline, check the filters,
    take the workspace's passage rows at its corpus generation, and plan the hooks the request
    enables (a context set: :class:`~app.packs.set_hook.ContextSetHook`; ``sources: GRAPH``:
    :class:`~app.packs.graph_hook.GraphHook`), each narrowing the run before retrieval.

    Raises:
        BadInput, Forbidden, NotFound, PackIncomplete, ContextSetScopeRefused,
        ContextSetInactive: as :func:`stream_pack` (before any event).
    """
    validate_pack_request(req)
    if "DOCUMENTS" in req.sources:
        require_scope(
            principal,
            "queries:run",
            field="input.filters.sources",
            what="input.filters.sources DOCUMENTS (whole documents)",
        )
    started, deadline = time.perf_counter(), time.monotonic() + req.max_latency_ms / 1000.0
    now = utcnow()
    filters = await check_filters(services, principal, req)
    # passage rows earlier packs read, valid while the workspace's documents are unchanged
    # (read the generation before any row: app/packs/row_cache.py)
    generation = await read_generation(services.db, principal.workspace_id)
    run = PackRun(
        services,
        principal,
        req,
        RETRIEVAL_CONFIGS[req.retrieval],
        trace_id,
        now,
        valid_time=req.valid_time or now,
        system_time=min(req.system_time or now, now),
        started=started,
        deadline=deadline,
        filters=filters,
        cache=services.passage_rows.rows_for(principal.workspace_id, generation),
        timings=PackTimings(),
    )
    context_set = await ContextSetHook.plan_for(run)
    hooks: list[PackHook] = [
        *([context_set] if context_set is not None else []),
        *([GraphHook()] if "GRAPH" in req.sources else []),
    ]
    for hook in hooks:
        run = hook.before_retrieval(run)
    return run, hooks


def pack_header(run: PackRun) -> PackHeader:
    """The pack's header: new pack and replay ids, the budget, the read point, the tokenizer."""
    req = run.req
    return PackHeader(
        new_id("pack"),
        new_id("rpl"),
        req.max_tokens,
        req.max_latency_ms,
        req.coverage,
        req.retrieval,
        run.valid_time,
        run.system_time,
        TOKENIZER_NAME,
        run.trace_id,
    )


def opening(run: PackRun, header: PackHeader) -> Iterator[PackEvent]:
    """The header, then the lead's items (a context set's), timing the first (``firstSetItemMs``)."""
    yield header
    for item in run.lead.items:
        run.timings.since("firstSetItemMs", run.started)
        yield item


def with_read_point_notes(run: PackRun, legs: LegResults) -> LegResults:
    """The legs with the pipeline's notes after theirs: an ``asOf.systemTime`` after now (said,
    not silently clamped) and legs that missed ``maxLatencyMs``."""
    notes = list(legs.notes)
    asked = run.req.system_time
    if asked is not None and asked > run.now:
        notes.append(
            f"asOf.systemTime {asked.isoformat()} is after now: nothing is recorded in the future, "
            f"so the pack reads as of now ({run.system_time.isoformat()})"
        )
    if legs.late:
        notes.append(f"maxLatencyMs reached before the {', '.join(legs.late)} leg finished; used the rest")
    return replace(legs, notes=notes)


def before_packing(hooks: Sequence[PackHook], groups: Sequence[DedupGroup[Candidate]]) -> list[DedupGroup[Candidate]]:
    """The evidence groups left for the budget once every hook dropped what its lead quotes."""
    out = list(groups)
    for hook in hooks:
        out = hook.before_packing(out)
    return out


def shortfall(run: PackRun, legs: LegResults, packed: Packed) -> tuple[list[str], tuple[str, ...]]:
    """The pack's incompleteness reasons (:data:`app.packs.types.INCOMPLETE_REASONS`, in order:
    the lead's, ``LATENCY``, the best evidence item over the budget) and the note that explains
    an evidence item left out behind the lead (``EVIDENCE_OVER_BUDGET``)."""
    reasons = [*run.lead.reasons, *(["LATENCY"] if legs.late else [])]
    if not packed.top_left_out:
        return reasons, ()
    if not run.lead.heads:
        return [*reasons, "TOP_ITEM_OVER_BUDGET"], ()
    note = (
        f"the best evidence item ({packed.entries[0].tokens} tokens) did not fit the "
        f"{run.evidence_tokens} tokens the context set's items left"
    )
    return [*reasons, "EVIDENCE_OVER_BUDGET"], (note,)


def omissions(floored: Floored, resolved: Resolved, packed: Packed) -> Omitted:
    """The footer's ``omitted``: candidates under the relevance floor; entries after ``maxItems``
    (and, when resolution stopped there, the candidates below it); entries over the token
    budget (and the candidates below the last window when the budget stopped resolution)."""
    by_count = resolved.unresolved if resolved.full_by_count else 0
    return Omitted(
        below_relevance_floor=floored.below,
        over_max_items=packed.over_max_items + by_count,
        over_token_budget=packed.skipped + resolved.unresolved - by_count,
    )


def relevance_notes(req: PackRequest, floored: Floored, fusion: Fusion) -> tuple[str, ...]:
    """The note on the relevance floor when it left candidates out."""
    if req.min_relative_score is None or not floored.below:
        return ()
    return (floor_note(floored, req.min_relative_score, fusion.fused[0].score),)


def incomplete_message(run: PackRun, reasons: Sequence[str]) -> str:
    """``CONTEXT_PACK_INCOMPLETE``'s message: the reasons, what of the lead did not fit, the remedy."""
    over = run.lead.over_budget
    return (
        f"coverage REQUIRE_COMPLETE could not be met ({', '.join(reasons)})"
        + (f" — did not fit: {'; '.join(over)}" if over else "")
        + "; raise input.budget.maxTokens / maxLatencyMs or use BEST_EFFORT"
    )


def cited(packed: Packed) -> set[str]:
    """Documents the packed entries cite (an evidence item's alternates' documents too)."""
    out: set[str] = set()
    for e in packed.included:
        out.add(e.group.kept.doc)
        if e.kind == "EVIDENCE":
            out.update(d.doc for d in e.group.duplicates)
    return out


async def build_pack(services: PackServices, principal: Principal, req: PackRequest, *, trace_id: str = "") -> Pack:
    """Collect :func:`stream_pack` into a :class:`Pack` (identical items by construction).

    Raises:
        Whatever :func:`stream_pack` raises.
    """
    header: PackHeader | None = None
    footer: PackFooter | None = None
    items: list[PackItem] = []
    async for event in stream_pack(services, principal, req, trace_id=trace_id):
        if isinstance(event, PackHeader):
            header = event
        elif isinstance(event, PackItem):
            items.append(event)
        else:
            footer = event
    if header is None or footer is None:
        raise RuntimeError("pack stream ended without a header or footer")
    return Pack(header, tuple(items), footer)
