"""Context packs (SPEC §3): hybrid retrieval, score fusion, as-of resolution, dedup, budget.

Pipeline of :func:`stream_pack` (every stage timed, in ms, in the footer):
1. header (pack id, replay id, budget) — emitted at once;
2. legs, concurrently (:func:`retrieval.pipeline.run_legs`, legs per the mode's
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
   fusion (:func:`app.packs.types.fusion_method`): a current pack by
   :func:`retrieval.fusion.hybrid_fusion` (issue 18), a convex combination of leg scores
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
6. budget: greedy in rank order with measured cl100k token counts;
7. re-check: every item's document must still be readable *now* (not deleted, collection
   live) just before it is emitted; with ``sources: GRAPH``, ``FACT`` items (a statement's
   span and interval) follow their host passages, the lowest-ranked items giving way to fit
   the budget; then items, the replay record (ids and hashes only),
   and the footer. Database reads and writes besides candidate rows: :mod:`app.packs.store`.

If ``maxLatencyMs`` passes while a leg is still running, the pack uses what has arrived and
is marked incomplete (``LATENCY``). ``REQUIRE_COMPLETE`` turns any incompleteness (latency,
a missing leg, or a top item that cannot fit) into ``CONTEXT_PACK_INCOMPLETE``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from datetime import datetime

import numpy as np

from cairn.app.core.errors import BadInput, PackIncomplete
from cairn.app.core.ids import new_id, utcnow
from cairn.app.corpus import read_generation
from cairn.app.governance import Principal, require_scope
from cairn.app.observability import set_attributes, span
from cairn.app.packs.evidence import apply_floor, dense_evidence, evidence_notes, similarity_floor
from cairn.app.packs.graph_hook import add_fact_items, run_graph_leg
from cairn.app.packs.pipeline_types import Candidate, LegResults, PackEntry, PackServices, PackTimings, RowCache
from cairn.app.packs.resolve import first_window, prefetch, resolve_windows, visible_legs
from cairn.app.packs.set_hook import plan_context_set, set_item, without_required
from cairn.app.packs.store import check_filters, readable_now, record_replay, whole_documents
from cairn.app.packs.types import (
    RRF_K,
    Citation,
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
from cairn.retrieval.dense import DenseModels, DenseServed, merge_spaces
from cairn.retrieval.fusion import Fused, hybrid_fusion, rrf
from cairn.retrieval.packing import pack_greedy
from cairn.retrieval.pipeline import LEG_DEPTH, RETRIEVAL_CONFIGS, Legs, Ranked, RetrievalConfig, run_legs
from cairn.retrieval.tokens import TOKENIZER_NAME


async def _legs(
    services: PackServices,
    principal: Principal,
    req: PackRequest,
    config: RetrievalConfig,
    filters: tuple[list[str] | None, list[str] | None],
    deadline: float,
    timings: PackTimings,
    cache: RowCache,
    more: dict[str, Callable[[int], Ranked]],
) -> tuple[LegResults, DenseServed]:
    """Bind the leg searches to the caller's workspace, filters and depth, and run them
    (:func:`retrieval.pipeline.run_legs`) until ``deadline`` (monotonic seconds).

    ``more`` receives, per leg that ran, the same search at another limit (the dense one
    reuses the task's query vector in each space it searched, merged again at that limit),
    for :func:`app.packs.resolve.visible_legs` to over-fetch.

    Returns:
        The legs' results, and what the dense leg searched (models, each passage's space;
        an over-fetch adds the spaces of the passages it found).

    While the dense leg embeds the task, BM25's top ``first_window(maxTokens)`` candidates'
    rows are read into ``cache`` (:func:`app.packs.resolve.prefetch`).

    Raises:
        BadInput: ``DENSE`` on a server without an embedding model.
    """
    idx = services.indexes
    colls, docs = filters
    depth = LEG_DEPTH  # never from the budget: a passage's fused score must not depend on maxTokens
    dense, vectors = idx.dense, idx.vectors
    served = DenseServed()
    if config.dense_only and (dense is None or vectors is None):
        raise BadInput(
            "input.retrieval DENSE needs an embedding model; this server runs without one "
            "(CAIRN_EMBEDDER=none): use HYBRID or LEXICAL",
            field="input.retrieval",
        )
    ws = principal.workspace_id

    def lexical(limit: int = depth) -> Ranked:
        with span("pack.leg.bm25", {"cairn.leg": "bm25", "cairn.leg.depth": limit}) as s:
            out = idx.lexical.search(req.task, workspace_id=ws, collection_ids=colls, document_ids=docs, limit=limit)
            set_attributes(s, {"cairn.leg.results": len(out)})
            return out

    more["lexical"] = lexical
    if dense is None or vectors is None:
        legs = Legs(lexical)  # HYBRID: the pipeline notes the missing dense leg
    else:

        def route() -> tuple[str, ...]:
            return dense.task_spaces(
                req.task,
                multilingual_has_passages=lambda: vectors.has_space(dense.multilingual_space or "", workspace_id=ws),
            )

        # asking the store whether the workspace has multilingual passages is I/O (a server in cluster mode)
        spaces = await asyncio.to_thread(route) if dense.multilingual is not None else route()
        served.cjk = dense.primary_space not in spaces
        served.models = [dense.by_space[name].name for name in spaces]
        coverage_of = getattr(dense.primary, "vocabulary_coverage", None)

        def coverage() -> float | None:
            if coverage_of is None or dense.primary_space not in spaces:
                return None
            return float(coverage_of(req.task))

        def encode() -> Mapping[str, np.ndarray]:
            with span("pack.leg.dense.embed", {"cairn.leg": "dense", "cairn.embedder": " + ".join(served.models)}):
                return dense.encode_task(req.task, spaces)

        def search_space(name: str, vec: np.ndarray, limit: int) -> Ranked:
            out = vectors.search(vec, workspace_id=ws, collection_ids=colls, document_ids=docs, limit=limit, space=name)
            served.space_of.update((pid, name) for pid, _ in out)
            return out

        def deeper(name: str, vec: np.ndarray) -> Callable[[int], Ranked]:
            def run(limit: int) -> Ranked:
                attrs = {"cairn.leg": "dense", "cairn.leg.depth": limit, "cairn.vector.space": name}
                with span("pack.leg.dense.search", attrs) as s:
                    out = search_space(name, vec, limit)
                    set_attributes(s, {"cairn.leg.results": len(out)})
                    return out

            return run

        def search(query: Mapping[str, np.ndarray], limit: int = depth) -> Ranked:
            more["dense"] = lambda n: search(query, n)  # the over-fetch reuses the task's vector(s)
            served.more = {name: deeper(name, vec) for name, vec in query.items()}
            with span("pack.leg.dense.search", {"cairn.leg": "dense", "cairn.leg.depth": limit}) as s:
                served.lists = {name: search_space(name, vec, limit) for name, vec in query.items()}
                out = merge_spaces(served.lists, limit)
                set_attributes(s, {"cairn.leg.results": len(out)})
                return out

        legs = Legs(lexical, encode=encode, search_vectors=search, coverage=coverage)

    async def warm(lexical: Sequence[tuple[str, float]], dense_finished: Callable[[], bool]) -> None:
        ids = [pid for pid, _ in lexical[: first_window(req.max_tokens)]]
        await prefetch(services, principal, ids, cache, until=dense_finished)

    return await run_legs(config, legs, deadline=deadline, timings=timings.values, warm=warm), served


async def _visible_dense_spaces(
    services: PackServices,
    principal: Principal,
    legs: LegResults,
    served: DenseServed,
    valid_time: datetime,
    system_time: datetime,
    cache: RowCache,
    depth: int,
    more: dict[str, Callable[[int], Ranked]],
) -> None:
    """When the dense leg searched several vector spaces: as-of visibility per space, *then* the
    merge (:func:`retrieval.dense.merge_spaces` interleaves by rank, so hiding a passage of one
    space after the merge would shift the other space's passages; per space, a pack as of a
    past time ranks exactly what was visible then). Each space over-fetches on its own
    (reusing its query vector); ``legs.ranked["dense"]`` becomes the merged visible list and
    needs no further over-fetch (``more["dense"]`` is dropped)."""
    if "dense" not in legs.ranked or len(served.lists) < 2:
        return
    lists = {f"dense/{name}": ranked for name, ranked in served.lists.items()}
    deeper = {f"dense/{name}": run for name, run in served.more.items()}
    await visible_legs(
        services, principal, lists, valid_time, system_time, cache, depth=depth, more=deeper, notes=legs.notes
    )
    legs.ranked["dense"] = merge_spaces({name[len("dense/") :]: ranked for name, ranked in lists.items()}, depth)
    more.pop("dense", None)


def _fuse(
    legs: LegResults,
    config: RetrievalConfig,
    dense: DenseModels | None,
    served: DenseServed,
    notes: list[str],
    method: str,
) -> list[Fused]:
    """Fuse the legs that finished, apply the dense similarity floor (each passage's by the model
    of its space), and add the evidence notes and which dense models served the task.

    ``method`` (:func:`app.packs.types.fusion_method`): ``SCORE`` =
    :func:`retrieval.fusion.hybrid_fusion` (``legs.weights`` its static priors; a dense leg
    enters as :func:`app.packs.evidence.dense_evidence`: each model's cosines rescaled from
    that model's unrelated-text baseline to its top one, so cosines of two models are never
    compared); ``RANK`` =
    RRF (Cormack et al. 2009, k = 60, ranks from 1, ``legs.weights`` per leg), for packs read as
    of a given time, so they are reproducible byte for byte.
    """
    results = legs.ids()
    cosine = legs.cosine()
    weights = legs.weights
    if not results:
        fused: list[Fused] = []
    elif method == "RANK":
        fused = rrf(results, k=RRF_K, weights=weights)
        if len(results) > 1:
            notes.append("legs fused by rank (RRF): the pack reads as of a given time, so it is reproducible")
    else:
        scored = legs.ranked
        if "dense" in scored and dense is not None:
            scored = {**scored, "dense": dense_evidence(scored["dense"], served.space_of, dense.by_space)}
        fused = hybrid_fusion(scored, weights)
    ran = {k: v for k, v in results.items() if weights.get(k, 1.0) > 0}
    by_space = dense.by_space if dense is not None else {}
    multi = dense.multilingual_space if dense is not None else None
    floor_of = {
        name: similarity_floor(model, cross_lingual=name == multi and not served.cjk)
        for name, model in by_space.items()
    }
    if "dense" in ran:
        fused = apply_floor(fused, cosine, {pid: floor_of.get(space) for pid, space in served.space_of.items()})
    model_names = served.models or [getattr(dense.primary if dense else None, "name", "none")]
    floors = [similarity_floor(m) for m in by_space.values() if m.name in model_names]
    notes.extend(
        evidence_notes(
            config.name,
            ran,
            cosine,
            floors[0] if len(floors) == 1 else None,
            sum(1 for f in fused if "lexical" not in f.ranks),
            " + ".join(model_names),
            floor_text=" and ".join(
                (f"floor {f:.2f} for {m.name}" if f is not None else f"no floor for {m.name}")
                for m, f in ((m, similarity_floor(m)) for m in by_space.values() if m.name in model_names)
            )
            if len(floors) > 1
            else None,
        )
    )
    if "dense" in results and dense is not None and dense.multilingual is not None and served.models:
        if served.cjk:
            notes.append(
                f"dense leg: {served.models[0]} (the task is written in Chinese/Japanese/Korean script, "
                "which the English model cannot read)"
            )
        elif len(served.models) > 1:
            notes.append(
                f"dense leg: {served.models[0]} for this workspace's passages in other scripts + "
                f"{served.models[1]} for its Chinese/Japanese/Korean passages (cross-lingual), merged by rank"
            )
    if 0.0 < weights.get("dense", 1.0) < 1.0 and "dense" in results:
        notes.append(
            f"dense leg weighted {weights['dense']:.2f} (the embedding model reads part of the task as unknown words)"
        )
    return fused


async def _entries(
    services: PackServices, req: PackRequest, groups: Sequence[DedupGroup[Candidate]]
) -> list[PackEntry]:
    """Packable entries in rank order: evidence groups (``PASSAGES``), then whole documents of
    the 20 best-ranked documents (``DOCUMENTS``)."""
    entries: list[PackEntry] = []
    if "PASSAGES" in req.sources:
        entries.extend(PackEntry("EVIDENCE", g, g.kept.tokens) for g in groups)
    if "DOCUMENTS" in req.sources:
        seen: set[str] = set()
        best_docs: list[DedupGroup[Candidate]] = []
        for g in groups:
            if g.kept.doc not in seen:
                seen.add(g.kept.doc)
                best_docs.append(g)
        entries.extend(await whole_documents(services, best_docs[:20]))
    return entries


def _citation(
    c: Candidate,
    passage_id: str | None = None,
    start: int | None = None,
    end: int | None = None,
    sha: str | None = None,
    *,
    whole: bool = False,
) -> Citation:
    """A candidate's citation, naming its source (external id, title, collection id and name);
    ``whole``: the whole chosen version (no passage, ``start``/``end``/``sha`` given)."""
    return Citation(
        c.doc,
        c.version,
        None if whole else c.id,
        c.start if start is None else start,
        c.end if end is None else end,
        c.sha if sha is None else sha,
        external_id=c.external_id,
        document_title=c.title,
        collection_id=c.collection,
        collection_name=c.collection_name,
    )


def _item(rank: int, e: PackEntry, readable: set[str], flags: dict[str, set[str]]) -> PackItem:
    """One pack item from an entry; alternates only from documents readable now."""
    c = e.group.kept
    if e.whole is None:  # EVIDENCE
        text = c.text
        cit = _citation(c)
        alts = tuple(_citation(d) for d in e.group.duplicates if d.doc in readable)
        others = tuple(sorted(flags.get(c.id, ())))
    else:  # WHOLE_DOCUMENT
        text = e.whole.text
        cit = _citation(c, None, 0, len(text), e.whole.sha256, whole=True)
        alts, others = (), ()
    return PackItem(
        rank,
        e.kind,
        text,
        e.tokens,
        "UNTRUSTED",
        round(c.score, 8),
        c.ranks.get("lexical"),
        c.ranks.get("dense"),
        cit,
        alts,
        c.title,
        c.collection,
        c.valid_from,
        c.valid_to,
        c.superseded,
        bool(others),
        others,
        external_id=c.external_id,
        collection_name=c.collection_name,
    )


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
            legs, served = await _legs(services, principal, req, config, filters, deadline, timings, cache, more)
    # as-of visibility before fusion (issue 14): legs rank only passages visible at the read point
    depth = LEG_DEPTH
    with timings.stage("resolveMs"):
        await _visible_dense_spaces(services, principal, legs, served, valid_time, system_time, cache, depth, more)
        await visible_legs(
            services, principal, legs.ranked, valid_time, system_time, cache, depth=depth, more=more, notes=legs.notes
        )
    notes = legs.notes  # the legs' notes first (a late leg's thread may still append, as before)
    if plan is not None:  # context-set hook
        notes[:0] = plan.notes
        if plan.missing_required:
            incomplete.append("REQUIRED_EVIDENCE")
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
        fused = _fuse(legs, config, services.indexes.dense, served, notes, fusion_method(req))
    with span("pack.resolve", {"cairn.pack.fused": len(fused)}):  # as-of resolution + dedup windows
        cands, groups, unresolved = await resolve_windows(
            services, principal, fused, req, valid_time, system_time, timings, cache
        )
    t = time.perf_counter()
    merged = sum(len(g.duplicates) for g in groups)
    with span("pack.packing", {"cairn.pack.max_tokens": req.max_tokens}) as s:
        entries = await _entries(services, req, without_required(groups, plan))  # context-set hook
        set_tokens = plan.tokens if plan is not None else 0  # context-set hook: set items come first
        packed = pack_greedy(entries, tokens=lambda e: e.tokens, max_tokens=req.max_tokens - set_tokens)
        set_attributes(s, {"cairn.pack.entries": len(entries), "cairn.pack.included": len(packed.included)})
    timings.values["dedupPackMs"] = round(timings.values.pop("dedupMs") + (time.perf_counter() - t) * 1000, 2)
    if entries and packed.included[:1] != entries[:1]:  # PackEntry compares by identity
        incomplete.append("TOP_ITEM_OVER_BUDGET")
    if req.coverage == "REQUIRE_COMPLETE" and incomplete:
        raise PackIncomplete(
            f"coverage REQUIRE_COMPLETE could not be met ({', '.join(incomplete)}); raise "
            "input.budget.maxTokens / maxLatencyMs or use BEST_EFFORT",
            reasons=incomplete,
        )
    cited: set[str] = set()
    for e in packed.included:
        cited.add(e.group.kept.doc)
        if e.kind == "EVIDENCE":
            cited.update(d.doc for d in e.group.duplicates)
    with timings.stage("recheckMs"):
        readable = await readable_now(services, principal, cited)
    if req.coverage == "REQUIRE_COMPLETE":
        yield header
        for item in set_items:  # context-set hook
            timings.values.setdefault("firstSetItemMs", round((time.perf_counter() - perf0) * 1000, 2))
            yield item
    kept = [e for e in packed.included if e.group.kept.doc in readable]
    with timings.stage("contradictionMs"):
        flags = find_contradictions([(e.group.kept.id, e.group.kept.text) for e in kept if e.kind == "EVIDENCE"])
    first = len(set_items) + 1  # context-set hook: approved items hold ranks 1..len(set_items)
    items = [_item(rank, e, readable, flags) for rank, e in enumerate(kept, start=first)]
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
