"""Passage rows kept across packs (app/packs/row_cache.py) never outlive a change of the documents.

SQLite and PostgreSQL. Two processes are stood in for by two :class:`Services` on one database
(each its own engine and row cache; one search index): a write through one must change the
other's next pack although the other holds the rows of the document from an earlier pack.
"""

from __future__ import annotations

import secrets

import pytest
from sqlalchemy import event, select

from cairn.app.context import bootstrap
from cairn.app.core.config import Settings
from cairn.app.core.db import Database
from cairn.app.core.ids import utcnow
from cairn.app.core.models import CorpusGeneration
from cairn.app.corpus import documents as docs
from cairn.app.corpus import open_indexes, read_generation
from cairn.app.governance.auth import ROLE_PERMISSIONS, Principal
from cairn.app.identity import service as identity
from cairn.app.packs import PassageRowCache
from cairn.app.packs.resolve import fetch_rows, mend_torn_documents, passage_views
from cairn.app.packs.service import build_pack
from cairn.app.packs.types import PackRequest

TASK = "basalt columns cooling lava"


@pytest.fixture
async def two(db_url, tmp_path):
    """Two services (``a``, ``b``) on one database and one lexical index, a workspace with two documents."""
    settings = Settings(data_dir=tmp_path, database_url=db_url, embedder="none")
    indexes = open_indexes(settings)
    a_db, b_db = Database(db_url), Database(db_url)
    async with a_db.session() as s:
        ws = await identity.create_workspace(s, name=f"rows-{secrets.token_hex(4)}")
        coll = await docs.get_or_create_collection(s, workspace_id=ws.id, name="geology")
    ids = {}
    for ext, text in (
        ("basalt", "Basalt columns form when thick lava flows cool and crack into hexagons."),
        ("granite", "Granite cools slowly deep underground, so its crystals grow large."),
    ):
        async with a_db.session() as s:
            r = await docs.upsert_document(
                s, workspace_id=ws.id, collection_id=coll.id, external_id=ext, title=ext, text=text
            )
        ids[ext] = r.document_id
        await indexes.index_passages(a_db, list(r.new_passage_ids))
    who = Principal(
        kind="member", id="m", workspace_id=ws.id, permissions=ROLE_PERMISSIONS["owner"], member_id="m", role="owner"
    )
    a, b = bootstrap(settings, db=a_db, indexes=indexes), bootstrap(settings, db=b_db, indexes=indexes)
    yield {"a": a, "b": b, "who": who, "ws": ws.id, "coll": coll.id, "ids": ids}
    indexes.close()
    await a_db.dispose()
    await b_db.dispose()


async def _pack(services, who, **kw):
    return await build_pack(services, who, PackRequest(task=TASK, retrieval="LEXICAL", **kw))


def _docs(pack) -> list[str]:
    return [i.citation.document_id for i in pack.items]


def _count_row_reads(db: Database) -> list[str]:
    """SQL statements that read passage rows for packs (the join :func:`fetch_rows` issues)."""
    seen: list[str] = []

    @event.listens_for(db.engine.sync_engine, "before_cursor_execute")
    def _log(conn, cursor, statement, *args):
        if "version_passage" in statement.lower() or "versionpassage" in statement.lower():
            seen.append(statement)

    return seen


async def test_a_second_pack_reads_no_passage_rows_from_sql(two):
    a, who = two["a"], two["who"]
    first = await _pack(a, who)
    reads = _count_row_reads(a.db)
    second = await _pack(a, who)
    assert _docs(second) == _docs(first) and _docs(first)[0] == two["ids"]["basalt"]
    assert reads == []  # every row came from the process's cache
    assert len(a.passage_rows) >= 2


async def test_a_deletion_through_another_process_is_seen_at_once(two):
    a, b, who = two["a"], two["b"], two["who"]
    assert two["ids"]["basalt"] in _docs(await _pack(b, who))  # b now holds basalt's rows
    before = await read_generation(b.db, two["ws"])
    async with a.db.session() as s:
        await docs.delete_document(s, workspace_id=two["ws"], document_id=two["ids"]["basalt"])
    assert await read_generation(b.db, two["ws"]) == before + 1
    after = await _pack(b, who)
    assert _docs(after) == [two["ids"]["granite"]]
    # ranks are among passages visible now: with basalt's rows of before the deletion, granite
    # would be BM25's second
    assert after.items[0].lexical_rank == 1


async def test_a_new_version_through_another_process_replaces_the_cached_rows(two):
    a, b, who = two["a"], two["b"], two["who"]
    old = (await _pack(b, who)).items[0]
    assert old.citation.document_id == two["ids"]["basalt"]
    since = utcnow()  # valid from after the first version's valid from: it holds now
    async with a.db.session() as s:  # same text, another valid time: a new version of the same passage
        r = await docs.upsert_document(
            s,
            workspace_id=two["ws"],
            collection_id=two["coll"],
            external_id="basalt",
            title="basalt",
            text="Basalt columns form when thick lava flows cool and crack into hexagons.",
            valid_from=since,
        )
    assert r.status == "updated" and r.new_passage_ids == ()
    new = (await _pack(b, who)).items[0]
    # with the rows of before, the as-of rule would not know the new version and cite the old one
    assert new.citation.passage_id == old.citation.passage_id
    assert new.citation.version_id == r.version_id != old.citation.version_id
    assert new.valid_from == since


async def test_an_unchanged_upsert_or_a_rollback_leaves_the_generation(two):
    a, ws = two["a"], two["ws"]
    before = await read_generation(a.db, ws)
    async with a.db.session() as s:
        r = await docs.upsert_document(
            s,
            workspace_id=ws,
            collection_id=two["coll"],
            external_id="granite",
            title="granite",
            text="Granite cools slowly deep underground, so its crystals grow large.",
        )
    assert r.status == "unchanged"
    with pytest.raises(RuntimeError):
        async with a.db.session() as s:
            await docs.delete_document(s, workspace_id=ws, document_id=two["ids"]["granite"])
            raise RuntimeError("abort before commit")
    assert await read_generation(a.db, ws) == before
    async with a.db.session() as s:  # one transaction changing two documents raises it by one
        for ext in ("granite", "basalt"):
            await docs.upsert_document(
                s, workspace_id=ws, collection_id=two["coll"], external_id=ext, title=ext, text=f"{ext} rewritten."
            )
    assert await read_generation(a.db, ws) == before + 1
    async with a.db.session() as s:
        rows = (await s.execute(select(CorpusGeneration).where(CorpusGeneration.workspace_id == ws))).all()
    assert len(rows) == 1


async def test_rows_of_one_document_from_before_and_after_a_write_are_mended(two):
    """A pack can hold rows of one document read before a write (kept from earlier packs) and
    rows read after it: the kept paragraph's rows know only version 1, the new paragraph's
    know version 2, and the as-of rule would pick version 2 and drop the kept paragraph."""
    a, who, ws, coll = two["a"], two["who"], two["ws"], two["coll"]
    first, second, third = (" ".join([word] * 150) for word in ("stone", "river", "cloud"))  # a passage each

    async def write(text: str):
        async with a.db.session() as s:
            return await docs.upsert_document(
                s, workspace_id=ws, collection_id=coll, external_id="two-paragraphs", title="t", text=text
            )

    v1 = await write(f"{first}\n\n{second}")
    kept = v1.new_passage_ids[0]
    cache = await fetch_rows(a, who, [kept])  # read before the write, as if by an earlier pack
    v2 = await write(f"{first}\n\n{third}")
    (added,) = v2.new_passage_ids
    cache.update(await fetch_rows(a, who, [added]))  # read after it
    now = utcnow()
    torn = passage_views(cache, [kept, added], now, now)  # the fault mended below:
    assert torn[kept].version.id == v1.version_id  # the kept paragraph cited in a version that is no longer current
    await mend_torn_documents(a, who, cache, [kept, added])
    assert {r.version_id for r in cache[kept]} == {v1.version_id, v2.version_id}
    views = passage_views(cache, [kept, added], now, now)
    assert {pid: v.version.id for pid, v in views.items()} == {kept: v2.version_id, added: v2.version_id}


def test_the_cache_starts_over_at_a_new_generation_and_trims_by_replacing():
    cache = PassageRowCache(max_rows=4)
    rows = cache.rows_for("w1", 1)
    rows.update({f"p{i}": [] for i in range(3)})
    assert cache.rows_for("w1", 1) is rows
    assert cache.rows_for("w1", 2) == {} and len(cache) == 0
    row = object()
    held = cache.rows_for("w1", 2)
    held.update({f"q{i}": [row] for i in range(2)})
    other = cache.rows_for("w2", 7)
    other.update({"r0": [row], "r1": [row, row], "r2": [row]})  # a passage of a two-version document
    assert len(cache) == 6  # rows, not passages
    trimmed = cache.rows_for("w2", 7)  # 6 rows > 4: w2 keeps the newest passages within 2 rows, w1 goes
    assert list(trimmed) == ["r2"] and trimmed is not other and trimmed.rows == 1
    assert len(held) == 2 and len(other) == 3  # a pack holding a dict keeps every row it saw
    assert cache.rows_for("w1", 2) == {}
    with pytest.raises(ValueError, match="max_rows must be >= 2"):
        PassageRowCache(max_rows=1)
