"""Context packs (SPEC §3): hybrid retrieval, RRF fusion, as-of resolution, dedup, budget.

Pipeline of :func:`stream_pack` (every stage timed, in ms, in the footer):
1. header (pack id, replay id, budget) — emitted at once;
2. legs, concurrently: BM25 over Whoosh (``HYBRID``, ``LEXICAL``) and query embedding +
   Qdrant search (``HYBRID``, ``DENSE``),
   each returning ``depth = clamp(maxTokens / 40, 100, 1000)`` passage ids;
3. RRF (Cormack et al. 2009; k = 60; ranks from 1; ties by passage id ascending), the dense
   leg weighted by the model's vocabulary coverage of the task (see DENSE_COVERAGE_POWER);
   passages only the dense leg found must reach the model's cosine floor, and a pack
   without lexical evidence says so in its notes (:mod:`app.packs.evidence`);
4. as-of resolution: only passages of each document's version visible at
   ``(validTime, systemTime)`` survive (see :mod:`app.corpus.documents`);
5. dedup: exact (same SHA-256) and near duplicates (shingle Jaccard ≥ 0.8, or ≥ 70 % of the
   passage in lines that resemble the kept item's lines: :mod:`retrieval.dedup`) collapse
   onto the best-ranked item, which lists the others as alternate citations; steps 4–5 run on rank
   windows of the fused list (80 candidates at the default budget, then doubling) until
   the budget is nearly full (see :func:`app.packs.resolve.resolve_windows`);
6. budget: greedy in rank order with measured cl100k token counts;
7. re-check: every item's document must still be readable *now* (not deleted, collection
   live) just before it is emitted; then items, the replay record (ids and hashes only),
   and the footer.

If ``maxLatencyMs`` passes while a leg is still running, the pack uses what has arrived and
is marked incomplete (``LATENCY``). ``REQUIRE_COMPLETE`` turns any incompleteness (latency,
a missing leg, or a top item that cannot fit) into ``CONTEXT_PACK_INCOMPLETE``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from datetime import timedelta

from sqlalchemy import select

from app.contextsets import SetItem, plan_set
from app.core.errors import BadInput, NotFound, PackIncomplete
from app.core.ids import new_id, sha256_text, utcnow
from app.core.models import Collection, Document, DocumentVersion, ReplayRecord
from app.governance import Principal, require_scope
from app.packs.evidence import apply_floor, evidence_notes, similarity_floor
from app.packs.resolve import first_window, prefetch, resolve_windows
from app.packs.types import (
    RRF_K,
    Citation,
    ContextSetEntryRef,
    Pack,
    PackEvent,
    PackFooter,
    PackHeader,
    PackItem,
    PackRequest,
    validate_pack_request,
)
from retrieval.contradiction import find_contradictions
from retrieval.fusion import rrf
from retrieval.packing import pack_greedy
from retrieval.tokens import TOKENIZER_NAME, count_tokens

REPLAY_TTL = timedelta(days=30)
DENSE_COVERAGE_POWER = 4
DENSE_MIN_COVERAGE = 0.9
"""Dense-leg weight = coverage ** 4 (1.0 at full coverage, 0.66 at 0.9), and 0 — the leg is
skipped — below 90 % coverage. Measured on JSQuAD valid (first 1,000 questions,
bench/beir.py, R@10 / nDCG@10): unweighted RRF 0.831 / 0.584; coverage**4 0.932 / 0.730;
+ skip below 0.8: 0.937 / 0.824; + skip below 0.9: 0.939 / 0.884; BM25 alone 0.955 / 0.912.
SciFact HYBRID nDCG@10 is unchanged (0.7105): English claims have coverage ≈ 1."""


def retrieval_depth(max_tokens: int) -> int:
    """Candidates per leg: enough passages to fill the budget several times over."""
    return max(100, min(1000, max_tokens // 40))


async def _require_in_workspace(s, model, ids: list[str], workspace_id: str, field: str, noun: str) -> None:
    """Raise NotFound naming ``field`` unless every id is a ``model`` row of the workspace."""
    found = set(
        (await s.execute(select(model.id).where(model.id.in_(ids), model.workspace_id == workspace_id))).scalars()
    )
    missing = [i for i in ids if i not in found]
    if missing:
        raise NotFound(f"{field}: no {noun} {missing} in this workspace", field=field)


async def _scope(services, principal: Principal, req: PackRequest) -> tuple[list[str] | None, list[str] | None]:
    """Check filter ids belong to the caller's workspace; return them as lists."""
    colls = list(req.collection_ids) if req.collection_ids else None
    docs = list(req.document_ids) if req.document_ids else None
    async with services.db.session() as s:
        if colls:
            await _require_in_workspace(
                s, Collection, colls, principal.workspace_id, "input.filters.collectionIds", "collection"
            )
        if docs:
            await _require_in_workspace(
                s, Document, docs, principal.workspace_id, "input.filters.documentIds", "document"
            )
    return colls, docs


async def _legs(services, principal, req, colls, docs, deadline, timings, notes, weights, cache, cosine):
    """Run BM25 and dense legs concurrently until ``deadline`` (monotonic seconds).

    Fills ``weights["dense"]`` with the dense leg's RRF weight: the embedding model's
    vocabulary coverage of the task to the power ``DENSE_COVERAGE_POWER`` (1.0 for an
    English task; low for a Japanese task the English MiniLM mostly reads as ``[UNK]``),
    and ``cosine`` with the dense leg's scores (passage id → cosine similarity).
    """
    idx = services.indexes
    depth = retrieval_depth(req.max_tokens)
    loop_t = time.perf_counter

    def lexical() -> list[tuple[str, float]]:
        t = loop_t()
        out = idx.lexical.search(
            req.task, workspace_id=principal.workspace_id, collection_ids=colls, document_ids=docs, limit=depth
        )
        timings["lexicalMs"] = round((loop_t() - t) * 1000, 2)
        return out

    def dense() -> list[tuple[str, float]]:
        t = loop_t()
        coverage_of = getattr(idx.embedder, "vocabulary_coverage", None)
        if coverage_of is not None:
            coverage = coverage_of(req.task)
            if req.retrieval == "DENSE":
                if coverage < DENSE_MIN_COVERAGE:
                    notes.append(
                        f"the embedding model knows only {coverage:.0%} of the task's word pieces; "
                        "DENSE results may be poor (HYBRID would rely on BM25 here)"
                    )
            elif coverage < DENSE_MIN_COVERAGE:
                weights["dense"] = 0.0
                notes.append(
                    f"dense leg skipped: the embedding model knows {coverage:.0%} of the task's word "
                    f"pieces (< {DENSE_MIN_COVERAGE:.0%}); BM25 only"
                )
                return []
            weights["dense"] = round(coverage**DENSE_COVERAGE_POWER, 6)
        vec = idx.embedder.encode_query(req.task)
        t2 = loop_t()
        timings["embedMs"] = round((t2 - t) * 1000, 2)
        out = idx.vectors.search(
            vec, workspace_id=principal.workspace_id, collection_ids=colls, document_ids=docs, limit=depth
        )
        timings["vectorMs"] = round((loop_t() - t2) * 1000, 2)
        return out

    tasks = {}
    if req.retrieval in ("HYBRID", "LEXICAL"):
        tasks["lexical"] = asyncio.ensure_future(asyncio.to_thread(lexical))
    if req.retrieval in ("HYBRID", "DENSE"):
        if idx.embedder is None or idx.vectors is None:
            if req.retrieval == "DENSE":
                raise BadInput(
                    "input.retrieval DENSE needs an embedding model; this server runs without one "
                    "(CAIRN_EMBEDDER=none): use HYBRID or LEXICAL",
                    field="input.retrieval",
                )
            notes.append("dense leg unavailable (no embedding model configured): LEXICAL only")
        else:
            tasks["dense"] = asyncio.ensure_future(asyncio.to_thread(dense))
    warming = None
    if "lexical" in tasks and "dense" in tasks:
        # Pipelining: if BM25 returns first (the usual case: it takes ~8 ms, the query
        # embedding ~15–20 ms), read its top candidates' rows and shingles while the dense
        # leg is still encoding; the as-of resolution then finds most rows already there.
        first, _ = await asyncio.wait(
            tasks.values(), timeout=max(0.0, deadline - time.monotonic()), return_when=asyncio.FIRST_COMPLETED
        )
        if tasks["lexical"] in first and tasks["dense"] not in first and not tasks["lexical"].exception():
            ids = [pid for pid, _ in tasks["lexical"].result()[: first_window(req.max_tokens)]]
            warming = asyncio.ensure_future(prefetch(services, principal, ids, cache))
    timeout = max(0.0, deadline - time.monotonic())
    done, _pending = await asyncio.wait(tasks.values(), timeout=timeout)
    if warming is not None:
        await warming
    results: dict[str, list[str]] = {}
    late: list[str] = []
    for name, task in tasks.items():
        if task in done:
            results[name] = [pid for pid, _ in task.result()]
            if name == "dense":
                cosine.update(task.result())
        else:
            task.cancel()
            late.append(name)
    return results, late


async def _readable_now(services, principal: Principal, doc_ids: set[str]) -> set[str]:
    """Documents the principal may read at this instant (not deleted, collection live)."""
    if not doc_ids:
        return set()
    if "document:read" not in principal.permissions:
        return set()
    async with services.db.session() as s:
        rows = await s.execute(
            select(Document.id)
            .join(Collection, Collection.id == Document.collection_id)
            .where(
                Document.id.in_(sorted(doc_ids)),
                Document.workspace_id == principal.workspace_id,
                Document.deleted_at.is_(None),
                Collection.deleted_at.is_(None),
            )
        )
        return set(rows.scalars())


def _citation(c) -> Citation:
    return Citation(c.doc, c.version, c.id, c.start, c.end, c.sha)


async def _whole_documents(services, chosen_docs: list, limit_tokens: int) -> list[dict]:
    """Whole-document items for the best-ranked documents (``sources: DOCUMENTS``)."""
    if not chosen_docs:
        return []
    async with services.db.session() as s:
        rows = await s.execute(
            select(DocumentVersion.id, DocumentVersion.text, DocumentVersion.content_sha256).where(
                DocumentVersion.id.in_([c.version for c in chosen_docs])
            )
        )
        texts = {r[0]: (r[1], r[2]) for r in rows.all()}
    out = []
    for c in chosen_docs:
        text, sha = texts[c.version]
        out.append({"cand": c, "text": text, "sha": sha, "tokens": count_tokens(text)})
    return out


async def stream_pack(
    services, principal: Principal, req: PackRequest, *, trace_id: str = ""
) -> AsyncIterator[PackEvent]:
    """Build a pack as a stream of events (see module doc).

    Raises:
        BadInput: a limit of SPEC §3 (before any event is emitted).
        NotFound: a filter id outside the caller's workspace.
        Forbidden: ``DOCUMENTS`` source without ``queries:run`` (agents).
        PackIncomplete: ``REQUIRE_COMPLETE`` and the pack is incomplete (before any item).
    """
    validate_pack_request(req)
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
    colls, docs = await _scope(services, principal, req)
    # >>> context-set hook (issue 13) — set-first packing lives in app/contextsets/packing.py;
    # re-apply after the typed-pipeline refactor: plan before retrieval, retrieval limited to
    # the set's scope, set items emitted first (BEST_EFFORT: before the legs run), evidence
    # gets the budget left, REQUIRE_COMPLETE fails on missing required evidence.
    plan = await plan_set(
        services,
        principal,
        task=req.task,
        context_set_id=req.context_set_id,
        collection_ids=colls,
        document_ids=docs,
        max_tokens=req.max_tokens,
        valid_time=valid_time,
        system_time=system_time,
    )
    set_items: list[PackItem] = []
    if plan is not None:
        colls, docs = plan.collection_ids, plan.document_ids
        set_items = [_set_item(rank, i) for rank, i in enumerate(plan.items, start=1)]
        if plan.missing_required and req.coverage == "REQUIRE_COMPLETE":
            raise PackIncomplete(
                "coverage REQUIRE_COMPLETE could not be met (REQUIRED_EVIDENCE): "
                + "; ".join(plan.missing_required)
                + ". Raise input.budget.maxTokens, or use BEST_EFFORT",
                reasons=["REQUIRED_EVIDENCE"],
                field="input.budget.maxTokens",
            )
    # <<< context-set hook
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
    timings: dict[str, float] = {}
    notes: list[str] = []
    incomplete: list[str] = []
    if req.coverage == "BEST_EFFORT":
        yield header
        for item in set_items:  # context-set hook: approved items before retrieval runs
            timings.setdefault("firstSetItemMs", round((time.perf_counter() - perf0) * 1000, 2))
            yield item
    if plan is not None:
        notes.extend(plan.notes)
        if plan.missing_required:
            incomplete.append("REQUIRED_EVIDENCE")
    weights: dict[str, float] = {"lexical": 1.0, "dense": 1.0}
    t = time.perf_counter()
    cache: dict[str, list[tuple]] = {}
    cosine: dict[str, float] = {}
    if colls == [] or docs == []:  # context-set hook: the set's scope leaves nothing to search
        results, late = {}, []
    else:
        results, late = await _legs(
            services, principal, req, colls, docs, deadline, timings, notes, weights, cache, cosine
        )
    timings["legsMs"] = round((time.perf_counter() - t) * 1000, 2)
    if late:
        incomplete.append("LATENCY")
        notes.append(f"maxLatencyMs reached before the {', '.join(late)} leg finished; used the rest")
    if "GRAPH" in req.sources:
        notes.append("GRAPH: no entity graph has been built for this workspace; 0 graph items")
    t = time.perf_counter()
    fused = rrf(results, k=RRF_K, weights=weights) if results else []
    embedder, ran = services.indexes.embedder, {k: v for k, v in results.items() if weights.get(k, 1.0) > 0}
    if "dense" in ran:
        fused = apply_floor(fused, cosine, similarity_floor(embedder))
    notes.extend(
        evidence_notes(
            req.retrieval,
            ran,
            cosine,
            similarity_floor(embedder),
            sum(1 for f in fused if "lexical" not in f.ranks),
            getattr(embedder, "name", "none"),
        )
    )
    if 0.0 < weights.get("dense", 1.0) < 1.0 and "dense" in results:
        notes.append(
            f"dense leg weighted {weights['dense']:.2f} (the embedding model reads part of the task as unknown words)"
        )
    timings["fusionMs"] = round((time.perf_counter() - t) * 1000, 2)
    cands, groups, unresolved = await resolve_windows(
        services, principal, fused, req, valid_time, system_time, timings, cache
    )
    t = time.perf_counter()
    merged = sum(len(g.duplicates) for g in groups)
    entries: list[dict] = []
    if plan is not None:  # context-set hook: evidence the required items already quote is dropped
        groups = [
            g for g in groups if g.kept.id not in plan.required_passages and g.kept.doc not in plan.required_documents
        ]
    if "PASSAGES" in req.sources:
        entries.extend({"kind": "EVIDENCE", "group": g, "tokens": g.kept.tokens} for g in groups)
    if "DOCUMENTS" in req.sources:
        seen, best_docs = set(), []
        for g in groups:
            if g.kept.doc not in seen:
                seen.add(g.kept.doc)
                best_docs.append(g.kept)
        for w in await _whole_documents(services, best_docs[:20], req.max_tokens):
            entries.append({"kind": "WHOLE_DOCUMENT", "whole": w, "tokens": w["tokens"]})
    set_tokens = plan.tokens if plan is not None else 0  # context-set hook: set items come first
    packed = pack_greedy(entries, tokens=lambda e: e["tokens"], max_tokens=req.max_tokens - set_tokens)
    timings["dedupPackMs"] = round(timings.pop("dedupMs") + (time.perf_counter() - t) * 1000, 2)
    if entries and packed.included[:1] != entries[:1]:
        incomplete.append("TOP_ITEM_OVER_BUDGET")
    if req.coverage == "REQUIRE_COMPLETE" and incomplete:
        raise PackIncomplete(
            f"coverage REQUIRE_COMPLETE could not be met ({', '.join(incomplete)}); raise "
            "input.budget.maxTokens / maxLatencyMs or use BEST_EFFORT",
            reasons=incomplete,
        )
    cited: set[str] = set()
    for e in packed.included:
        if e["kind"] == "EVIDENCE":
            cited.add(e["group"].kept.doc)
            cited.update(d.doc for d in e["group"].duplicates)
        else:
            cited.add(e["whole"]["cand"].doc)
    t = time.perf_counter()
    readable = await _readable_now(services, principal, cited)
    timings["recheckMs"] = round((time.perf_counter() - t) * 1000, 2)
    if req.coverage == "REQUIRE_COMPLETE":
        yield header
        for item in set_items:  # context-set hook
            timings.setdefault("firstSetItemMs", round((time.perf_counter() - perf0) * 1000, 2))
            yield item
    kept = [
        e
        for e in packed.included
        if (e["group"].kept.doc if e["kind"] == "EVIDENCE" else e["whole"]["cand"].doc) in readable
    ]
    t = time.perf_counter()
    flags = find_contradictions([(e["group"].kept.id, e["group"].kept.text) for e in kept if e["kind"] == "EVIDENCE"])
    timings["contradictionMs"] = round((time.perf_counter() - t) * 1000, 2)
    items: list[PackItem] = []
    for rank, e in enumerate(kept, start=len(set_items) + 1):
        if e["kind"] == "EVIDENCE":
            c = e["group"].kept
            alts = tuple(_citation(d) for d in e["group"].duplicates if d.doc in readable)
            cit, text, score = _citation(c), c.text, c.score
        else:
            c = e["whole"]["cand"]
            text = e["whole"]["text"]
            cit = Citation(c.doc, c.version, None, 0, len(text), e["whole"]["sha"])
            alts, score = (), c.score
        others = tuple(sorted(flags.get(c.id, ()))) if e["kind"] == "EVIDENCE" else ()
        item = PackItem(
            rank,
            e["kind"],
            text,
            e["tokens"],
            "UNTRUSTED",
            round(score, 8),
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
        )
        items.append(item)
    # The replay record is written while the items stream out; the footer waits for it, so
    # a client that has the footer can replay.
    replay = asyncio.ensure_future(_record_replay(services, principal, header, req, set_items + items, timings))
    try:
        for item in items:
            timings.setdefault("firstEvidenceItemMs", round((time.perf_counter() - perf0) * 1000, 2))
            yield item
    finally:
        if not replay.done():
            await asyncio.shield(replay)
    replay.result()
    tokens_used = sum(i.tokens for i in items) + sum(i.tokens for i in set_items)
    yield PackFooter(
        tokens_used=tokens_used,
        item_count=len(items) + len(set_items),
        truncated=bool(packed.skipped) or unresolved > 0 or bool(plan and plan.skipped),
        complete=not incomplete,
        incomplete_reasons=tuple(incomplete),
        latency_ms=round((time.perf_counter() - perf0) * 1000, 2),
        timings=timings,
        candidates=len(cands),
        duplicates_merged=merged,
        notes=tuple(notes),
    )


def _set_item(rank: int, i: SetItem) -> PackItem:
    """Context-set hook: a :class:`~app.contextsets.SetItem` as a pack item at ``rank``."""
    cit = None
    if i.version_id is not None and i.document_id is not None and i.sha256 is not None:
        cit = Citation(i.document_id, i.version_id, i.passage_id, i.start, i.end, i.sha256)
    ref = ContextSetEntryRef(
        i.context_set_id,
        i.entry_id,
        i.set_version,
        i.document_id if cit is None else None,
        i.passage_id if cit is None else None,
    )
    return PackItem(
        rank,
        i.kind,
        i.text,
        i.tokens,
        i.trust,
        round(i.score, 8),
        None,
        None,
        cit,
        (),
        i.title,
        i.collection_id,
        i.valid_from,
        i.valid_to,
        i.superseded,
        False,
        (),
        ref,
    )


async def _record_replay(
    services, principal, header: PackHeader, req: PackRequest, items, timings: dict[str, float] | None = None
) -> None:
    """Store the pack's ids and hashes (never text) for replay, expiring after 30 days."""
    t = time.perf_counter()
    now = utcnow()
    record = ReplayRecord(
        id=header.replay_id,
        pack_id=header.pack_id,
        workspace_id=principal.workspace_id,
        principal_id=principal.id,
        task_sha256=sha256_text(req.task),
        conditions={
            "validTime": header.valid_time.isoformat(),
            "systemTime": header.system_time.isoformat(),
            "maxTokens": req.max_tokens,
            "maxLatencyMs": req.max_latency_ms,
            "coverage": req.coverage,
            "retrieval": req.retrieval,
            "collectionIds": list(req.collection_ids or []),
            "documentIds": list(req.document_ids or []),
            "sources": list(req.sources),
            "contextSetId": next((i.context_set_entry.context_set_id for i in items if i.context_set_entry), None),
        },
        items=[
            {
                "rank": i.rank,
                "kind": i.kind,
                "documentId": i.citation.document_id,
                "versionId": i.citation.version_id,
                "passageId": i.citation.passage_id,
                "start": i.citation.start,
                "end": i.citation.end,
                "sha256": i.citation.sha256,
            }
            if i.citation is not None
            else {  # context-set hook: an approved entry, recorded by id and set version
                "rank": i.rank,
                "kind": i.kind,
                "contextSetId": i.context_set_entry.context_set_id if i.context_set_entry else None,
                "entryId": i.context_set_entry.entry_id if i.context_set_entry else None,
                "setVersion": i.context_set_entry.set_version if i.context_set_entry else None,
                "sha256": sha256_text(i.text),
            }
            for i in items
        ],
        created_at=now,
        expires_at=now + REPLAY_TTL,
    )
    async with services.db.session() as s:
        s.add(record)
    if timings is not None:
        timings["replayMs"] = round((time.perf_counter() - t) * 1000, 2)


async def build_pack(services, principal: Principal, req: PackRequest, *, trace_id: str = "") -> Pack:
    """Collect :func:`stream_pack` into a :class:`Pack` (identical items by construction)."""
    header = footer = None
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
