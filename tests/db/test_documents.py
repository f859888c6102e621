"""Documents, versions and passages on SQLite and PostgreSQL (same tests, same results)."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from cairn.app.core.errors import BadInput, NotFound
from cairn.app.core.models import DocumentVersion, Passage, VersionPassage
from cairn.app.corpus import as_of
from cairn.app.corpus import documents as docs
from cairn.app.identity import service as identity

T2020 = datetime(2020, 1, 1, tzinfo=UTC)
T2023 = datetime(2023, 7, 1, tzinfo=UTC)


async def _workspace(db):
    async with db.session() as s:
        ws = await identity.create_workspace(s, name=f"ws-{secrets.token_hex(4)}")
        coll = await docs.get_or_create_collection(s, workspace_id=ws.id, name="c")
    return ws.id, coll.id


async def _upsert(db, ws, coll, text, **kw):
    async with db.session() as s:
        return await docs.upsert_document(
            s, workspace_id=ws, collection_id=coll, external_id="doc-1", title="T", text=text, chunk_max_tokens=20, **kw
        )


PARAS = [
    "Alpha paragraph about the first topic, long enough to stand alone as one passage here.",
    "Beta paragraph describing a second subject with different words entirely in it.",
    "Gamma paragraph closing the document with a third statement of fact for the test.",
]


async def test_upsert_is_idempotent_and_versions_keep_passage_ids(db):
    ws, coll = await _workspace(db)
    v1 = await _upsert(db, ws, coll, "\n\n".join(PARAS))
    assert v1.status == "created" and len(v1.new_passage_ids) == 3
    same = await _upsert(db, ws, coll, "\n\n".join(PARAS))
    assert same.status == "unchanged" and same.version_id == v1.version_id and same.new_passage_ids == ()
    changed = PARAS[:2] + ["Delta paragraph replaces gamma with a brand new closing statement for the test."]
    v2 = await _upsert(db, ws, coll, "\n\n".join(changed))
    assert v2.status == "updated" and v2.version_id != v1.version_id and len(v2.new_passage_ids) == 1
    async with db.session() as s:
        links = {}
        for vid in (v1.version_id, v2.version_id):
            rows = (
                (
                    await s.execute(
                        select(VersionPassage).where(VersionPassage.version_id == vid).order_by(VersionPassage.ordinal)
                    )
                )
                .scalars()
                .all()
            )
            links[vid] = [r.passage_id for r in rows]
            version = await s.get(DocumentVersion, vid)
            for r in rows:
                passage = await s.get(Passage, r.passage_id)
                assert version.text[r.start : r.end] == passage.text
        assert links[v1.version_id][:2] == links[v2.version_id][:2]
        assert links[v1.version_id][2] != links[v2.version_id][2]
        assert links[v2.version_id][2] == v2.new_passage_ids[0]


async def test_as_of_resolution_and_deletion(db):
    ws, coll = await _workspace(db)
    v1 = await _upsert(db, ws, coll, "The CFO is Alice.", valid_from=T2020)
    v2 = await _upsert(db, ws, coll, "The CFO is Bob.", valid_from=T2023)
    doc_id = v1.document_id
    now = datetime.now(UTC)
    async with db.session() as s:
        at = await as_of.visible_versions(s, workspace_id=ws, document_ids=[doc_id], valid_time=now, system_time=now)
        assert at[doc_id].id == v2.version_id and not at[doc_id].superseded
        at = await as_of.visible_versions(
            s, workspace_id=ws, document_ids=[doc_id], valid_time=datetime(2021, 1, 1, tzinfo=UTC), system_time=now
        )
        assert at[doc_id].id == v1.version_id and at[doc_id].superseded
        v1_row = await s.get(DocumentVersion, v1.version_id)
        at = await as_of.visible_versions(
            s, workspace_id=ws, document_ids=[doc_id], valid_time=now, system_time=v1_row.recorded_at
        )
        assert at[doc_id].id == v1.version_id
        at = await as_of.visible_versions(
            s, workspace_id=ws, document_ids=[doc_id], valid_time=datetime(2019, 1, 1, tzinfo=UTC), system_time=now
        )
        assert at == {}
        deleted_at = await docs.delete_document(s, workspace_id=ws, document_id=doc_id)
    async with db.session() as s:
        before = await as_of.visible_versions(
            s,
            workspace_id=ws,
            document_ids=[doc_id],
            valid_time=now,
            system_time=deleted_at - timedelta(microseconds=1),
        )
        assert before[doc_id].id == v2.version_id
        after = await as_of.visible_versions(
            s, workspace_id=ws, document_ids=[doc_id], valid_time=now, system_time=deleted_at
        )
        assert after == {}
        with pytest.raises(NotFound):
            await as_of.read_document(s, workspace_id=ws, document_id=doc_id)
    # re-ingesting a deleted document brings it back as a new version
    back = await _upsert(db, ws, coll, "The CFO is Bob.", valid_from=T2023)
    assert back.status == "updated"


async def test_workspaces_do_not_see_each_other(db):
    ws_a, coll_a = await _workspace(db)
    ws_b, _ = await _workspace(db)
    r = await _upsert(db, ws_a, coll_a, "Private text of A.")
    async with db.session() as s:
        with pytest.raises(NotFound):
            await as_of.read_document(s, workspace_id=ws_b, document_id=r.document_id)
        now = datetime.now(UTC)
        assert (
            await as_of.visible_versions(
                s, workspace_id=ws_b, document_ids=[r.document_id], valid_time=now, system_time=now
            )
            == {}
        )


@pytest.mark.parametrize(
    "kw,field",
    [
        ({"text": "   "}, "input.text"),
        ({"text": "x", "external_id": ""}, "input.externalId"),
        ({"text": "x", "valid_from": T2023, "valid_to": T2020}, "input.validTo"),
        ({"text": "x", "valid_from": datetime(2025, 1, 1)}, "input.validFrom"),
        ({"text": "bad \ud800 surrogate"}, "input.text"),
    ],
)
async def test_bad_documents_are_refused(db, kw, field):
    ws, coll = await _workspace(db)
    args = {"external_id": "e", "title": "", **kw}
    async with db.session() as s:
        with pytest.raises(BadInput) as e:
            await docs.upsert_document(s, workspace_id=ws, collection_id=coll, **args)
    assert e.value.extra["field"] == field
