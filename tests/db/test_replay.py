"""Replay VERIFY / RECOMPUTE, compact records, expiry, purge and who may replay (SQLite and PostgreSQL).

Packs run LEXICAL over a small corpus (no embedding model): the replay machinery is the same
for every retrieval mode.
"""

from __future__ import annotations

import json
import secrets
from datetime import timedelta

import pytest
from sqlalchemy import select, update

from cairn.app.core.errors import BadInput, NotFound
from cairn.app.core.ids import utcnow
from cairn.app.core.models import ReplayRecord
from cairn.app.corpus import SourceDocument, delete_document, ingest_documents
from cairn.app.identity import service as identity
from cairn.app.packs import PackRequest, build_pack, decode_record, event_json, recorded_item
from cairn.app.replay import (
    ReplayExpired,
    ReplayRequest,
    purge_expired_replays,
    purge_replays,
    purge_replays_every,
    replay_pack,
)
from cairn.app.replay.operations import diff_items
from tests import factories

TOPICS = ["tidal", "solar", "wind", "hydro", "geothermal", "nuclear", "biomass", "wave", "coal", "gas"]


def _corpus() -> list[SourceDocument]:
    docs = []
    for i in range(50):
        t, u = TOPICS[i % 10], TOPICS[(i * 3 + 1) % 10]
        docs.append(
            SourceDocument(
                external_id=f"d{i}",
                title=f"Doc {i}",
                text=f"{t.title()} energy note {i}: {t} plants and {u} farms share grid capacity in region {i}.\n\n"
                f"Maintenance of {t} equipment number {i} happens every {i + 2} weeks with {u} crews.",
            )
        )
    return docs


@pytest.fixture
async def svc(db, db_url, tmp_path):
    services, indexes = await factories.workspace_services(db, db_url, tmp_path)
    await ingest_documents(
        db, indexes, workspace_id=services.ws_id, collection="c", documents=iter(_corpus()), chunk_max_tokens=40
    )
    yield services
    indexes.close()


def _who(svc, **kw):
    return factories.principal(workspace_id=svc.ws_id, role="editor", **kw)


def _req(task: str, **kw) -> PackRequest:
    return PackRequest(**{"task": task, "retrieval": "LEXICAL", "max_tokens": 400, **kw})


async def _upsert(svc, ext: str, text: str) -> None:
    await ingest_documents(
        svc.db,
        svc.indexes,
        workspace_id=svc.ws_id,
        collection="c",
        documents=iter([SourceDocument(external_id=ext, title=f"Doc {ext[1:]}", text=text)]),
        chunk_max_tokens=40,
    )


async def test_verify_flags_exactly_the_edited_and_the_deleted_item(svc):
    who = _who(svc)
    pack = await build_pack(svc, who, _req("tidal plants grid capacity"))
    assert len({i.citation.document_id for i in pack.items}) >= 3
    r = await replay_pack(svc, who, ReplayRequest(pack.header.replay_id, "VERIFY"))
    assert [c.status for c in r.checks] == ["UNCHANGED"] * len(pack.items)
    edited, deleted = (
        pack.items[0],
        next(i for i in pack.items if i.citation.document_id != pack.items[0].citation.document_id),
    )
    ext = {f"Doc {i}": f"d{i}" for i in range(50)}[edited.document_title]
    # edit the cited paragraph; the other paragraph of that document stays as it was
    async with svc.db.session() as s:
        from cairn.app.core.models import DocumentVersion

        old_text = (await s.get(DocumentVersion, edited.citation.version_id)).text
    await _upsert(svc, ext, old_text.replace(edited.text, edited.text.replace("plants", "stations")))
    async with svc.db.session() as s:
        await delete_document(s, workspace_id=svc.ws_id, document_id=deleted.citation.document_id)
    r = await replay_pack(svc, who, ReplayRequest(pack.header.replay_id, "VERIFY"))
    by_rank = {c.item.rank: c for c in r.checks}
    assert by_rank[edited.rank].status == "CHANGED"
    assert by_rank[edited.rank].current_version_id not in (None, edited.citation.version_id)
    for c in r.checks:
        if c.item.document_id == deleted.citation.document_id:
            assert c.status == "UNAVAILABLE" and c.current_version_id is None
        elif c.item.rank != edited.rank:
            assert c.status == "UNCHANGED", c
            # an item of the edited document outside the edited paragraph is still UNCHANGED


def _items_json(pack) -> str:
    return json.dumps([event_json(i) for i in pack.items], sort_keys=True)


async def test_recompute_of_a_past_as_of_pack_is_byte_identical_after_later_writes_the_task_matches(svc):
    """Later writes the task matches take no leg rank in a pack as of before them: visibility
    (system time and valid time) is applied to each leg before RRF (app/packs/resolve.py)."""
    who = _who(svc)
    task = "solar farms maintenance crews"
    t = utcnow() - timedelta(milliseconds=1)
    pack = await build_pack(svc, who, _req(task, valid_time=t, system_time=t))
    assert len(pack.items) >= 3
    cited = pack.items[1]
    ext = {f"Doc {i}": f"d{i}" for i in range(50)}[cited.document_title]
    # 1. a new version of a cited document, full of the task's words
    await _upsert(svc, ext, "Solar farms maintenance crews: solar farms need maintenance crews.\n\nMore solar farms.")
    # 2. more new documents matching the task than a leg returns (depth 100): without the
    #    per-leg filter and over-fetch, the BM25 leg would hold none of the visible passages
    await ingest_documents(
        svc.db,
        svc.indexes,
        workspace_id=svc.ws_id,
        collection="c",
        documents=iter(
            SourceDocument(external_id=f"n{i}", title=f"New {i}", text=f"Solar farms maintenance crews, round {i}.")
            for i in range(120)
        ),
        chunk_max_tokens=40,
    )
    # 3. a document recorded now but valid only from next year
    await ingest_documents(
        svc.db,
        svc.indexes,
        workspace_id=svc.ws_id,
        collection="c",
        documents=iter(
            [
                SourceDocument(
                    external_id="future",
                    title="Future",
                    text="Solar farms maintenance crews solar farms maintenance crews.",
                    valid_from=t + timedelta(days=365),
                )
            ]
        ),
        chunk_max_tokens=40,
    )
    current = await build_pack(svc, who, _req(task))
    assert current.items[0].document_title.startswith(("New", f"Doc {ext[1:]}"))  # the later writes do match
    r = await replay_pack(svc, who, ReplayRequest(pack.header.replay_id, "RECOMPUTE", task))
    assert _items_json(r.pack) == _items_json(pack)
    assert r.added == () and r.removed == () and r.moved == () and r.unchanged_ranks == len(pack.items)
    fresh = await build_pack(svc, who, _req(task, valid_time=t, system_time=t))
    assert _items_json(fresh) == _items_json(pack)
    # valid time alone: systemTime now knows every later write, but none is valid at t (each
    # is valid from its recording, or from next year): the same passages, ranks and scores;
    # only the edited document's item now reads superseded, its validTo = the new version's validFrom
    known_now = await build_pack(svc, who, _req(task, valid_time=t))

    def core(p):
        out = []
        for i in p.items:
            j = event_json(i)
            j.pop("superseded")
            j["validity"].pop("validTo")
            out.append(j)
        return out

    assert core(known_now) == core(pack)
    edited = [i for i in known_now.items if i.citation.document_id == cited.citation.document_id]
    assert edited and all(i.superseded and i.valid_to is not None and i.valid_to > t for i in edited)
    assert not any(i.superseded for i in pack.items)
    with pytest.raises(BadInput) as e:
        await replay_pack(svc, who, ReplayRequest(pack.header.replay_id, "RECOMPUTE", "another task"))
    assert e.value.extra["field"] == "task"


async def test_recompute_diff_on_50_packs(svc):
    """RECOMPUTE reads as of the recorded systemTime, so documents deleted since leave every
    recomputed pack as it was (a deletion is a system-time event, issue 32 item 11); the diff
    against a pack of today (the same task, read as of now, without them) counts exactly the
    removals and the moves they cause."""
    who = _who(svc)
    packs = []
    for i in range(50):
        task = f"{TOPICS[i % 10]} energy {TOPICS[(i + 3) % 10]} crews region {i}"
        packs.append((task, await build_pack(svc, who, _req(task))))
    # delete three documents: packs citing them lose those items, others move up or come in
    victims = sorted({p.items[0].citation.document_id for _, p in packs[:3]})
    async with svc.db.session() as s:
        for d in victims:
            await delete_document(s, workspace_id=svc.ws_id, document_id=d)
    changed = added = moved = 0
    for task, pack in packs:
        r = await replay_pack(svc, who, ReplayRequest(pack.header.replay_id, "RECOMPUTE", task))
        assert (r.added, r.removed, r.moved, r.unchanged_ranks) == ((), (), (), len(pack.items))
        assert _items_json(r.pack) == _items_json(pack)
        today = await build_pack(svc, who, _req(task))
        added_, removed, moves, same = diff_items(list(r.recorded), [recorded_item(i) for i in today.items])
        old = {(i.kind, i.citation.passage_id, i.citation.sha256): i.rank for i in pack.items}
        new = {(i.kind, i.citation.passage_id, i.citation.sha256): i.rank for i in today.items}
        assert {(i.kind, i.passage_id, i.sha256) for i in removed} == old.keys() - new.keys()
        assert {(i.kind, i.passage_id, i.sha256) for i in added_} == new.keys() - old.keys()
        assert {((m.item.kind, m.item.passage_id, m.item.sha256), m.old_rank, m.new_rank) for m in moves} == {
            (k, old[k], new[k]) for k in old.keys() & new.keys() if old[k] != new[k]
        }
        assert all(i.document_id in victims for i in removed)
        assert same == sum(1 for k in old.keys() & new.keys() if old[k] == new[k])
        changed += bool(removed)
        added += bool(added_)
        moved += bool(moves)
    assert changed >= 3 and moved >= 1


async def test_records_are_compact_and_keep_no_text(svc):
    who = _who(svc)
    pack = await build_pack(svc, who, _req("wind farms grid capacity region", max_tokens=2000))
    async with svc.db.session() as s:
        rec = await s.get(ReplayRecord, pack.header.replay_id)
    conditions, items = decode_record(bytes(rec.payload))
    assert [(i.passage_id, i.sha256, i.start, i.end) for i in items] == [
        (i.citation.passage_id, i.citation.sha256, i.citation.start, i.citation.end) for i in pack.items
    ]
    assert conditions["retrieval"] == "LEXICAL" and conditions["maxTokens"] == 2000
    assert rec.items == [] and rec.conditions == {}
    per_item = (len(rec.payload) - 300) / len(items)
    assert len(items) >= 10 and per_item < 80, per_item
    for i in pack.items:
        assert i.text.encode() not in bytes(rec.payload)


async def test_only_the_maker_can_replay_and_expired_records_are_gone_then_purged(svc, db):
    who = _who(svc, kind="agent", scopes=["context:read", "replay:run"])
    pack = await build_pack(svc, who, _req("hydro plants"))
    rid = pack.header.replay_id
    other_agent = _who(svc, kind="agent", scopes=["context:read", "replay:run"])
    async with db.session() as s:
        other_ws = await identity.create_workspace(s, name=f"ws-{secrets.token_hex(4)}")
    stranger = factories.principal(workspace_id=other_ws.id, kind="agent", id=who.id, scopes=["replay:run"])
    for p in (other_agent, stranger):
        with pytest.raises(NotFound):
            await replay_pack(svc, p, ReplayRequest(rid, "VERIFY"))
    async with db.session() as s:
        await s.execute(
            update(ReplayRecord).where(ReplayRecord.id == rid).values(expires_at=utcnow() - timedelta(seconds=1))
        )
    with pytest.raises(ReplayExpired) as e:
        await replay_pack(svc, who, ReplayRequest(rid, "VERIFY"))
    assert e.value.code == "AGENT_REPLAY_EXPIRED" and e.value.http_status == 410
    async with db.session() as s:
        assert await purge_expired_replays(s) >= 1
    async with db.session() as s:
        assert (await s.execute(select(ReplayRecord.id).where(ReplayRecord.id == rid))).first() is None
    with pytest.raises(NotFound):
        await replay_pack(svc, who, ReplayRequest(rid, "VERIFY"))


async def test_non_retaining_workspaces_keep_no_records(svc, db):
    async with db.session() as s:
        ws = await identity.create_workspace(s, name=f"ws-{secrets.token_hex(4)}", retaining=False)
    await ingest_documents(
        db, svc.indexes, workspace_id=ws.id, collection="c", documents=iter(_corpus()[:5]), chunk_max_tokens=40
    )
    who = factories.principal(workspace_id=ws.id, role="editor")
    pack = await build_pack(svc, who, _req("tidal plants"))
    assert pack.items
    async with db.session() as s:
        assert await s.get(ReplayRecord, pack.header.replay_id) is None
    with pytest.raises(NotFound) as e:
        await replay_pack(svc, who, ReplayRequest(pack.header.replay_id, "VERIFY"))
    assert e.value.extra["reason"] == "NOT_RETAINED" and "non-retaining" in e.value.message


async def test_purge_deletes_exactly_the_records_expired_at_the_given_time(svc, db):
    """Real time values: a record expiring at E is kept by a purge at E - 1 µs and deleted at E."""
    who = _who(svc)
    base = utcnow().replace(microsecond=0) + timedelta(days=400)  # later than any other test's record
    rids = []
    for k in range(3):
        pack = await build_pack(svc, who, _req(f"{TOPICS[k]} plants"))
        rids.append(pack.header.replay_id)
        async with db.session() as s:
            await s.execute(
                update(ReplayRecord).where(ReplayRecord.id == rids[k]).values(expires_at=base + timedelta(days=k))
            )

    async def left() -> set[str]:
        async with db.session() as s:
            return set((await s.execute(select(ReplayRecord.id).where(ReplayRecord.id.in_(rids)))).scalars())

    async with db.session() as s:
        await purge_expired_replays(s, base - timedelta(microseconds=1))
    assert await left() == set(rids)
    async with db.session() as s:
        await purge_expired_replays(s, base)
    assert await left() == set(rids[1:])
    assert await purge_replays(db, base + timedelta(days=2)) >= 2  # batched, one transaction per batch
    assert await left() == set()


async def test_the_periodic_purge_deletes_expired_records_while_running(svc, db):
    """purge_replays_every (the serve lifespan's task) deletes a record that expired after start-up."""
    import asyncio

    who = _who(svc)
    pack = await build_pack(svc, who, _req("wave farms"))
    rid = pack.header.replay_id
    runs: list[int] = []
    task = asyncio.create_task(purge_replays_every(db, 0.05, on_purge=lambda n, when: runs.append(n)))
    try:
        await asyncio.sleep(0.2)
        async with db.session() as s:
            assert await s.get(ReplayRecord, rid) is not None  # not expired: kept
            await s.execute(
                update(ReplayRecord).where(ReplayRecord.id == rid).values(expires_at=utcnow() - timedelta(seconds=1))
            )
        for _ in range(100):
            await asyncio.sleep(0.05)
            async with db.session() as s:
                if await s.get(ReplayRecord, rid) is None:
                    break
        async with db.session() as s:
            assert await s.get(ReplayRecord, rid) is None
        assert len(runs) >= 3 and sum(runs) >= 1
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    with pytest.raises(NotFound):
        await replay_pack(svc, who, ReplayRequest(rid, "VERIFY"))


async def test_visible_legs_over_fetches_a_leg_left_short_and_says_when_it_gives_up(svc):
    """app.packs.resolve.visible_legs at a small depth: hidden passages ranked first are dropped,
    the leg is searched deeper until it holds ``depth`` visible ones, or says it fell short."""
    from cairn.app.packs.resolve import MAX_OVERFETCH, visible_legs

    who = _who(svc)
    t = utcnow()
    await ingest_documents(
        svc.db,
        svc.indexes,
        workspace_id=svc.ws_id,
        collection="c",
        documents=iter(
            SourceDocument(external_id=f"late{i}", title=f"Late {i}", text=f"Tidal tidal tidal plants, late {i}.")
            for i in range(40)
        ),
        chunk_max_tokens=40,
    )
    limits: list[int] = []

    class Lexical:  # the real BM25 index, counting the depths it is asked for
        def search(self, limit: int):
            limits.append(limit)
            return svc.indexes.lexical.search("tidal plants", workspace_id=svc.ws_id, limit=limit)

    lexical = Lexical()
    # as of t the 40 later passages (BM25's best) are hidden: depth 3 needs a leg of 64
    ranked = {"lexical": lexical.search(3)}
    visible = await visible_legs(svc, who, ranked, t, t, {}, depth=3, deeper={"lexical": lexical})
    assert limits == [3, 6, 12, 24, 48]  # 2x each time, until 3 visible were found
    expected = [p for p in lexical.search(1000) if p[0] in {q for q, _ in visible.ranked["lexical"]}]
    assert visible.ranked["lexical"] == expected[:3] and visible.notes == ()
    assert ranked["lexical"] == lexical.search(3)  # the input is not written to
    async with svc.db.session() as s:
        from cairn.app.core.models import Passage

        late = set(
            (await s.execute(select(Passage.id).where(Passage.text.like("%late%"), Passage.workspace_id == svc.ws_id)))
            .scalars()
            .all()
        )
    assert len(late) == 40 and not late & {p for p, _ in visible.ranked["lexical"]}
    # depth 1: 16 x 1 = 16 passages searched, all hidden: the leg is empty and a note says why
    limits.clear()
    short = await visible_legs(svc, who, {"lexical": lexical.search(1)}, t, t, {}, depth=1, deeper={"lexical": lexical})
    assert limits[-1] == MAX_OVERFETCH and short.ranked["lexical"] == []
    assert short.notes == (
        "lexical leg: 16 of its first 16 passages are not visible at this asOf; it lists the 0 visible "
        "ones (fewer than its depth 1)",
    )
