"""Context packs (SPEC §3): hybrid retrieval, score fusion, as-of resolution, dedup, budget.

Pipeline of :func:`stream_pack` (every stage timed, in ms, in the footer):
1. header (pack id, replay id, budget) — emitted at once;
2. legs, concurrently (:func:`app.packs.legs.search_legs` runs
   :func:`retrieval.pipeline.run_legs`, legs per the mode's
   :class:`~retrieval.pipeline.RetrievalConfig`): BM25 over Whoosh (``HYBRID``, ``LEXICAL``)
   and query embedding + Qdrant search (``HYBRID``, ``DENSE``; each vector space whose
   passages could match the task is searched with its own model's embedding of the task
   and the lists merged into one dense ranking: :mod:`retrieval.dense`; a note names the
   models when the multilingual one took part),
   each returning :data:`~retrieval.pipeline.LEG_DEPTH` (200) passage ids whatever the budget,
   so a passage's fused score and rank do not depend on ``maxTokens``;
3. as-of visibility, per leg and before fusion (:func:`app.packs.resolve.visible_legs`): each
   leg keeps only passages of each document's version visible at ``(validTime, systemTime)``
   (a leg left short of its depth by hidden passages searches again deeper), so a later
   version or document never takes a rank and a pack as of a past time depends only on
   what was visible then. The rows this reads (each passage's document, versions and span)
   are kept across packs per workspace while its corpus generation is unchanged
   (:mod:`app.packs.row_cache`, :mod:`app.corpus.generation`): a recurring passage costs no SQL;
   fusion (:func:`app.packs.fusion.fuse_legs`; method by :func:`app.packs.types.fusion_method`):
   a current pack by :func:`retrieval.fusion.hybrid_fusion` (issue 18), a convex combination of leg scores
   scaled to each leg's top (Bruch et al. 2023), each leg weighted per query by how clearly its
   top result stands out (score gap), the dense leg's weight also scaled by the model's
   vocabulary coverage of the task (:func:`retrieval.pipeline.weigh_dense_leg`); ties by
   passage id ascending. It replaced weighted RRF, which let 13 passages found weakly by both
   legs push BM25's lone exact match of a rare code out of a 600-token pack, and trailed
   min-max on SciFact (bench/fusion.py, BENCHMARKS.md). A pack read as of a given time is
   fused by weighted RRF (Cormack et al. 2009; k = 60; ranks from 1), which depends on ranks
   only, so its RECOMPUTE is byte-identical however the corpus's BM25 statistics move;
   passages only the dense leg found must reach the model's cosine floor, and a pack
   without lexical evidence says so in its notes (:mod:`app.packs.evidence`);
   with ``sources: GRAPH`` the temporal leg (:mod:`app.packs.graph_hook`) runs after the
   others and joins the fusion as leg ``graph`` (its passages pass the cosine floor);
4. as-of resolution: only passages of each document's version visible at
   ``(validTime, systemTime)`` survive (see :mod:`app.corpus.documents`);
5. dedup: exact (same SHA-256) and near duplicates (shingle Jaccard ≥ 0.8, or ≥ 70 % of the
   passage in lines that resemble the kept item's lines: :mod:`retrieval.dedup`) collapse
   onto the best-ranked item, which lists the others as alternate citations; steps 4–5 run on rank
   windows of the fused list (80 candidates at the default budget, then doubling) until
   the budget is nearly full (see :func:`app.packs.resolve.resolve_windows`);
6. budget: greedy in rank order with measured cl100k token counts over the packable entries
   (:func:`app.packs.items.pack_entries`);
7. re-check: every item's document must still be readable *now* (``document:read``; not
   deleted, collection live — for a pack with ``asOf.systemTime``: not deleted by then, a
   deletion being a system-time event like any other) just before it is emitted; with
   ``sources: GRAPH``, ``FACT`` items (a statement's span and interval) follow their host
   passages, the lowest-ranked items giving way to fit the budget; then items (:func:`app.packs.items.pack_item`), the replay record (ids and
   hashes only), and the footer. Database reads and writes besides candidate rows: :mod:`app.packs.store`.

If ``maxLatencyMs`` passes while a leg is still running, the pack uses what has arrived and
is marked incomplete (``LATENCY``). ``REQUIRE_COMPLETE`` turns any incompleteness (latency,
a missing leg, or a top item that cannot fit) into ``CONTEXT_PACK_INCOMPLETE``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable

from cairn.app.core.errors import PackIncomplete
from cairn.app.core.ids import new_id, utcnow
from cairn.app.corpus import read_generation
from cairn.app.governance import Principal, require_scope
from cairn.app.observability import set_attributes, span
from cairn.app.packs.fusion import fuse_legs
from cairn.app.packs.graph_hook import add_fact_items, run_graph_leg
from cairn.app.packs.items import pack_entries, pack_item
from cairn.app.packs.legs import search_legs, visible_dense_spaces
from cairn.app.packs.pipeline_types import LegResults, PackServices, PackTimings, RowCache
from cairn.app.packs.resolve import resolve_windows, visible_legs
from cairn.app.packs.set_hook import leads, plan_context_set, set_item, set_reasons, without_required
from cairn.app.packs.store import check_filters, readable_now, record_replay
from cairn.app.packs.types import (
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
from cairn.retrieval.dense import DenseServed
from cairn.retrieval.packing import pack_greedy
from cairn.retrieval.pipeline import LEG_DEPTH, RETRIEVAL_CONFIGS, Ranked
from cairn.retrieval.tokens import TOKENIZER_NAME


async def stream_pack(
    services: PackServices, principal: Principal, req: PackRequest, *, trace_id: str = ""
) -> AsyncIterator[PackEvent]:
    """Build a pack as a stream of events (see module doc).

    Raises:
        BadInput: a limit of SPEC §3 (before any event is emitted).
        NotFound: a filter id outside the caller's workspace.
        Forbidden: ``DOCUMENTS`` source without ``queries:run`` (agents).
        PackIncomplete: ``REQUIRE_COMPLETE`` and the pack is incomplete (before any item).
        ContextSetScopeRefused, ContextSetInactive: the context set (``input.contextSetId`` or
            the credential's binding) refuses the request (context-set hook).
    """
    validate_pack_request(req)
    config = RETRIEVAL_CONFIGS[req.retrieval]
    if "DOCUMENTS" in req.sources:
        require_scope(
            principal,
            "queries:run",
            field="input.filters.sources",
            what="input.filters.sources DOCUMENTS (whole documents)",
        )
    started = time.monotonic()
    perf0 = time.perf_counter()
    deadline = started + req.max_latency_ms / 1000.0
    now = utcnow()
    valid_time = req.valid_time or now
    system_time = min(req.system_time or now, now)
    filters = await check_filters(services, principal, req)
    plan = await plan_context_set(services, principal, req, filters, valid_time, system_time)  # context-set hook
    set_items: list[PackItem] = []
    if plan is not None:  # context-set hook: retrieval limited to the set's scope
        filters = (plan.collection_ids, plan.document_ids)
        set_items = [set_item(rank, i) for rank, i in enumerate(plan.items, start=1)]
    header = PackHeader(
        new_id("pack"),
        new_id("rpl"),
        req.max_tokens,
        req.max_latency_ms,
        req.coverage,
        req.retrieval,
        valid_time,
        system_time,
        TOKENIZER_NAME,
        trace_id,
    )
    timings = PackTimings()
    incomplete: list[str] = []
    if req.coverage == "BEST_EFFORT":
        yield header
        for item in set_items:  # context-set hook: approved items before retrieval runs
            timings.values.setdefault("firstSetItemMs", round((time.perf_counter() - perf0) * 1000, 2))
            yield item
    # passage rows earlier packs read, valid while the workspace's documents are unchanged
    # (read the generation before any row: app/packs/row_cache.py)
    generation = await read_generation(services.db, principal.workspace_id)
    cache: RowCache = services.passage_rows.rows_for(principal.workspace_id, generation)
    more: dict[str, Callable[[int], Ranked]] = {}
    with timings.stage("legsMs"):
        if filters[0] == [] or filters[1] == []:  # context-set hook: the set's scope leaves nothing to search
            legs, served = LegResults({}, (), {"lexical": 1.0, "dense": 1.0}), DenseServed()
        else:
            legs, served = await search_legs(services, principal, req, config, filters, deadline, timings, cache, more)
    # as-of visibility before fusion (issue 14): legs rank only passages visible at the read point
    depth = LEG_DEPTH
    with timings.stage("resolveMs"):
        await visible_dense_spaces(services, principal, legs, served, valid_time, system_time, cache, depth, more)
        await visible_legs(
            services, principal, legs.ranked, valid_time, system_time, cache, depth=depth, more=more, notes=legs.notes
        )
    notes = legs.notes  # the legs' notes first (a late leg's thread may still append, as before)
    if plan is not None:  # context-set hook
        notes[:0] = plan.notes
        incomplete.extend(set_reasons(plan))
    if req.system_time is not None and req.system_time > now:  # said, not silently clamped
        notes.append(
            f"asOf.systemTime {req.system_time.isoformat()} is after now: nothing is recorded in the future, "
            f"so the pack reads as of now ({system_time.isoformat()})"
        )
    if legs.late:
        incomplete.append("LATENCY")
        notes.append(f"maxLatencyMs reached before the {', '.join(legs.late)} leg finished; used the rest")
    # temporal GRAPH leg (issue 14, app/packs/graph_hook.py): joins the legs, fused below (GRAPH_WEIGHT its prior)
    graph = None
    if "GRAPH" in req.sources:
        with span("pack.leg.graph", {"cairn.leg": "graph"}) as s:
            graph = await run_graph_leg(services, principal, req, valid_time, system_time, filters, legs)
            set_attributes(s, {"cairn.leg.results": len(legs.ranked.get("graph", ()))})
        if "graph" in legs.ranked:
            graph_only = {"graph": legs.ranked["graph"]}
            await visible_legs(
                services, principal, graph_only, valid_time, system_time, cache, depth=len(graph_only["graph"])
            )
            legs.ranked["graph"] = graph_only["graph"]
    with timings.stage("fusionMs"):
        fused = fuse_legs(legs, config, services.indexes.dense, served, notes, fusion_method(req))
    with span("pack.resolve", {"cairn.pack.fused": len(fused)}):  # as-of resolution + dedup windows
        cands, groups, unresolved = await resolve_windows(
            services, principal, fused, req, valid_time, system_time, timings, cache
        )
    t = time.perf_counter()
    merged = sum(len(g.duplicates) for g in groups)
    with span("pack.packing", {"cairn.pack.max_tokens": req.max_tokens}) as s:
        entries = await pack_entries(services, req, without_required(groups, plan))  # context-set hook
        set_tokens = plan.tokens if plan is not None else 0  # context-set hook: set items come first
        packed = pack_greedy(entries, tokens=lambda e: e.tokens, max_tokens=req.max_tokens - set_tokens)
        set_attributes(s, {"cairn.pack.entries": len(entries), "cairn.pack.included": len(packed.included)})
    timings.values["dedupPackMs"] = round(timings.values.pop("dedupMs") + (time.perf_counter() - t) * 1000, 2)
    if entries and packed.included[:1] != entries[:1]:  # PackEntry compares by identity
        if leads(plan):  # context-set hook: set items head the pack, the evidence got what they left
            incomplete.append("EVIDENCE_OVER_BUDGET")
            notes.append(
                f"the best evidence item ({entries[0].tokens} tokens) did not fit the "
                f"{req.max_tokens - set_tokens} tokens the context set's items left"
            )
        else:
            incomplete.append("TOP_ITEM_OVER_BUDGET")
    if req.coverage == "REQUIRE_COMPLETE" and incomplete:
        raise PackIncomplete(
            f"coverage REQUIRE_COMPLETE could not be met ({', '.join(incomplete)})"
            + (f" — did not fit: {'; '.join(plan.over_budget)}" if plan is not None and plan.over_budget else "")
            + "; raise input.budget.maxTokens / maxLatencyMs or use BEST_EFFORT",
            reasons=incomplete,
        )
    cited: set[str] = set()
    for e in packed.included:
        cited.add(e.group.kept.doc)
        if e.kind == "EVIDENCE":
            cited.update(d.doc for d in e.group.duplicates)
    with timings.stage("recheckMs"):
        # a pack as of a given system time keeps a document deleted after it (docs/api.md, As of a point in time)
        readable = await readable_now(
            services, principal, cited, as_of=system_time if req.system_time is not None else None
        )
    if req.coverage == "REQUIRE_COMPLETE":
        yield header
        for item in set_items:  # context-set hook
            timings.values.setdefault("firstSetItemMs", round((time.perf_counter() - perf0) * 1000, 2))
            yield item
    kept = [e for e in packed.included if e.group.kept.doc in readable]
    with timings.stage("contradictionMs"):
        flags = find_contradictions([(e.group.kept.id, e.group.kept.text) for e in kept if e.kind == "EVIDENCE"])
    first = len(set_items) + 1  # context-set hook: approved items hold ranks 1..len(set_items)
    items = [pack_item(rank, e, readable, flags) for rank, e in enumerate(kept, start=first)]
    # temporal GRAPH leg hook (issue 14): FACT items after their passages, within what the set left
    items = add_fact_items(items, graph, req.max_tokens - set_tokens, first_rank=first)
    # The replay record is written while the items stream out; the footer waits for it, so
    # a client that has the footer can replay.
    replay = asyncio.ensure_future(record_replay(services, principal, header, req, set_items + items, timings))
    try:
        for item in items:
            timings.values.setdefault("firstEvidenceItemMs", round((time.perf_counter() - perf0) * 1000, 2))
            yield item
    finally:
        if not replay.done():
            await asyncio.shield(replay)
    replay.result()
    footer = PackFooter(
        tokens_used=sum(i.tokens for i in set_items) + sum(i.tokens for i in items),
        item_count=len(set_items) + len(items),
        truncated=bool(packed.skipped) or unresolved > 0 or bool(plan and plan.skipped),
        complete=not incomplete,
        incomplete_reasons=tuple(incomplete),
        latency_ms=round((time.perf_counter() - perf0) * 1000, 2),
        timings=timings.values,
        candidates=len(cands),
        duplicates_merged=merged,
        notes=tuple(notes),
    )
    services.telemetry.record_pack(
        retrieval=req.retrieval, complete=footer.complete, timings=footer.timings, latency_ms=footer.latency_ms
    )
    yield footer


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
