"""Memory service rules on SQLite and PostgreSQL: limits, retention, versions, privacy in SQL."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta

import pytest
from sqlalchemy import func, insert, select

from cairn.app.core.errors import CairnError
from cairn.app.core.ids import new_id, utcnow
from cairn.app.core.models import AgentMemory, Workspace
from cairn.app.governance.auth import Principal
from cairn.app.memory import service as mem
from tests import factories
from tests.db.conftest import SQLITE_ONLY


async def _setup(db, *, enabled=True, retaining=True):
    async with db.session() as s:
        ws = await factories.workspace(s, name=f"mem-{new_id('t')}", retaining=retaining, memory_enabled=enabled)
        people = {}
        for name in ("alice", "bob"):
            m, _ = await factories.member(s, workspace_id=ws.id, name=name, role="editor")
            people[name] = factories.agent_principal(
                factories.member_principal(m), id=new_id("ck")[:16], scopes={"memory:read", "memory:write"}
            )
    return ws.id, people


async def test_rate_limit_per_credential_per_hour_with_retry_after(db):
    _, p = await _setup(db)
    start = utcnow() - timedelta(minutes=30)
    async with db.session() as s:
        for i in range(mem.RATE_PER_HOUR):
            await mem.remember(
                s, principal=p["alice"], namespace="n", text=f"note {i}", now=start + timedelta(seconds=i)
            )
    with pytest.raises(CairnError) as err:
        async with db.session() as s:
            await mem.remember(
                s, principal=p["alice"], namespace="n", text="one too many", now=start + timedelta(minutes=5)
            )
    assert err.value.code == "AGENT_MEMORY_RATE_LIMITED" and err.value.http_status == 429
    # the oldest write (at start) leaves the window at start + 1 h: 55 minutes from "now"
    assert err.value.extra["retryAfter"] == 55 * 60
    async with db.session() as s:  # another credential of the same member is not limited
        other = Principal(**{**p["alice"].__dict__, "id": "0123456789abcdef"})
        out = await mem.remember(
            s, principal=other, namespace="n", text="other credential", now=start + timedelta(minutes=5)
        )
    assert out.memory.row.owner_member_id == p["alice"].member_id


async def test_versions_per_member_are_capped(db):
    ws_id, p = await _setup(db)
    now = utcnow()
    rows = [
        dict(
            id=new_id("mem"),
            workspace_id=ws_id,
            owner_member_id=p["alice"].member_id,
            writer_id="x",
            namespace="bulk",
            key=None,
            collection_id=None,
            version=1,
            text="x",
            entities=[],
            recorded_at=now - timedelta(seconds=i),
        )
        for i in range(mem.MAX_VERSIONS)
    ]
    async with db.session() as s:
        await s.execute(insert(AgentMemory), rows)
    with pytest.raises(CairnError) as err:
        async with db.session() as s:
            await mem.remember(s, principal=p["alice"], namespace="n", text="over the cap")
    assert err.value.code == "AGENT_MEMORY_FULL" and err.value.http_status == 409
    async with db.session() as s:  # bob's own quota is untouched
        await mem.remember(s, principal=p["bob"], namespace="n", text="bob is fine")


async def test_retention_purges_old_versions_on_write_and_by_function(db):
    ws_id, p = await _setup(db)
    now = utcnow()
    async with db.session() as s:
        await mem.remember(s, principal=p["alice"], namespace="n", text="ancient note", now=now - timedelta(days=120))
        await mem.remember(s, principal=p["alice"], namespace="n", text="recent note", now=now - timedelta(days=10))
    async with db.session() as s:
        page = await mem.list_memories(s, principal=p["alice"])  # purges first (90 days default)
    assert [v.row.text for v in page.items] == ["recent note"]
    async with db.session() as s:
        await mem.set_settings(s, workspace_id=ws_id, enabled=None, retention_days=5)
        left = (await s.execute(select(func.count()).where(AgentMemory.workspace_id == ws_id))).scalar_one()
    assert left == 0
    async with db.session() as s:
        await mem.remember(s, principal=p["bob"], namespace="n", text="bob old", now=now - timedelta(days=4))
        assert await mem.purge_expired(s, now=now + timedelta(days=2)) == 1


async def test_gate_codes(db):
    _, off = await _setup(db, enabled=False)
    with pytest.raises(CairnError) as err:
        async with db.session() as s:
            await mem.remember(s, principal=off["alice"], namespace="n", text="x")
    assert err.value.code == "AGENT_MEMORY_DISABLED" and err.value.http_status == 403
    _, nr = await _setup(db, retaining=False)
    with pytest.raises(CairnError) as err:
        async with db.session() as s:
            await mem.recall(s, principal=nr["alice"], query="x")
    assert err.value.code == "NON_RETAINING_WORKSPACE"


async def test_context_set_binding_refuses_collections_outside_the_set(db):
    _, p = await _setup(db)
    bound = Principal(**{**p["alice"].__dict__, "context_set_id": "cs_1"})
    with pytest.raises(CairnError) as err:
        async with db.session() as s:
            await mem.recall(s, principal=bound, query="x", collection_id="col_outside")
    assert err.value.code == "AGENT_CONTEXT_SET_SCOPE_REFUSED"


async def test_versions_as_of_and_forget_in_sql(db):
    ws_id, p = await _setup(db)
    t0 = utcnow() - timedelta(hours=2)
    async with db.session() as s:
        one = await mem.remember(
            s, principal=p["alice"], namespace="prefs", key="lunch", text="Alice likes sushi", now=t0
        )
        two = await mem.remember(
            s,
            principal=p["alice"],
            namespace="prefs",
            key="lunch",
            text="Alice likes ramen",
            now=t0 + timedelta(hours=1),
        )
    assert (one.superseded, two.superseded, two.memory.row.version) == (0, 1, 2)
    async with db.session() as s:
        then = await mem.list_memories(s, principal=p["alice"], as_of=t0 + timedelta(minutes=30))
        current = await mem.recall(s, principal=p["alice"], query="what does Alice like")
    assert [v.row.text for v in then.items] == ["Alice likes sushi"]
    assert [v.row.text for v, _, _ in current.items] == ["Alice likes ramen"]
    async with db.session() as s:
        assert await mem.forget(s, principal=p["alice"], memory_id=one.memory.row.id) == 2
        rows = (await s.execute(select(func.count()).where(AgentMemory.workspace_id == ws_id))).scalar_one()
    assert rows == 0
    async with db.session() as s:
        assert (await s.get(Workspace, ws_id)).memory_enabled


class _SlowModel:
    """The real model behind a 1.2 s delay (a saturated CPU), to cross the 800 ms budget."""

    def __init__(self, model) -> None:
        self.model, self.name = model, model.name

    def encode_query(self, text):
        time.sleep(1.2)
        return self.model.encode_query(text)


async def test_vector_leg_is_used_with_the_real_model_and_skipped_past_its_budget(db, embedder):
    _, p = await _setup(db)
    async with db.session() as s:
        await mem.remember(s, principal=p["alice"], namespace="n", text="The cat sat on the mat", embedder=embedder)
        await mem.remember(s, principal=p["alice"], namespace="n", text="Quarterly revenue grew", embedder=embedder)
        used = await mem.recall(s, principal=p["alice"], query="a kitten resting on a rug", embedder=embedder)
        slow = await mem.recall(
            s, principal=p["alice"], query="a kitten resting on a rug", embedder=_SlowModel(embedder)
        )
    legs = {lg.name: lg for lg in used.legs}
    assert legs["vector"].status == "USED" and legs["bm25"].detail == "0 matched"
    assert [v.row.text for v, _, _ in used.items][0] == "The cat sat on the mat"
    slow_legs = {lg.name: lg for lg in slow.legs}
    assert slow_legs["vector"].status == "SKIPPED" and "800 ms" in slow_legs["vector"].detail
    assert slow.items == []  # no word matches and no vector leg: nothing ranked


async def test_concurrent_remembers_of_one_key_leave_one_current_version(db):
    """Four writers of the same key at once (PostgreSQL really runs them concurrently)."""
    _, p = await _setup(db)

    async def write(i: int):
        async with db.session() as s:
            return await mem.remember(s, principal=p["alice"], namespace="race", key="k", text=f"version text {i}")

    outs = await asyncio.gather(*(write(i) for i in range(4)))
    assert sorted(o.memory.row.version for o in outs) == [1, 2, 3, 4]
    async with db.session() as s:
        current = (
            (
                await s.execute(
                    select(AgentMemory).where(
                        AgentMemory.owner_member_id == p["alice"].member_id,
                        AgentMemory.namespace == "race",
                        AgentMemory.key == "k",
                        AgentMemory.superseded_at.is_(None),
                    )
                )
            )
            .scalars()
            .all()
        )
        assert len(current) == 1 and current[0].version == 4
        again = await mem.remember(s, principal=p["alice"], namespace="race", key="k", text="after the race")
    assert again.superseded == 1 and again.memory.row.version == 5


@pytest.mark.parametrize(
    "cursor", ["2024-01-01T00:00:00|mem_x", "0001-01-01T00:00:00+14:00|mem_x", "2024-01-01T00:00:00+00:00|"]
)
async def test_bad_list_cursors_are_coded(db, cursor):
    _, p = await _setup(db)
    with pytest.raises(CairnError) as err:
        async with db.session() as s:
            await mem.list_memories(s, principal=p["alice"], cursor=cursor)
    assert err.value.code == "BAD_USER_INPUT" and err.value.extra["field"] == "cursor"


@SQLITE_ONLY  # the text is refused before anything is written
async def test_text_without_words_is_refused_as_bad_input(db):
    _, p = await _setup(db)
    with pytest.raises(CairnError) as err:
        async with db.session() as s:
            await mem.remember(s, principal=p["alice"], namespace="n", text=" ... ")
    assert err.value.code == "BAD_USER_INPUT" and err.value.extra["field"] == "text"
