"""Cluster mode's lexical leg (sparse BM25 in Qdrant: qdrant-client local mode here) through
packs on SQLite and PostgreSQL: nothing under the data dir but Qdrant's storage, new versions,
as-of reads and deletions respected, workspace visibility applied in Qdrant."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import text as sql

from cairn.app import identity
from cairn.app.context import bootstrap
from cairn.app.core.config import Settings
from cairn.app.corpus import SourceDocument, delete_document, ingest_documents, open_indexes
from cairn.app.packs import PackRequest, build_pack
from cairn.retrieval.lexical.sparse import SparseBM25Index
from tests import factories

V2019 = datetime(2019, 1, 1, tzinfo=UTC)
V2024 = datetime(2024, 7, 1, tzinfo=UTC)


@pytest.fixture
async def cluster(db, db_url, tmp_path):
    settings = Settings(
        data_dir=tmp_path / "d",
        database_url=db_url,
        embedder="none",
        chunk_max_tokens=40,
        vector_backend="local",
        lexical_backend="qdrant",
    )
    indexes = open_indexes(settings)
    services = bootstrap(settings, db=db, indexes=indexes)
    yield settings, services
    indexes.close()


async def _ingest(services, ws_id: str, *docs) -> None:
    await ingest_documents(
        services.db,
        services.indexes,
        workspace_id=ws_id,
        collection="c",
        documents=iter(SourceDocument(external_id=e, title=t, text=x, valid_from=vf) for e, t, x, vf in docs),
        chunk_max_tokens=40,
    )


async def _texts(services, ws_id: str, task: str, **kw) -> list[str]:
    who = factories.principal(workspace_id=ws_id, role="viewer")
    pack = await build_pack(services, who, PackRequest(task=task, retrieval="LEXICAL", **kw))
    return [i.text for i in pack.items]


async def test_lexical_packs_come_from_qdrant_and_follow_versions_as_of_and_deletes(cluster):
    settings, services = cluster
    assert isinstance(services.indexes.lexical, SparseBM25Index) and services.indexes.vectors is None
    assert not settings.whoosh_dir.exists()  # no Whoosh folder: the BM25 leg is in Qdrant
    async with services.db.session() as s:
        ws = (await identity.create_workspace(s, name=factories.unique_name("ws"))).id
        other = (await identity.create_workspace(s, name=factories.unique_name("ws"))).id
    await services.indexes.index_pending(services.db)  # a new index follows the whole change log first
    before = services.indexes.lexical.count()  # other tests' passages in the shared test database
    old = "Jane Doe was appointed CFO of Acme Corp in 2019."
    new = "On 1 July 2024, Acme Corp named John Roe as its new CFO."
    await _ingest(services, ws, ("cfo", "Acme", old, V2019), ("tokyo", "東京", "東京都は日本の首都です。", V2019))
    await _ingest(services, ws, ("cfo", "Acme", new, V2024))
    await _ingest(services, other, ("cfo-other", "Acme", "Acme Corp's CFO in the other workspace.", V2019))
    assert services.indexes.lexical.count() - before == 4  # both versions' passages and the other workspace's
    assert await _texts(services, ws, "Acme Corp CFO") == [new]
    assert await _texts(services, ws, "Acme Corp CFO", valid_time=datetime(2020, 1, 1, tzinfo=UTC)) == [old]
    assert await _texts(services, ws, "日本の首都") == ["東京都は日本の首都です。"]
    async with services.db.session() as s:
        query = sql("select id from document where external_id = 'tokyo' and workspace_id = :ws")
        doc_id = (await s.execute(query, {"ws": ws})).scalar_one()
        await delete_document(s, workspace_id=ws, document_id=doc_id)
    assert await _texts(services, ws, "日本の首都") == []
    assert await _texts(services, other, "Acme Corp CFO") == ["Acme Corp's CFO in the other workspace."]
