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

from app.core.errors import BadInput, NotFound
from app.core.ids import utcnow
from app.core.models import ReplayRecord
from app.corpus import SourceDocument, delete_document, ingest_documents
from app.identity import service as identity
from app.packs import PackRequest, build_pack, decode_record, event_json
from app.replay import ReplayExpired, ReplayRequest, purge_expired_replays, replay_pack
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
        from app.core.models import DocumentVersion

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


async def test_recompute_of_a_past_as_of_pack_is_byte_identical(svc):
    who = _who(svc)
    t = utcnow() - timedelta(milliseconds=1)
    pack = await build_pack(svc, who, _req("solar farms maintenance crews", valid_time=t, system_time=t))
    # a later write (after the pack's systemTime) that the task does not match changes nothing.
    # (One that the task matches would take leg ranks among passages invisible at the pack's
    # systemTime, shifting RRF scores: README "Replay" says so; the diff still shows no move.)
    await _upsert(svc, "d900", "Orchards of apricot trees bloom early in a warm spring.")
    r = await replay_pack(svc, who, ReplayRequest(pack.header.replay_id, "RECOMPUTE", "solar farms maintenance crews"))

    # Fused scores are normalised leg scores (retrieval.fusion.hybrid_fusion), and BM25 scores
    # move with the corpus statistics (idf, mean length) the new document changes: items, order,
    # ranks and citations are byte-identical, scores equal to a few per cent.
    def without_scores(items):
        return json.dumps([{**event_json(i), "score": None} for i in items], sort_keys=True)

    assert without_scores(pack.items) == without_scores(r.pack.items)
    assert [i.score for i in r.pack.items] == pytest.approx([i.score for i in pack.items], rel=0.05)
    assert r.added == () and r.removed == () and r.moved == ()
    assert r.unchanged_ranks == len(pack.items) > 0
    with pytest.raises(BadInput) as e:
        await replay_pack(svc, who, ReplayRequest(pack.header.replay_id, "RECOMPUTE", "another task"))
    assert e.value.extra["field"] == "task"


async def test_recompute_diff_on_50_packs(svc):
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
    changed = 0
    for task, pack in packs:
        r = await replay_pack(svc, who, ReplayRequest(pack.header.replay_id, "RECOMPUTE", task))
        old = {(i.kind, i.citation.passage_id, i.citation.sha256): i.rank for i in pack.items}
        new = {(i.kind, i.citation.passage_id, i.citation.sha256): i.rank for i in r.pack.items}
        assert {(i.kind, i.passage_id, i.sha256) for i in r.removed} == old.keys() - new.keys()
        assert {(i.kind, i.passage_id, i.sha256) for i in r.added} == new.keys() - old.keys()
        assert {((m.item.kind, m.item.passage_id, m.item.sha256), m.old_rank, m.new_rank) for m in r.moved} == {
            (k, old[k], new[k]) for k in old.keys() & new.keys() if old[k] != new[k]
        }
        assert all(i.document_id in victims for i in r.removed)
        changed += bool(r.removed)
    assert changed >= 3


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
