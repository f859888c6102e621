"""Governed agent memory (SPEC §7): remember, recall, list, forget, settings and purges.

Rules:
- Gate: a non-retaining workspace always refuses (``NON_RETAINING_WORKSPACE``, 403); while
  the owner's switch "let agents keep memories" is off (default), remember and recall refuse
  (``AGENT_MEMORY_DISABLED``, 403) for agents and members alike, and agents cannot list or
  forget either. A member's own list and forget (member token) keep working while the switch is off,
  so people can always see and delete what was kept for them.
- Privacy: a memory belongs to ``principal.member_id`` (the member, or the member who
  created the agent credential). Every query below filters by that owner *in SQL*; nothing
  reads another member's rows, the owner included (the owner's bulk delete never reads).
- Text is PII-masked (:mod:`app.memory.pii`) before it is stored or embedded; its
  analysed terms are stored beside it (:class:`app.core.models.MemoryTerm`) and deleted with it.
- Recall: the newest 300 memories *matching the query* (by analysed word, rarest terms
  first, or among the 100 most cosine-similar; :mod:`app.memory.candidates`) are
  ranked by RRF of BM25, cosine and cited-passage entities (:mod:`app.memory.rank`).
- Versions: same ``(namespace, key)`` → the previous version gets ``superseded_at`` and the
  result says ``superseded: 1``; ``asOf`` t returns versions with ``recorded_at ≤ t`` and
  not superseded at t. Forget deletes every version of the key (rows and citations).
- Limits: 120 remembers per credential per rolling hour (``AGENT_MEMORY_RATE_LIMITED``, 429,
  ``retryAfter`` seconds); 5,000 stored versions per member per workspace
  (``AGENT_MEMORY_FULL``, 409). Both are counted under the owner's lock
  (:func:`app.core.db.serialize`), so concurrent remembers cannot overshoot them. Retention 1–365 days (default 90): older versions are purged
  at start-up, on every remember/recall/list in the workspace, and by ``cairn memory purge``;
  memories citing a deleted document or collection are purged with it.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from sqlalchemy import Select, func, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from cairn.app.core.db import serialize
from cairn.app.core.errors import BadInput, NonRetainingWorkspace, NotFound
from cairn.app.core.ids import as_utc, new_id, utcnow
from cairn.app.core.models import AgentMemory, Collection, MemoryWrite, Workspace
from cairn.app.governance import Principal
from cairn.app.memory import rank
from cairn.app.memory.admin import (  # noqa: F401 - re-exported: the service's public surface
    MAX_RETENTION,
    MIN_RETENTION,
    _delete_memories,
    delete_all,
    purge_expired,
    purge_for_collection,
    purge_for_documents,
    set_settings,
)
from cairn.app.memory.candidates import (  # noqa: F401 - re-exported
    RECALL_CANDIDATES,
    VECTOR_BUDGET_S,
    VECTOR_CANDIDATES,
    LegReport,
    owned_conditions,
    select_candidates,
    term_rows,
)
from cairn.app.memory.errors import MemoryDisabled, MemoryEmpty, MemoryFull, MemoryRateLimited
from cairn.app.memory.fields import MAX_CITATIONS, MAX_KEY, MAX_NAMESPACE, MAX_TEXT, validate_fields  # noqa: F401
from cairn.app.memory.pii import mask_pii, only_placeholders
from cairn.app.memory.sources import HIDDEN, check_context_set, check_sources, resolve_citations
from cairn.app.memory.views import ListOutcome, MemoryView, RecallOutcome, RememberOutcome
from cairn.retrieval.embeddings import Embedder

RATE_PER_HOUR = 120
MAX_VERSIONS = 5_000
RECALL_LIMIT, MAX_RECALL_LIMIT = 10, 50
LIST_LIMIT, MAX_LIST_LIMIT = 20, 100


async def gate(s: AsyncSession, principal: Principal, *, own_admin: bool = False) -> Workspace:
    """Workspace checks shared by every memory operation (module doc).

    Args:
        own_admin: True for list/forget: a member (not an agent) passes while the switch is off.

    Raises:
        Forbidden: ``NON_RETAINING_WORKSPACE`` or ``AGENT_MEMORY_DISABLED``.
    """
    ws = await s.get(Workspace, principal.workspace_id)
    if ws is None or not ws.retaining:
        raise NonRetainingWorkspace("this workspace is non-retaining: it keeps no memories")
    if not ws.memory_enabled and not (own_admin and not principal.is_agent):
        raise MemoryDisabled(
            "agent memory is off in this workspace; the owner can turn on 'let agents keep memories' "
            "(setMemorySettings)",
        )
    return ws


async def _check_collection(s: AsyncSession, principal: Principal, collection_id: str | None) -> None:
    if collection_id is None:
        if principal.context_set_id is not None:
            check_context_set(principal, None)
        return
    check_context_set(principal, collection_id)
    c = await s.get(Collection, collection_id)
    if c is None or c.workspace_id != principal.workspace_id or c.deleted_at is not None:
        raise NotFound(f"collection {collection_id!r} not found", field="collectionId")


async def _rate_limit(s: AsyncSession, principal: Principal, now: datetime) -> None:
    window = now - timedelta(hours=1)
    q = select(func.count(), func.min(MemoryWrite.at)).where(
        col(MemoryWrite.credential_id) == principal.id, col(MemoryWrite.at) > window
    )
    count, oldest = (await s.execute(q)).one()
    if count >= RATE_PER_HOUR:
        retry = max(1, math.ceil((as_utc(oldest) + timedelta(hours=1) - now).total_seconds()))
        raise MemoryRateLimited(
            f"at most {RATE_PER_HOUR} remembers per credential per hour; retry in {retry} s",
            retryAfter=retry,
            limit=RATE_PER_HOUR,
        )


async def remember(
    s: AsyncSession,
    *,
    principal: Principal,
    namespace: str,
    text: str,
    key: str | None = None,
    collection_id: str | None = None,
    citations: Sequence[str] = (),
    embedder: Embedder | None = None,
    now: datetime | None = None,
) -> RememberOutcome:
    """Store a memory for ``principal.member_id`` (module doc for every rule).

    Args:
        embedder: An :class:`retrieval.embeddings.Embedder` for the memory's vector, or None.
        now: System time of the write (default: now; benchmarks replay history with it).

    Raises:
        BadInput (``BAD_USER_INPUT``, ``AGENT_MEMORY_PERSONAL_DATA``, ``AGENT_MEMORY_EMPTY``),
        Forbidden (gate codes, ``AGENT_CONTEXT_SET_SCOPE_REFUSED``), NotFound (collection),
        ``AGENT_MEMORY_RATE_LIMITED`` (429), Conflict ``AGENT_MEMORY_FULL`` (409).
    """
    validate_fields(namespace=namespace, key=key, text=text, citations=citations)
    now = now or utcnow()
    ws = await gate(s, principal)
    if not any(ch.isalnum() for ch in text):
        raise BadInput("text has no words or numbers; nothing to remember", field="text")
    masked = mask_pii(text)
    if only_placeholders(masked.text):
        raise MemoryEmpty(
            "text holds nothing but personal data (all of it was masked); nothing to remember",
            field="text",
        )
    await _check_collection(s, principal, collection_id)
    cites = await resolve_citations(s, principal, citations)
    # the rate and version counts, the current version of the key and the insert are one
    # critical section per owner: concurrent remembers cannot all pass a count taken before
    # any of them wrote, nor leave two current versions of one key
    await serialize(s, "memory", ws.id, principal.member_id)
    await purge_expired(s, workspace_id=ws.id, now=now)
    await _rate_limit(s, principal, now)
    stored = (
        await s.execute(
            select(func.count()).where(
                col(AgentMemory.workspace_id) == ws.id, col(AgentMemory.owner_member_id) == principal.member_id
            )
        )
    ).scalar_one()
    if stored >= MAX_VERSIONS:
        raise MemoryFull(
            f"at most {MAX_VERSIONS} memory versions per member per workspace; forget some first",
            limit=MAX_VERSIONS,
        )
    vector = model = None
    if embedder is not None:
        # one short text: the single-thread query path (all-MiniLM-L6-v2 is symmetric, so the
        # vector equals encode()'s); encode()'s 2-thread pool costs ~0.4 s per call from a worker thread
        vector = rank.pack_vector(await asyncio.to_thread(embedder.encode_query, masked.text))
        model = embedder.name
    previous = None
    if key is not None:
        previous = (
            await s.execute(
                select(AgentMemory).where(
                    col(AgentMemory.workspace_id) == ws.id,
                    col(AgentMemory.owner_member_id) == principal.member_id,
                    col(AgentMemory.namespace) == namespace,
                    col(AgentMemory.key) == key,
                    col(AgentMemory.superseded_at).is_(None),
                )
            )
        ).scalar_one_or_none()
    if previous is not None:
        previous.superseded_at = now
        s.add(previous)
    row = AgentMemory(
        id=new_id("mem"),
        workspace_id=ws.id,
        owner_member_id=principal.member_id,
        writer_id=principal.id,
        namespace=namespace,
        key=key,
        collection_id=collection_id,
        version=(previous.version + 1) if previous else 1,
        text=masked.text,
        entities=rank.extract_entities(masked.text),
        embedding=vector,
        embedding_model=model,
        recorded_at=now,
    )
    s.add(row)
    await s.flush()
    s.add_all(term_rows(row))
    for c in cites:
        c.memory_id = row.id
        s.add(c)
    s.add(MemoryWrite(credential_id=principal.id, workspace_id=ws.id, at=now))
    await s.flush()
    source = (await check_sources(s, principal, [row.id], now))[row.id]
    return RememberOutcome(MemoryView(row, source), 1 if previous else 0, masked.counts)


def _owned(
    principal: Principal,
    *,
    namespace: str | None = None,
    key: str | None = None,
    collection_id: str | None = None,
    as_of: datetime | None = None,
    all_versions: bool = False,
) -> Select[AgentMemory]:
    return select(AgentMemory).where(
        *owned_conditions(
            principal,
            namespace=namespace,
            key=key,
            collection_id=collection_id,
            as_of=as_of,
            all_versions=all_versions,
        )
    )


async def recall(
    s: AsyncSession,
    *,
    principal: Principal,
    query: str,
    namespace: str | None = None,
    collection_id: str | None = None,
    as_of: datetime | None = None,
    limit: int = RECALL_LIMIT,
    embedder: Embedder | None = None,
    now: datetime | None = None,
    candidate_limit: int = RECALL_CANDIDATES,
    vector_candidates: int = VECTOR_CANDIDATES,
    weights: dict[str, float] | None = None,
) -> RecallOutcome:
    """Rank the newest ``candidate_limit`` (SPEC: 300) memories of the caller matching ``query``.

    Candidates (:mod:`app.memory.candidates`): the caller's memories passing the
    filters that share an analysed term with the query, united with the
    ``vector_candidates`` most cosine-similar ones; the newest 300 of that union. Legs and
    fusion over them: :mod:`app.memory.rank`. Memories whose cited source is gone
    or unreadable are dropped and counted in ``hidden``. ``candidate_limit``,
    ``vector_candidates`` and ``weights`` exist for benchmarks; the resolver uses defaults.

    Raises:
        Forbidden / NotFound: gate, context set, collection.
    """
    now = now or utcnow()
    ws = await gate(s, principal)
    await _check_collection(s, principal, collection_id)
    await purge_expired(s, workspace_id=ws.id, now=now)
    conds = owned_conditions(principal, namespace=namespace, collection_id=collection_id, as_of=as_of)
    cands = await select_candidates(
        s, principal, query, conds, embedder=embedder, limit=candidate_limit, vector_candidates=vector_candidates
    )
    rows = cands.rows
    checks = await check_sources(s, principal, [r.id for r in rows], now)
    visible = [r for r in rows if checks[r.id].state != HIDDEN]
    legs: dict[str, list[str]] = {}
    reports = []
    started = time.perf_counter()
    legs["bm25"] = rank.bm25_rank(query, [(r.id, r.text) for r in visible])
    reports.append(
        LegReport("bm25", "USED", f"{len(legs['bm25'])} matched", round((time.perf_counter() - started) * 1000, 1))
    )
    reports.append(cands.vector_report)
    if cands.sims is not None:
        sims = cands.sims
        order = sorted((i for i, r in enumerate(visible) if r.id in sims), key=lambda i: (-sims[visible[i].id], i))
        legs["vector"] = [visible[i].id for i in order]
    started = time.perf_counter()
    ents = [
        (r.id, set().union(*(rank.extract_entities(t) for t in checks[r.id].passage_texts)))
        for r in visible
        if checks[r.id].passage_texts
    ]
    legs["entity"] = rank.entity_rank(query, ents)
    reports.append(
        LegReport("entity", "USED", f"{len(legs['entity'])} matched", round((time.perf_counter() - started) * 1000, 1))
    )
    by_id = {r.id: r for r in visible}
    fused = rank.fuse(legs, weights)[:limit]
    items = [(MemoryView(by_id[f.id], checks[f.id]), f.score, f.ranks) for f in fused]
    return RecallOutcome(items, len(rows) - len(visible), len(rows), reports)


def _cursor(row: AgentMemory) -> str:
    return f"{as_utc(row.recorded_at).isoformat()}|{row.id}"


async def list_memories(
    s: AsyncSession,
    *,
    principal: Principal,
    namespace: str | None = None,
    key: str | None = None,
    collection_id: str | None = None,
    as_of: datetime | None = None,
    limit: int = LIST_LIMIT,
    cursor: str | None = None,
    now: datetime | None = None,
    all_versions: bool = False,
) -> ListOutcome:
    """The caller's own memories, newest first, ``limit`` per page (keyset cursor).

    ``all_versions``: superseded versions too (a key's history, e.g. with ``namespace`` + ``key``).

    Raises:
        BadInput: malformed cursor. Forbidden / NotFound: gate, context set, collection.
    """
    now = now or utcnow()
    ws = await gate(s, principal, own_admin=True)
    await _check_collection(s, principal, collection_id)
    await purge_expired(s, workspace_id=ws.id, now=now)
    q = _owned(
        principal, namespace=namespace, key=key, collection_id=collection_id, as_of=as_of, all_versions=all_versions
    )
    if cursor:
        try:
            at_text, last_id = cursor.split("|", 1)
            at = datetime.fromisoformat(at_text)
            if at.tzinfo is None or not last_id or "\x00" in last_id:
                raise ValueError(cursor)
            at = at.astimezone(UTC)
        except (ValueError, OverflowError):
            raise BadInput("cursor is malformed; pass nextCursor from the previous page", field="cursor") from None
        q = q.where(
            (col(AgentMemory.recorded_at) < at)
            | ((col(AgentMemory.recorded_at) == at) & (col(AgentMemory.id) < last_id))
        )
    rows = (
        (await s.execute(q.order_by(col(AgentMemory.recorded_at).desc(), col(AgentMemory.id).desc()).limit(limit + 1)))
        .scalars()
        .all()
    )
    more = len(rows) > limit
    rows = rows[:limit]
    checks = await check_sources(s, principal, [r.id for r in rows], now)
    items = [MemoryView(r, checks[r.id]) for r in rows if checks[r.id].state != HIDDEN]
    return ListOutcome(items, len(rows) - len(items), _cursor(rows[-1]) if more and rows else None)


async def forget(
    s: AsyncSession,
    *,
    principal: Principal,
    memory_id: str | None = None,
    namespace: str | None = None,
    key: str | None = None,
    only_version: bool = False,
) -> int:
    """Delete a memory and every version of its key (or every version of ``namespace+key``).

    ``only_version`` (with ``memory_id``): delete that one version only. When it was the key's
    current version, the newest remaining version of the key becomes current again (an undo of
    the remember that superseded it); other versions are untouched.

    Returns:
        Number of versions deleted.

    Raises:
        NotFound: nothing of the caller's matches (other members' memories are never found).
    """
    await gate(s, principal, own_admin=True)
    mine = (col(AgentMemory.workspace_id) == principal.workspace_id) & (
        col(AgentMemory.owner_member_id) == principal.member_id
    )
    if memory_id is not None:
        row = (await s.execute(select(AgentMemory).where(mine, col(AgentMemory.id) == memory_id))).scalar_one_or_none()
        if row is None:
            raise NotFound(f"memory {memory_id!r} not found", field="memoryId")
        if row.key is None:
            return await _delete_memories(s, mine & (col(AgentMemory.id) == row.id))
        if only_version:
            # the same critical section as remember: no new version lands between the delete
            # and the re-promotion of the previous one
            await serialize(s, "memory", principal.workspace_id, principal.member_id)
            await s.refresh(row)
            was_current = row.superseded_at is None
            deleted = await _delete_memories(s, mine & (col(AgentMemory.id) == row.id))
            if was_current:
                same_key = mine & (col(AgentMemory.namespace) == row.namespace) & (col(AgentMemory.key) == row.key)
                newest = (
                    await s.execute(
                        select(AgentMemory).where(same_key).order_by(col(AgentMemory.recorded_at).desc()).limit(1)
                    )
                ).scalar_one_or_none()
                if newest is not None:
                    newest.superseded_at = None
                    s.add(newest)
                    await s.flush()
            return deleted
        namespace, key = row.namespace, row.key
    deleted = await _delete_memories(
        s, mine & (col(AgentMemory.namespace) == namespace) & (col(AgentMemory.key) == key)
    )
    if not deleted:
        raise NotFound(f"no memory with namespace {namespace!r} and key {key!r}", field="key")
    return deleted
