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

import time

from sqlalchemy import and_, select

from app.core.ids import as_utc, utcnow
from app.core.models import Collection, Document, DocumentVersion, Passage, VersionPassage
from app.corpus import VersionMeta, choose_versions
from retrieval.dedup import dedup, shingle_keys
from retrieval.packing import pack_greedy

FILL_SLACK_TOKENS = 64
"""Candidate resolution stops once less than this much of the budget is left unfilled."""


class Candidate:
    """A fused passage with its text, chosen version, span and validity (pipeline-internal)."""

    __slots__ = (
        "collection",
        "doc",
        "end",
        "id",
        "ranks",
        "score",
        "sha",
        "start",
        "superseded",
        "text",
        "title",
        "tokens",
        "valid_from",
        "valid_to",
        "version",
    )


async def fetch_rows(services, principal, ids: list[str]) -> dict[str, list[tuple]]:
    """Passage rows joined with every version of their document and their span in it.

    One SQL round trip per 500 ids. Returns ``passage_id -> rows`` (one row per version
    of the passage's document; span columns null where the version lacks the passage).
    """
    out: dict[str, list[tuple]] = {pid: [] for pid in ids}
    if not ids:
        return out
    async with services.db.session() as s:
        for i in range(0, len(ids), 500):
            q = (
                select(
                    Passage.id,
                    Passage.document_id,
                    Passage.text,
                    Passage.sha256,
                    Passage.token_count,
                    Passage.collection_id,
                    Document.title,
                    DocumentVersion.id,
                    DocumentVersion.number,
                    DocumentVersion.valid_from,
                    DocumentVersion.valid_to,
                    DocumentVersion.recorded_at,
                    Document.deleted_at,
                    Collection.deleted_at,
                    VersionPassage.start,
                    VersionPassage.end,
                )
                .join(Document, Document.id == Passage.document_id)
                .join(Collection, Collection.id == Document.collection_id)
                .join(DocumentVersion, DocumentVersion.document_id == Passage.document_id)
                .outerjoin(
                    VersionPassage,
                    and_(VersionPassage.version_id == DocumentVersion.id, VersionPassage.passage_id == Passage.id),
                )
                .where(Passage.id.in_(ids[i : i + 500]), Passage.workspace_id == principal.workspace_id)
            )
            for r in (await s.execute(q)).all():
                out[r[0]].append(tuple(r))
    return out


async def prefetch(services, principal, ids: list[str], cache: dict[str, list[tuple]]) -> None:
    """Read rows for ``ids`` into ``cache`` and warm their shingle sets (see :func:`app.packs.service._legs`)."""
    rows = await fetch_rows(services, principal, [i for i in ids if i not in cache])
    cache.update(rows)
    for pid_rows in rows.values():
        if pid_rows:
            shingle_keys(pid_rows[0][2])


async def resolve(services, principal, fused, req, valid_time, system_time, cache: dict | None = None):
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
    prow: dict[str, tuple] = {}
    spans: dict[tuple[str, str], tuple[int, int]] = {}
    metas: dict[str, VersionMeta] = {}
    for f in fused:
        for r in cache.get(f.id, ()):
            if (r[12] is not None and as_utc(r[12]) <= system_time) or (
                r[13] is not None and as_utc(r[13]) <= system_time
            ):
                continue  # document or collection deleted by systemTime
            prow.setdefault(r[0], r[:7])
            metas.setdefault(r[7], VersionMeta(r[7], r[1], r[8], r[9], r[10], r[11]))
            if r[14] is not None:
                spans[(r[7], r[0])] = (r[14], r[15])
    versions = choose_versions(metas.values(), valid_time=valid_time, system_time=system_time, now=utcnow())
    out = []
    for f in fused:
        row = prow.get(f.id)
        if row is None:
            continue
        view = versions.get(row[1])
        if view is None or (view.id, f.id) not in spans:
            continue
        c = Candidate()
        c.id, c.score, c.ranks = f.id, f.score, f.ranks
        c.doc, c.text, c.sha, c.tokens, c.collection = row[1], row[2], row[3], row[4], row[5]
        c.version = view.id
        c.start, c.end = spans[(view.id, f.id)]
        c.title = row[6] or ""
        c.valid_from, c.valid_to, c.superseded = view.valid_from, view.valid_to, view.superseded
        out.append(c)
    return out


def dedup_candidates(cands: list) -> list:
    return dedup(cands, key=lambda c: c.id, text=lambda c: c.text, sha256=lambda c: c.sha)


async def resolve_windows(services, principal, fused, req, valid_time, system_time, timings, cache=None):
    """Resolve and dedup fused candidates in rank windows until the budget is (nearly) full.

    Windows of ``FIRST_WINDOW(maxTokens)``, then doubling, in fused rank order; stops when
    the evidence packed so far leaves fewer than ``FILL_SLACK_TOKENS`` of the budget, or
    when every candidate is resolved. At the default budget this reads ~80 of up to 200
    candidates: the as-of SQL reads and the near-duplicate pass shrink accordingly, and a
    duplicate ranked below the last window is not listed among alternate citations.

    Returns:
        ``(candidates, dedup groups, number of fused candidates never resolved)``.
    """
    window = first_window(req.max_tokens)
    cands: list = []
    groups: list = []
    start = 0
    resolve_ms = dedup_ms = 0.0
    while start < len(fused):
        t = time.perf_counter()
        cands.extend(await resolve(services, principal, fused[start:window], req, valid_time, system_time, cache))
        t2 = time.perf_counter()
        groups = dedup_candidates(cands)
        dedup_ms += (time.perf_counter() - t2) * 1000
        resolve_ms += (t2 - t) * 1000
        start = window
        window *= 2
        if "PASSAGES" in req.sources:
            used = pack_greedy([g.kept.tokens for g in groups], tokens=int, max_tokens=req.max_tokens).tokens_used
            if req.max_tokens - used < FILL_SLACK_TOKENS:
                break
    timings["resolveMs"] = round(resolve_ms, 2)
    timings["dedupMs"] = round(dedup_ms, 2)
    return cands, groups, len(fused) - min(start, len(fused))


def first_window(max_tokens: int) -> int:
    """Candidates resolved first: about twice what fills ``max_tokens`` with 100-token passages."""
    return max(40, max_tokens // 50)
