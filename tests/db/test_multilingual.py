"""The multilingual dense leg (issue 18): CJK text is embedded by multilingual-e5-small in its own
named vector, tasks search the spaces whose passages could match, and a vector store of the
layout before named vectors is re-created and re-embedded."""

from __future__ import annotations

import re

import numpy as np
import pytest
from sqlalchemy import select

from cairn.app.context import bootstrap
from cairn.app.core.config import Settings
from cairn.app.core.models import Passage
from cairn.app.corpus.changes import Cursor, load_state
from cairn.app.corpus.indexing import SearchIndexes
from cairn.app.packs.service import build_pack
from cairn.app.packs.types import PackRequest
from tests.db.dense_routing import (
    catch_up_after_migration,
    cluster_indexes,
    ingested_workspace,
    local_indexes,
    replace_shard,
    viewer,
)

# nine one-sentence Japanese paragraphs (issue 18's minimal case); only one is about a piano
PARAGRAPHS = {
    "coffee": "私は毎朝コーヒーを飲んでから仕事に出かけます。",
    "piano": "彼女は昨年のピアノコンクールで優勝しました。",
    "train": "東京から大阪まで新幹線で約二時間半かかります。",
    "cat": "隣の家の猫はいつも窓辺で昼寝をしています。",
    "rain": "梅雨の季節になると毎日のように雨が降ります。",
    "soccer": "日曜日の午後は公園で子供たちとサッカーをしました。",
    "library": "市立図書館は月曜日が休館日になっています。",
    "sushi": "駅前の寿司屋は新鮮な魚で有名です。",
    "mountain": "富士山の山頂から見た日の出はとても美しかった。",
}


@pytest.fixture(scope="module")
def db_url(sqlite_db_url):
    """SQLite only (tests/db/conftest.py): which model embeds a passage and which spaces a task
    searches are decided in Python from the text, over the vector and BM25 indexes; the SQL
    read on the way (passages, the change log) is the same on both engines and is tested on both
    by tests/db/test_ingest.py and test_change_log.py. PostgreSQL ran these four tests again
    (~25 s of wall at load 16)."""
    return sqlite_db_url


async def test_a_short_japanese_task_gets_the_multilingual_leg_and_the_piano_paragraph_first(
    db, db_url, tmp_path, embedder, multilingual_embedder
):
    indexes = local_indexes(tmp_path, embedder, multilingual_embedder)
    try:
        ws, ext = await ingested_workspace(db, indexes, PARAGRAPHS)
        # every paragraph is Japanese: all in the e5 space, none in MiniLM's
        assert indexes.vectors.has_space(multilingual_embedder.space, workspace_id=ws)
        assert not indexes.vectors.has_space("minilm", workspace_id=ws)
        services = bootstrap(Settings(data_dir=tmp_path, database_url=db_url), db=db, indexes=indexes)
        task = "ピアノのコンクールは？"
        for mode in ("LEXICAL", "DENSE", "HYBRID"):
            pack = await build_pack(services, viewer(ws), PackRequest(task=task, retrieval=mode, max_tokens=400))
            assert ext[pack.items[0].citation.document_id] == "piano", (mode, pack.footer.notes)
        hybrid = await build_pack(services, viewer(ws), PackRequest(task=task, retrieval="HYBRID", max_tokens=400))
        assert hybrid.items[0].dense_rank == 1 and hybrid.items[0].lexical_rank == 1
        assert [
            n for n in hybrid.footer.notes if n.startswith("dense leg: intfloat/multilingual-e5-small (the task is")
        ]
        assert not [n for n in hybrid.footer.notes if "skipped" in n]
        # an English task: the dense leg searches the e5 space too and ranks the Japanese piano
        # paragraph first (cross-lingual); its cosine (0.82) is under the cross-lingual floor
        # (0.83), but across scripts the dense leg's head is kept (issue 37: real matches and
        # off-topic tasks overlap in cosine, so the floor lost most real matches): the pack shows
        # the paragraph first, and its note says the items come from similarity alone
        dense = indexes.dense
        assert dense is not None
        english_task = "Who won the piano competition?"
        spaces = dense.task_spaces(english_task, multilingual_has_passages=lambda: True)
        e5 = multilingual_embedder.space
        assert spaces == ("minilm", e5)
        hits = indexes.vectors.search(dense.encode_task(english_task, spaces)[e5], workspace_id=ws, space=e5)
        assert len(hits) >= 2 and hits[0][1] > hits[1][1]
        async with db.session() as s:
            top_document = (await s.execute(select(Passage.document_id).where(Passage.id == hits[0][0]))).scalar_one()
        assert ext[top_document] == "piano"
        english = await build_pack(
            services, viewer(ws), PackRequest(task=english_task, retrieval="HYBRID", max_tokens=400)
        )
        assert english.items and ext[english.items[0].citation.document_id] == "piano"
        assert english.items[0].dense_rank == 1 and english.items[0].lexical_rank is None
        weak = [n for n in english.footer.notes if n.startswith("no passage matched any query word: every item comes")]
        assert len(weak) == 1, english.footer.notes
        best = re.search(r"(\d\.\d\d) for intfloat/multilingual-e5-small", weak[0])
        assert best is not None and 0.75 < float(best.group(1)) < 0.83, weak[0]
    finally:
        indexes.close()


async def test_english_passages_stay_with_minilm_and_mixed_workspaces_merge_both_spaces(
    db, db_url, tmp_path, embedder, multilingual_embedder
):
    indexes = local_indexes(tmp_path, embedder, multilingual_embedder)
    try:
        docs = {"en-volcano": "Mount Etna is an active volcano on the east coast of Sicily.", **PARAGRAPHS}
        ws, ext = await ingested_workspace(db, indexes, docs)
        assert indexes.vectors.has_space("minilm", workspace_id=ws)
        by_ext = {v: k for k, v in ext.items()}
        async with db.session() as s:
            volcano = (
                await s.execute(select(Passage.id).where(Passage.document_id == by_ext["en-volcano"]))
            ).scalar_one()
        # the English passage's MiniLM vector is the one stored (cosine 1 with MiniLM's own encoding)
        stored = indexes.vectors.vectors([volcano])[volcano]
        assert float(np.dot(stored, embedder.encode([docs["en-volcano"]])[0])) > 0.999
        services = bootstrap(Settings(data_dir=tmp_path, database_url=db_url), db=db, indexes=indexes)
        pack = await build_pack(
            services, viewer(ws), PackRequest(task="volcano in Sicily", retrieval="DENSE", max_tokens=4000)
        )
        assert ext[pack.items[0].citation.document_id] == "en-volcano"
        found = {ext[i.citation.document_id] for i in pack.items}
        assert found == {"en-volcano"}  # the e5 space was searched; its unrelated items fall under the floor
        assert [n for n in pack.footer.notes if "all-MiniLM-L6-v2 for this workspace's English passages" in n]
    finally:
        indexes.close()


async def test_a_data_dir_of_the_old_layout_is_migrated_and_re_embedded(
    db, db_url, tmp_path, embedder, multilingual_embedder, caplog
):
    import qdrant_edge as qe

    indexes = local_indexes(tmp_path, embedder, multilingual_embedder)
    try:
        ws, ext = await ingested_workspace(db, indexes, PARAGRAPHS)
    finally:
        indexes.close()
    # replace the shard by one of the layout before named vectors (one unnamed 384-d vector),
    # as the previous version wrote it, with the change-log cursor past every passage
    old = replace_shard(tmp_path, qe.EdgeVectorParams(size=384, distance=qe.Distance.Cosine))
    old.update(
        qe.UpdateOperation.upsert_points(
            [qe.Point("00000000-0000-0000-0000-000000000001", [1.0] * 384, {"passage_id": "old"})]
        )
    )
    old.flush()
    old.close()
    state = load_state(tmp_path / "whoosh")  # the change-log cursor says every passage is applied
    assert state is not None and state.cursor != Cursor() and "vector" in state.legs

    indexes = local_indexes(tmp_path, embedder, multilingual_embedder)
    try:
        message = indexes.migration_message()
        assert message is not None and "one unnamed vector (384 dims" in message and "re-embedded" in message
        assert indexes.vectors.count() == 0
        lex, vec = await catch_up_after_migration(indexes, db, caplog)
        # the log was followed again from its start: every passage re-embedded, the lexical leg
        # (Whoosh, untouched) skipped the passages it holds; the message logged once
        assert vec >= len(PARAGRAPHS) and vec == indexes.vectors.count() and lex == 0
        assert indexes.vectors.has_space(multilingual_embedder.space, workspace_id=ws)
        services = bootstrap(Settings(data_dir=tmp_path, database_url=db_url), db=db, indexes=indexes)
        pack = await build_pack(
            services, viewer(ws), PackRequest(task="ピアノのコンクールは？", retrieval="DENSE", max_tokens=400)
        )
        assert ext[pack.items[0].citation.document_id] == "piano"
    finally:
        indexes.close()
    # opened again: the layout is current, nothing to migrate
    indexes = local_indexes(tmp_path, embedder, multilingual_embedder)
    try:
        assert indexes.migration_message() is None and indexes.vectors.count() >= len(PARAGRAPHS)
    finally:
        indexes.close()


async def test_cluster_mode_keeps_named_dense_spaces_and_bm25_in_one_collection_and_migrates_both_legs(
    db, db_url, tmp_path, embedder, multilingual_embedder, caplog
):
    """Cluster mode (qdrant-client local mode here): MiniLM's and e5's named vectors and the
    sparse BM25 vectors on the same points; a collection of the layout before named vectors
    (one unnamed dense vector beside the BM25 ones) is re-created with both, and the change
    log is followed again so that both legs are rebuilt (its BM25 data was in it)."""
    from qdrant_client import QdrantClient, models

    from cairn.retrieval.lexical.sparse import BM25_VECTOR, TF_VECTOR, sparse_config

    store = tmp_path / "qdrant"

    def cluster() -> SearchIndexes:
        return cluster_indexes(tmp_path, embedder, multilingual_embedder)

    docs = {"en-volcano": "Mount Etna is an active volcano on the east coast of Sicily.", **PARAGRAPHS}
    indexes = cluster()
    try:
        ws, ext = await ingested_workspace(db, indexes, docs)
        params = indexes.vectors.client.get_collection("passages").config.params
        assert set(params.vectors) == {"minilm", multilingual_embedder.space}
        assert set(params.sparse_vectors) == {BM25_VECTOR, TF_VECTOR}
        # the dense leg's writes kept the BM25 vectors and vice versa; has_space reads the
        # vectors themselves (a point made by the BM25 write first has no "space" payload)
        n = indexes.lexical.count()
        assert n == indexes.vectors.count() and indexes.vectors.has_space(multilingual_embedder.space, workspace_id=ws)
        by_ext = {v: k for k, v in ext.items()}
        async with db.session() as s:
            ids = dict(
                (await s.execute(select(Passage.document_id, Passage.id).where(Passage.workspace_id == ws))).all()
            )
        piano, volcano = ids[by_ext["piano"]], ids[by_ext["en-volcano"]]
        assert indexes.vectors.has([piano, volcano, "absent"]) == {piano, volcano}
        stored = indexes.vectors.vectors([piano, volcano])
        assert float(np.dot(stored[piano], multilingual_embedder.encode([PARAGRAPHS["piano"]])[0])) > 0.999
        assert float(np.dot(stored[volcano], embedder.encode([docs["en-volcano"]])[0])) > 0.999
    finally:
        indexes.close()

    # the previous version's collection: one unnamed dense vector beside the sparse BM25 ones
    client = QdrantClient(path=str(store))
    try:
        client.delete_collection("passages")
        client.create_collection(
            "passages",
            vectors_config=models.VectorParams(size=384, distance=models.Distance.COSINE),
            sparse_vectors_config=sparse_config(),
        )
        client.upsert(
            "passages",
            points=[
                models.PointStruct(
                    id="00000000-0000-0000-0000-000000000001",
                    vector={"": [1.0] * 384, BM25_VECTOR: models.SparseVector(indices=[1], values=[1.0])},
                    payload={"passage_id": "old", "workspace_id": ws},
                )
            ],
        )
    finally:
        client.close()

    indexes = cluster()
    try:
        message = indexes.migration_message()
        assert message is not None and "one unnamed vector (384 dims" in message and "sparse BM25" in message
        assert (indexes.lexical.count(), indexes.vectors.count()) == (0, 0)
        lex, vec = await catch_up_after_migration(indexes, db, caplog)
        assert lex == vec == n and (indexes.lexical.count(), indexes.vectors.count()) == (n, n)
        services = bootstrap(
            Settings(data_dir=tmp_path / "d", database_url=db_url, vector_backend="local", lexical_backend="qdrant"),
            db=db,
            indexes=indexes,
        )
        for mode in ("LEXICAL", "DENSE"):
            pack = await build_pack(
                services, viewer(ws), PackRequest(task="ピアノのコンクールは？", retrieval=mode, max_tokens=400)
            )
            assert ext[pack.items[0].citation.document_id] == "piano", mode
        pack = await build_pack(
            services, viewer(ws), PackRequest(task="volcano in Sicily", retrieval="DENSE", max_tokens=400)
        )
        assert ext[pack.items[0].citation.document_id] == "en-volcano"
    finally:
        indexes.close()
    indexes = cluster()  # opened again: current layout, the cursor at the end
    try:
        assert indexes.migration_message() is None and await indexes.index_pending(db) == (0, 0)
    finally:
        indexes.close()
