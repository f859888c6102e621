"""Recall candidates on SQLite and PostgreSQL: an old memory matching the query is still
recalled behind 300+ newer ones (by word and by meaning); term rows follow forget and purge."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import func, insert, select

from cairn.app.core.ids import new_id, utcnow
from cairn.app.core.models import AgentMemory, MemoryTerm
from cairn.app.memory import service as mem
from cairn.app.memory.candidates import memory_terms
from cairn.app.memory.rank import pack_vector
from tests.db.test_memory import _setup

FILLER = "Alice bought oat milk and bread for the weekly grocery list"


async def _fill(db, ws_id: str, member_id: str, n: int, *, after, vector: bytes | None = None, model=None) -> None:
    """``n`` memories newer than ``after``, stored as the service stores them (row + term rows)."""
    rows, terms = [], []
    for i in range(n):
        mid = new_id("mem")
        rows.append(
            dict(
                id=mid,
                workspace_id=ws_id,
                owner_member_id=member_id,
                writer_id="x",
                namespace="n",
                key=None,
                collection_id=None,
                version=1,
                text=f"{FILLER} {i}",
                entities=[],
                embedding=vector,
                embedding_model=model,
                recorded_at=after + timedelta(seconds=i + 1),
            )
        )
        terms += [
            dict(memory_id=mid, term=t, workspace_id=ws_id, owner_member_id=member_id)
            for t in memory_terms(f"{FILLER} {i}")
        ]
    async with db.session() as s:
        await s.execute(insert(AgentMemory), rows)
        await s.execute(insert(MemoryTerm), terms)


async def _term_rows(db, **where) -> int:
    async with db.session() as s:
        q = select(func.count()).select_from(MemoryTerm)
        for name, value in where.items():
            q = q.where(getattr(MemoryTerm, name) == value)
        return (await s.execute(q)).scalar_one()


async def test_old_word_match_is_recalled_behind_newer_memories_and_terms_follow_forget(db):
    ws_id, p = await _setup(db)
    t0 = utcnow() - timedelta(hours=3)
    async with db.session() as s:
        old = await mem.remember(
            s, principal=p["alice"], namespace="n", now=t0, text="Alice's passport renewals are booked at the embassy"
        )
        await mem.remember(s, principal=p["bob"], namespace="n", now=t0, text="Bob's passport renewal is in May")
    old_id = old.memory.row.id
    # stored analysed terms: distinct Porter2 stems, stop words out ("renewals" -> "renew")
    async with db.session() as s:
        stored = set((await s.execute(select(MemoryTerm.term).where(MemoryTerm.memory_id == old_id))).scalars())
    assert stored == {"alic", "s", "passport", "renew", "book", "embassi"}
    # 320 newer memories of Alice, all sharing "Alice" with the query but nothing else
    await _fill(db, ws_id, p["alice"].member_id, 320, after=t0)
    async with db.session() as s:
        out = await mem.recall(s, principal=p["alice"], query="When is Alice renewing her passport?")
    # the rarest query terms (renew, passport: 1 memory) fill the window; "alic" (321) would overflow it
    assert [v.row.id for v, _, _ in out.items] == [old_id]
    assert out.candidates == 1 and out.items[0][2] == {"bm25": 1}
    async with db.session() as s:
        rare = await mem.recall(s, principal=p["alice"], query="weekly grocery list 7", limit=3)
        common = await mem.recall(s, principal=p["alice"], query="weekly grocery list", limit=3)
    assert rare.candidates == 1 and rare.items[0][0].row.text == f"{FILLER} 7"
    # only over-common terms: the rarest is taken alone and its newest 300 memories are ranked
    assert common.candidates == 300 and [v.row.text for v, _, _ in common.items] == [
        f"{FILLER} {i}" for i in (319, 318, 317)
    ]
    # forget removes the memory and its term rows; bob's are untouched
    async with db.session() as s:
        assert await mem.forget(s, principal=p["alice"], memory_id=old_id) == 1
    assert await _term_rows(db, memory_id=old_id) == 0
    assert await _term_rows(db, owner_member_id=p["bob"].member_id) == 4
    async with db.session() as s:
        again = await mem.recall(s, principal=p["alice"], query="When is Alice renewing her passport?")
    assert all("passport" not in v.row.text for v, _, _ in again.items)
    async with db.session() as s:  # the owner's bulk delete leaves no term row in the workspace
        assert await mem.delete_all(s, workspace_id=ws_id) == 321
    assert await _term_rows(db, workspace_id=ws_id) == 0


async def test_old_meaning_match_is_recalled_behind_300_newer_memories(db, embedder):
    ws_id, p = await _setup(db)
    t0 = utcnow() - timedelta(hours=3)
    async with db.session() as s:
        old = await mem.remember(
            s, principal=p["alice"], namespace="n", text="The cat sat on the mat", embedder=embedder, now=t0
        )
    filler_vector = pack_vector(embedder.encode_query(FILLER))
    await _fill(db, ws_id, p["alice"].member_id, 300, after=t0, vector=filler_vector, model=embedder.name)
    async with db.session() as s:
        out = await mem.recall(s, principal=p["alice"], query="a kitten resting on a rug", embedder=embedder)
    legs = {lg.name: lg for lg in out.legs}
    assert legs["vector"].status == "USED" and legs["vector"].detail == "301 memories with vectors"
    assert legs["bm25"].detail == "0 matched"
    # no shared word; the cosine top 100 (the old memory + 99 fillers) are the candidates
    assert out.candidates == mem.VECTOR_CANDIDATES
    assert out.items[0][0].row.id == old.memory.row.id and out.items[0][2] == {"vector": 1}
