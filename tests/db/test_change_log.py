"""The search-index change log (app.corpus.changes) on SQLite and PostgreSQL: two data dirs on one
database each see every write; the cursor survives restarts and a lost cursor write loses
nothing; on PostgreSQL a later sequence committed before an earlier one is not skipped."""

from __future__ import annotations

import asyncio
import json
import secrets

import pytest

from cairn.app.corpus.changes import STATE_FILE, Cursor, load_state
from cairn.app.corpus.documents import get_or_create_collection, upsert_document
from cairn.app.corpus.indexing import SearchIndexes
from cairn.app.identity import service as identity
from cairn.retrieval.lexical import WhooshIndex
from cairn.retrieval.vectors import open_vector_index


@pytest.fixture(scope="module")
def db_url(private_db_url):
    """PostgreSQL in a cluster of this module's own: the log's read horizon is server-wide, and
    another test file's open transaction on the shared server held its cursors back under -n 2."""
    return private_db_url


async def _collections(db, *names):
    async with db.session() as s:
        ws = (await identity.create_workspace(s, name=f"log-{secrets.token_hex(4)}")).id
        return ws, [(await get_or_create_collection(s, workspace_id=ws, name=n)).id for n in names]


async def _write(db, ws, coll, ext, text):
    async with db.session() as s:
        r = await upsert_document(
            s, workspace_id=ws, collection_id=coll, external_id=ext, title=ext.title(), text=text, chunk_max_tokens=40
        )
    return r.new_passage_ids


def _lexical_only(path) -> SearchIndexes:
    return SearchIndexes(lexical=WhooshIndex(path / "whoosh"), vectors=None, embedder=None, state_dir=path)


def _found(indexes: SearchIndexes, query: str, ws: str) -> set[str]:
    return {pid for pid, _ in indexes.lexical.search(query, workspace_id=ws)}


async def test_two_data_dirs_on_one_database_each_see_every_write(db, tmp_path, embedder):
    ws, (coll,) = await _collections(db, "notes")
    a = SearchIndexes(
        lexical=WhooshIndex(tmp_path / "a" / "whoosh"),
        vectors=open_vector_index(path=tmp_path / "a" / "qdrant", dim=embedder.dim),
        embedder=embedder,
        state_dir=tmp_path / "a",
    )
    b = _lexical_only(tmp_path / "b")
    try:
        await a.index_pending(db)
        await b.index_pending(db)
        mine = await _write(db, ws, coll, "glacier", "Glaciers carve moraines into the valley floor.")
        assert await a.index_passages(db, mine) == (1, 1)  # the writer indexes its own write at once
        assert _found(a, "moraines", ws) == set(mine) and _found(b, "moraines", ws) == set()
        assert await b.index_pending(db) == (1, 0)  # the other data dir follows the log
        assert _found(b, "moraines", ws) == set(mine)
        assert await a.index_pending(db) == (0, 0)  # already present: skipped, not embedded again
        assert a.cursor == b.cursor and a.cursor > Cursor()
        saved = load_state(tmp_path / "b")
        assert saved is not None and saved.cursor == b.cursor and saved.legs == ("lexical",)
        assert a.vectors is not None and a.vectors.has(list(mine)) == set(mine)
    finally:
        a.close()
        b.close()
    # a restart reads the cursor from the data dir: nothing to apply
    again = _lexical_only(tmp_path / "b")
    try:
        assert await again.index_pending(db) == (0, 0) and again.cursor == b.cursor
    finally:
        again.close()


async def test_a_lost_cursor_write_re_reads_and_loses_nothing(db, tmp_path):
    ws, (coll,) = await _collections(db, "crash")
    idx = _lexical_only(tmp_path)
    try:
        await idx.index_pending(db)
        before = (tmp_path / STATE_FILE).read_text()
        first = await _write(db, ws, coll, "one", "Basalt columns form as lava cools slowly.")
        second = await _write(db, ws, coll, "two", "Obsidian is volcanic glass that cooled fast.")
        assert await idx.index_pending(db) == (2, 0)
        count = idx.lexical.count()
        head = idx.cursor
    finally:
        idx.close()
    # "kill -9" after the index commit, before the cursor reached the file: the old cursor is back
    (tmp_path / STATE_FILE).write_text(before)
    assert json.loads(before)["seq"] < head.seq
    idx = _lexical_only(tmp_path)
    try:
        assert await idx.index_pending(db) == (0, 0)  # re-read, both present: skipped
        assert _found(idx, "basalt", ws) == set(first) and _found(idx, "obsidian", ws) == set(second)
        assert idx.lexical.count() == count and idx.cursor == head  # no duplicate, cursor back at the head
    finally:
        idx.close()
    # an emptied index folder under a kept state file is refilled from the start of the log
    (tmp_path / "whoosh").rename(tmp_path / "whoosh-old")
    idx = _lexical_only(tmp_path)
    try:
        lex, _ = await idx.index_pending(db)
        assert lex >= 2 and _found(idx, "obsidian", ws) == set(second)
    finally:
        idx.close()


async def test_a_later_sequence_committed_first_is_not_skipped(db, tmp_path):
    if db.dialect != "postgresql":
        pytest.skip("SQLite has one writer at a time: sequence order is commit order")
    ws, (c1, c2) = await _collections(db, "slow", "fast")
    idx = _lexical_only(tmp_path)
    try:
        await idx.index_pending(db)
        slow_started = asyncio.Event()
        release = asyncio.Event()

        async def slow_writer() -> tuple[str, ...]:
            async with db.session() as s:  # takes the earlier seq, commits last
                r = await upsert_document(
                    s, workspace_id=ws, collection_id=c1, external_id="slow", title="", text="Tortoises walk slowly."
                )
                slow_started.set()
                await release.wait()
            return r.new_passage_ids

        task = asyncio.create_task(slow_writer())
        await slow_started.wait()
        fast = await _write(db, ws, c2, "fast", "Cheetahs sprint across the savanna.")
        # the fast row is committed, but an older write transaction is still running: not yet final
        assert await idx.index_pending(db) == (0, 0) and _found(idx, "cheetahs", ws) == set()
        release.set()
        slow = await task
        assert await idx.index_pending(db) == (2, 0)
        assert _found(idx, "tortoises", ws) == set(slow) and _found(idx, "cheetahs", ws) == set(fast)
    finally:
        idx.close()


async def test_an_ingest_indexes_what_it_wrote_while_another_database_holds_a_transaction(db, db_url, tmp_path):
    """The log's read horizon is server-wide on PostgreSQL: an open write transaction in *another*
    database (here the cluster's ``postgres`` database) holds back every follower's cursor. An ingest must still
    return with all it wrote indexed (it applies its own passages by id); before, it indexed
    nothing and reported ``lexical_indexed == 0`` until that transaction ended."""
    if db.dialect != "postgresql":
        pytest.skip("SQLite has no server-wide transaction horizon")
    import asyncpg

    from cairn.app.corpus.ingest import ingest_documents
    from cairn.app.corpus.sources import SourceDocument

    ws, _ = await _collections(db)
    idx = _lexical_only(tmp_path)
    admin = db_url.rsplit("/", 1)[0].replace("postgresql+asyncpg://", "postgresql://") + "/postgres"
    holder = await asyncpg.connect(admin, timeout=5)
    try:
        await idx.index_pending(db)
        tx = holder.transaction()
        await tx.start()
        await holder.fetchval("SELECT txid_current()")  # an assigned txid: the horizon stops here
        docs = [
            SourceDocument(external_id="fjord", title="Fjord", text="Fjords are glacial troughs flooded by the sea."),
            SourceDocument(external_id="esker", title="Esker", text="Eskers are ridges of meltwater gravel."),
        ]
        report = await ingest_documents(db, idx, workspace_id=ws, collection="landforms", documents=iter(docs))
        assert report.new_passages == 2 and report.lexical_indexed == 2
        assert len(_found(idx, "fjords", ws)) == 1 and len(_found(idx, "eskers", ws)) == 1
        held = idx.cursor
        assert await idx.index_pending(db) == (0, 0) and idx.cursor == held  # held back; nothing missing
        await tx.rollback()
        assert await idx.index_pending(db) == (0, 0)  # now readable: present, skipped
        assert (idx.cursor.txid, idx.cursor.seq) > (held.txid, held.seq)
    finally:
        await holder.close()
        idx.close()
