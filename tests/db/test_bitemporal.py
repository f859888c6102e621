"""Bitemporal reads, one test per cell of docs/api.md's "As of a point in time" table (SQLite and PostgreSQL).

One document: v1 "CFO is Alice" valid from 2019 (open), recorded at t1; v2 "CFO is Bob" valid
from 2024-07-01, recorded at t2 > t1; v3 corrects v2 (same validFrom), recorded at t3 > t2.
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime, timedelta

import pytest

from cairn.app.core.ids import as_utc
from cairn.app.core.models import DocumentVersion
from cairn.app.corpus import as_of
from cairn.app.corpus import documents as docs
from cairn.app.identity import service as identity

T2018 = datetime(2018, 1, 1, tzinfo=UTC)
T2019 = datetime(2019, 1, 1, tzinfo=UTC)
T2022 = datetime(2022, 6, 1, tzinfo=UTC)
T2024 = datetime(2024, 7, 1, tzinfo=UTC)
T2025 = datetime(2025, 3, 1, tzinfo=UTC)
EPS = timedelta(microseconds=1)


@pytest.fixture
async def history(db):
    async with db.session() as s:
        ws = await identity.create_workspace(s, name=f"ws-{secrets.token_hex(4)}")
        coll = await docs.get_or_create_collection(s, workspace_id=ws.id, name="c")
    out = {"ws": ws.id}
    for key, text, vf in (("v1", "The CFO is Alice.", T2019), ("v2", "The CFO is Bob.", T2024)):
        async with db.session() as s:
            r = await docs.upsert_document(
                s, workspace_id=ws.id, collection_id=coll.id, external_id="cfo", title="CFO", text=text, valid_from=vf
            )
        out[key], out["doc"] = r.version_id, r.document_id
    async with db.session() as s:
        for key in ("v1", "v2"):
            out["t" + key[1]] = as_utc((await s.get(DocumentVersion, out[key])).recorded_at)
    out["coll"] = coll.id
    return out


async def _read(db, h, valid_time, system_time):
    async with db.session() as s:
        return (
            await as_of.visible_versions(
                s, workspace_id=h["ws"], document_ids=[h["doc"]], valid_time=valid_time, system_time=system_time
            )
        ).get(h["doc"])


async def test_cell_past_valid_time_after_replacement_recorded(db, history):
    """validTime in v1's interval, systemTime ≥ t2: v1, validTo = v2.validFrom, superseded."""
    v = await _read(db, history, T2022, history["t2"])
    assert v.id == history["v1"] and v.valid_to == T2024 and v.superseded is True


async def test_cell_past_valid_time_before_replacement_recorded(db, history):
    """validTime in v1's interval, t1 ≤ systemTime < t2: v1, open, not superseded."""
    v = await _read(db, history, T2022, history["t2"] - EPS)
    assert v.id == history["v1"] and v.valid_to is None and v.superseded is False


async def test_cell_current_valid_time_after_replacement_recorded(db, history):
    """validTime after v2.validFrom, systemTime ≥ t2: v2, open, not superseded."""
    v = await _read(db, history, T2025, history["t2"])
    assert v.id == history["v2"] and v.valid_to is None and v.superseded is False


async def test_cell_current_valid_time_before_replacement_recorded(db, history):
    """validTime after v2.validFrom, systemTime < t2: v1 (the only version known then)."""
    v = await _read(db, history, T2025, history["t2"] - EPS)
    assert v.id == history["v1"] and v.valid_to is None and v.superseded is False


async def test_cell_valid_time_before_any_version(db, history):
    """validTime before every validFrom: nothing, whatever the systemTime."""
    assert await _read(db, history, T2018, history["t2"]) is None


async def test_cell_system_time_before_first_record(db, history):
    """systemTime before t1: nothing had been recorded."""
    assert await _read(db, history, T2022, history["t1"] - EPS) is None


async def test_cell_correction_in_system_time(db, history):
    """v3 corrects v2 (same validFrom, recorded later): shown from t3 on; v2 superseded only from t3."""
    async with db.session() as s:
        r = await docs.upsert_document(
            s,
            workspace_id=history["ws"],
            collection_id=history["coll"],
            external_id="cfo",
            title="CFO",
            text="The CFO is Robert Jones.",
            valid_from=T2024,
        )
    async with db.session() as s:
        t3 = as_utc((await s.get(DocumentVersion, r.version_id)).recorded_at)
    before = await _read(db, history, T2025, t3 - EPS)
    assert before.id == history["v2"] and before.superseded is False
    after = await _read(db, history, T2025, t3)
    assert after.id == r.version_id and after.superseded is False
    past = await _read(db, history, T2022, t3)
    assert past.id == history["v1"] and past.valid_to == T2024 and past.superseded is True


async def test_cell_deleted_document(db, history):
    """systemTime ≥ the deletion: nothing; just before it: the version as usual."""
    async with db.session() as s:
        deleted_at = await docs.delete_document(s, workspace_id=history["ws"], document_id=history["doc"])
    assert (await _read(db, history, T2025, deleted_at - EPS)).id == history["v2"]
    assert await _read(db, history, T2025, deleted_at) is None


async def test_document_read_reports_effective_valid_to(db, history):
    """document(id, asOf): v1's validTo is v2's validFrom once v2 is recorded, open before."""
    async with db.session() as s:
        now = await as_of.read_document(s, workspace_id=history["ws"], document_id=history["doc"])
        then = await as_of.read_document(
            s, workspace_id=history["ws"], document_id=history["doc"], system_time=history["t2"] - EPS
        )
    assert now.valid_to[history["v1"]] == T2024 and now.valid_to[history["v2"]] is None
    assert then.valid_to == {history["v1"]: None} and then.chosen_version_id == history["v1"]
