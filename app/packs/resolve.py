"""Candidate resolution for packs: as-of rows, rank windows, prefetch, dedup.

Split from :mod:`app.packs.service` (the pipeline). Given fused passage ids in rank order,
:func:`resolve_windows` reads each candidate's text and the versions of its document in one
SQL round trip per window (:func:`fetch_rows`), applies the as-of rule
(:func:`app.corpus.as_of.choose_versions`), and collapses duplicates
(:func:`retrieval.dedup.dedup`), window after window (``first_window(maxTokens)``, then
doubling) until the budget is nearly full. :func:`prefetch` fills the same row cache while
the dense leg is still embedding the query.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import and_, select
from sqlmodel import col

from cairn.app.core.ids import as_utc
from cairn.app.core.models import Collection, Document, DocumentVersion, Passage, VersionPassage
from cairn.app.corpus import VersionMeta, VersionView, choose_versions, deleted_by
from cairn.app.governance import Principal
from cairn.app.packs.pipeline_types import Candidate, LegSearch, PackRun, PackServices, PassageRow, RowCache
from cairn.retrieval.dedup import DedupGroup, dedup
from cairn.retrieval.dedup import prepare as prepare_dedup
from cairn.retrieval.fusion import Fused
from cairn.retrieval.packing import pack_greedy
from cairn.retrieval.pipeline import Ranked

FILL_SLACK_TOKENS = 64
"""Candidate resolution stops once less than this much of the budget is left unfilled."""


async def fetch_rows(services: PackServices, principal: Principal, ids: list[str]) -> RowCache:
    """Passage rows joined with every version of their document and their span in it.

    One SQL round trip per 500 ids. Returns ``passage_id -> rows`` (one :class:`PassageRow`
    per version of the passage's document; span null where the version lacks the passage).
    """
    out: RowCache = {pid: [] for pid in ids}
    if not ids:
        return out
    texts: dict[str, str] = {}
    async with services.db.session() as s:
        for i in range(0, len(ids), 500):
            q = (
                select(  # column order = PassageRow's field order
                    col(Passage.id),
                    col(Passage.document_id),
                    col(Passage.text),
                    col(Passage.sha256),
                    col(Passage.token_count),
                    col(Passage.collection_id),
                    col(Document.title),
                    col(Document.external_id),
                    col(Collection.name),
                    col(DocumentVersion.id),
                    col(DocumentVersion.number),
                    col(DocumentVersion.valid_from),
                    col(DocumentVersion.valid_to),
                    col(DocumentVersion.recorded_at),
                    col(Document.deleted_at),
                    col(Collection.deleted_at),
                    col(VersionPassage.start),
                    col(VersionPassage.end),
                )
                .join(Document, col(Document.id) == col(Passage.document_id))
                .join(Collection, col(Collection.id) == col(Document.collection_id))
                .join(DocumentVersion, col(DocumentVersion.document_id) == col(Passage.document_id))
                .outerjoin(
                    VersionPassage,
                    and_(
                        col(VersionPassage.version_id) == col(DocumentVersion.id),
                        col(VersionPassage.passage_id) == col(Passage.id),
                    ),
                )
                .where(col(Passage.id).in_(ids[i : i + 500]), col(Passage.workspace_id) == principal.workspace_id)
            )
            for r in (await s.execute(q)).all():
                t = tuple(r)
                text = texts.setdefault(t[0], t[2])  # one text object per passage, not per version
                row = PassageRow(t[0], t[1], text, *t[3:])
                out[row.passage_id].append(row)
    return out


async def prefetch(
    services: PackServices,
    principal: Principal,
    ids: list[str],
    cache: RowCache,
    *,
    until: Callable[[], bool] | None = None,
) -> None:
    """Read rows for ``ids`` into ``cache``, then prepare their texts for dedup
    (:func:`retrieval.dedup.prepare`) in rank order until ``until()`` is true (the dense leg
    finished: the pack needs the event loop again). See :func:`app.packs.legs.search_legs`."""
    cache.update(await fetch_rows(services, principal, [i for i in ids if i not in cache]))
    for pid in ids:
        if until is not None and until():
            break
        rows = cache.get(pid)
        if rows:
            prepare_dedup(rows[0].text)
            time.sleep(0)  # let the dense leg's thread take the GIL now, not after the switch interval (5 ms)


async def mend_torn_documents(
    services: PackServices, principal: Principal, cache: RowCache, ids: Sequence[str]
) -> None:
    """Read again the rows of ``ids`` whose document the cache knows in two states.

    Every row of a passage lists one version of its document, so rows of one document read
    at one moment agree on its versions and deletion times. Rows kept from earlier packs
    (:mod:`app.packs.row_cache`) and rows read after a write that committed while this pack
    ran can disagree: the as-of rule would then pick the new version from one passage's rows
    and drop a passage whose older rows lack a span in it. Such documents' passages among
    ``ids`` are read again in one round trip (their rows replace the cached ones).
    """
    state: dict[str, tuple] = {}
    torn: set[str] = set()
    for pid in ids:
        rows = cache.get(pid)
        if not rows:
            continue
        first = rows[0]
        seen = (frozenset(r.version_id for r in rows), first.doc_deleted_at, first.coll_deleted_at)
        if state.setdefault(first.document_id, seen) != seen:
            torn.add(first.document_id)
    if torn:
        again = [pid for pid in ids if cache.get(pid) and cache[pid][0].document_id in torn]
        cache.update(await fetch_rows(services, principal, again))


def _deleted_by(row: PassageRow, system_time: datetime) -> bool:
    """The row's document or collection was deleted at or before ``system_time``."""
    return deleted_by(row.doc_deleted_at, system_time) or deleted_by(row.coll_deleted_at, system_time)


@dataclass(frozen=True, slots=True)
class PassageView:
    """One passage as of a read point: a row of it (text, document, collection), the version
    of its document chosen by the as-of rule, and the passage's span in that version."""

    row: PassageRow
    version: VersionView
    span: tuple[int, int]


def _passage_as_of(rows: Sequence[PassageRow], valid_time: datetime, system_time: datetime) -> PassageView | None:
    """The as-of rule (:func:`app.corpus.as_of.choose_versions`) over one passage's rows (one
    per version of its document): None when the document or collection was deleted by
    ``system_time``, no version is visible, or the visible version lacks the passage."""
    live = [r for r in rows if not _deleted_by(r, system_time)]
    if not live:
        return None
    first = live[0]
    metas = [
        VersionMeta(r.version_id, r.document_id, r.version_number, r.valid_from, r.valid_to, r.recorded_at)
        for r in live
    ]
    view = choose_versions(metas, valid_time=valid_time, system_time=system_time).get(first.document_id)
    if view is None:
        return None
    for r in live:
        if r.version_id == view.id:
            return PassageView(first, view, (r.start, r.end)) if r.start is not None and r.end is not None else None
    return None


def settled_at(rows: Sequence[PassageRow]) -> datetime:
    """The latest time point of a passage's rows (valid from/to, recorded, deleted; UTC).

    From a read point whose valid time and system time are both at or after it, every
    comparison of the as-of rule over these rows has the same outcome (each bound is passed),
    so the passage's reading is the same for all such read points — a pack "as of now" reads
    every settled passage that way, and :func:`passage_views` reuses the reading."""
    points = [
        as_utc(t)
        for r in rows
        for t in (r.valid_from, r.valid_to, r.recorded_at, r.doc_deleted_at, r.coll_deleted_at)
        if t is not None
    ]
    return max(points)


def passage_views(
    cache: RowCache, ids: Sequence[str], valid_time: datetime, system_time: datetime
) -> dict[str, PassageView]:
    """Those of ``ids`` visible at ``(valid_time, system_time)`` (rows from ``cache``; ids
    without rows are left out) → their :class:`PassageView`.

    A cache that keeps readings (:class:`app.packs.row_cache.CountedRows` ``as_of``: passage →
    ``(settled_at, reading)``) answers a passage read at or after its :func:`settled_at` from
    the reading of an earlier pack, and records new readings made there; readings as of
    earlier points are computed each time. Same result either way (tests/unit/packs/test_as_of_views.py).
    """
    memo: dict[str, tuple[datetime, PassageView | None]] | None = getattr(cache, "as_of", None)
    out: dict[str, PassageView] = {}
    for pid in ids:
        if pid in out:
            continue
        hit = memo.get(pid) if memo is not None else None
        if hit is not None and valid_time >= hit[0] and system_time >= hit[0]:
            view = hit[1]
        else:
            rows = cache.get(pid)
            if not rows:
                continue
            view = _passage_as_of(rows, valid_time, system_time)
            if memo is not None:
                settled = settled_at(rows)
                if valid_time >= settled and system_time >= settled:
                    memo[pid] = (settled, view)
        if view is not None:
            out[pid] = view
    return out


MAX_OVERFETCH = 16
"""A leg whose visible passages fall short of its depth is searched again at 2x, 4x, … up to
this many times its depth (:func:`visible_legs`)."""


@dataclass(frozen=True, slots=True)
class Visible:
    """Legs kept to the passages visible at a read point (:func:`visible_legs`).

    Attributes:
        ranked: Leg name → its visible results, best first, at most ``depth``; legs in input order.
        notes: A note per leg left empty or short by hidden passages, in leg order.
    """

    ranked: dict[str, Ranked]
    notes: tuple[str, ...] = ()


async def visible_legs(
    services: PackServices,
    principal: Principal,
    ranked: Mapping[str, Ranked],
    valid_time: datetime,
    system_time: datetime,
    cache: RowCache,
    *,
    depth: int,
    deeper: Mapping[str, LegSearch] | None = None,
) -> Visible:
    """Keep in each leg's list only passages visible at ``(valid_time, system_time)`` — before
    fusion (by rank, RRF, for such a pack), so the ranks fused are ranks among visible passages and a pack as of a past time is
    a function of what was visible then: a later version, a later document, or a version
    valid at another time never takes a rank (issue 14).

    Rows are read into ``cache`` (:func:`fetch_rows`; the resolution that follows reuses
    them). A leg that returned ``depth`` results but keeps fewer visible ones is searched
    again through ``deeper[name].search(limit)`` (a blocking search, run in a thread) at twice
    the limit, and so on up to :data:`MAX_OVERFETCH` x ``depth``, so its visible list is the top
    ``depth`` of all visible passages; a leg still short then gets a note. Lists are cut to
    ``depth``.
    """
    deeper = deeper or {}
    every = list(dict.fromkeys(pid for out in ranked.values() for pid, _ in out))
    missing = [pid for pid in every if pid not in cache]
    if missing:  # every leg's rows in one round trip, then one view of each document across legs
        cache.update(await fetch_rows(services, principal, missing))
    await mend_torn_documents(services, principal, cache, every)
    kept_of: dict[str, Ranked] = {}
    notes: list[str] = []
    for name, out in ranked.items():
        limit = depth
        while True:
            missing = [pid for pid, _ in out if pid not in cache]
            if missing:  # an over-fetch's deeper list
                cache.update(await fetch_rows(services, principal, missing))
                await mend_torn_documents(services, principal, cache, [pid for pid, _ in out])
            seen = passage_views(cache, [pid for pid, _ in out], valid_time, system_time)
            kept = [(pid, score) for pid, score in out if pid in seen]
            if len(kept) >= depth or len(out) < limit or name not in deeper:
                if out and not kept:
                    notes.append(
                        f"{name} leg: {len(out)} passage{'s' if len(out) != 1 else ''} matched, but no version of "
                        "their documents is visible at this asOf (validTime and systemTime)"
                    )
                break
            if limit >= depth * MAX_OVERFETCH:
                notes.append(
                    f"{name} leg: {len(out) - len(kept)} of its first {len(out)} passages are not visible "
                    f"at this asOf; it lists the {len(kept)} visible ones (fewer than its depth {depth})"
                )
                break
            limit *= 2
            out = await asyncio.to_thread(deeper[name].search, limit)
        kept_of[name] = kept[:depth]
    return Visible(kept_of, tuple(notes))


async def resolve(
    services: PackServices,
    principal: Principal,
    fused: Sequence[Fused],
    valid_time: datetime,
    system_time: datetime,
    cache: RowCache | None = None,
) -> list[Candidate]:
    """Attach text and as-of metadata to fused ids; drop passages not visible then.

    Rows come from ``cache`` (filled by a prefetch while the dense leg ran) or one SQL round
    trip (:func:`fetch_rows`); the as-of rule (:func:`app.corpus.as_of.choose_versions`)
    picks each document's version, and a passage survives only if that version contains it.
    """
    if not fused:
        return []
    cache = {} if cache is None else cache
    missing = [f.id for f in fused if f.id not in cache]
    if missing:
        cache.update(await fetch_rows(services, principal, missing))
        await mend_torn_documents(services, principal, cache, [f.id for f in fused])
    views = passage_views(cache, [f.id for f in fused], valid_time, system_time)
    out: list[Candidate] = []
    for f in fused:
        pv = views.get(f.id)
        if pv is None:
            continue
        row, view = pv.row, pv.version
        start, end = pv.span
        out.append(
            Candidate(
                id=f.id,
                score=f.score,
                ranks=f.ranks,
                doc=row.document_id,
                text=row.text,
                sha=row.sha256,
                tokens=row.tokens,
                collection=row.collection_id,
                version=view.id,
                start=start,
                end=end,
                title=row.title or "",
                valid_from=view.valid_from,
                valid_to=view.valid_to,
                superseded=view.superseded,
                external_id=row.external_id,
                collection_name=row.collection_name,
            )
        )
    return out


def dedup_candidates(cands: list[Candidate]) -> list[DedupGroup[Candidate]]:
    """Exact and near duplicates grouped under their best-ranked candidate (:func:`retrieval.dedup.dedup`)."""
    return dedup(cands, key=lambda c: c.id, text=lambda c: c.text, sha256=lambda c: c.sha)


@dataclass(frozen=True, slots=True)
class Resolved:
    """The fused candidates resolved and deduplicated in rank windows (:func:`resolve_windows`).

    Attributes:
        candidates: The resolved candidates (visible at the read point), in fused rank order.
        groups: Their dedup groups (:func:`dedup_candidates`), in rank order.
        unresolved: Fused candidates below the last window (never resolved).
        resolve_ms, dedup_ms: Time spent resolving and deduplicating (ms, unrounded).
        full_by_count: Resolution stopped because ``maxItems`` items fit (not the token
            budget): the unresolved candidates are left out for ``maxItems``.
    """

    candidates: list[Candidate]
    groups: list[DedupGroup[Candidate]]
    unresolved: int
    resolve_ms: float
    dedup_ms: float
    full_by_count: bool = False


async def resolve_windows(run: PackRun, fused: Sequence[Fused]) -> Resolved:
    """Resolve and dedup fused candidates in rank windows until the budget is (nearly) full.

    Windows of ``FIRST_WINDOW(maxTokens)``, then doubling, in fused rank order; stops when
    ``maxItems`` groups fit, when the evidence packed so far leaves fewer than
    ``FILL_SLACK_TOKENS`` of the budget, or when every candidate is resolved. At the default budget this reads ~80 of up to 200
    candidates: the as-of SQL reads and the near-duplicate pass shrink accordingly, and a
    duplicate ranked below the last window is not listed among alternate citations.
    Rows come from (and go to) ``run.cache``.
    """
    req = run.req
    window = first_window(req.max_tokens)
    cands: list[Candidate] = []
    groups: list[DedupGroup[Candidate]] = []
    start = 0
    resolve_ms = dedup_ms = 0.0
    while start < len(fused):
        t = time.perf_counter()
        cands.extend(
            await resolve(run.services, run.principal, fused[start:window], run.valid_time, run.system_time, run.cache)
        )
        t2 = time.perf_counter()
        groups = dedup_candidates(cands)
        dedup_ms += (time.perf_counter() - t2) * 1000
        resolve_ms += (t2 - t) * 1000
        start = window
        window *= 2
        if "PASSAGES" in req.sources:
            fit = pack_greedy(
                [g.kept.tokens for g in groups], tokens=int, max_tokens=req.max_tokens, max_items=req.max_items
            )
            if req.max_items is not None and len(fit.included) == req.max_items:
                return Resolved(cands, groups, len(fused) - min(start, len(fused)), resolve_ms, dedup_ms, True)
            if req.max_tokens - fit.tokens_used < FILL_SLACK_TOKENS:
                break
    return Resolved(cands, groups, len(fused) - min(start, len(fused)), resolve_ms, dedup_ms)


def first_window(max_tokens: int) -> int:
    """Candidates resolved first: about twice what fills ``max_tokens`` with 100-token passages."""
    return max(40, max_tokens // 50)
