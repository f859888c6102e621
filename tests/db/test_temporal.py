"""Temporal index reads and the GRAPH leg on SQLite and PostgreSQL: the "current CFO, and since
when" case, invalidation rules, bitemporal reads of the index, FACT items in packs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from cairn.app.core.ids import as_utc
from cairn.app.core.models import DocumentVersion
from cairn.app.corpus import SourceDocument, ingest_documents
from cairn.app.governance import ContextScope
from cairn.app.packs import PackRequest, build_pack, event_json
from cairn.app.replay import ReplayRequest, replay_pack
from cairn.app.temporal import TemporalRead, current_facts, timeline
from tests import factories

OLD = ("cfo-2019", "Acme Corp", "Jane Doe was appointed CFO of Acme Corp in 2019.", datetime(2019, 1, 1, tzinfo=UTC))
NEW = (
    "cfo-2024",
    "Acme Corp",
    "On 1 July 2024, Acme Corp named John Roe as its new CFO.",
    datetime(2024, 7, 1, tzinfo=UTC),
)
LATER = (
    "audit-2025",
    "Acme Corp",
    "Since March 2025, the CFO also chairs the audit committee.",
    datetime(2025, 3, 1, tzinfo=UTC),
)
OTHER = ("globex", "Globex", "Mary Major was appointed CFO of Globex in 2023.", datetime(2023, 1, 1, tzinfo=UTC))
T2022 = datetime(2022, 6, 1, tzinfo=UTC)


@pytest.fixture
async def svc(db, db_url, tmp_path):
    services, indexes = await factories.workspace_services(db, db_url, tmp_path)
    yield services
    indexes.close()


async def _ingest(svc, *docs) -> None:
    await ingest_documents(
        svc.db,
        svc.indexes,
        workspace_id=svc.ws_id,
        collection="c",
        documents=iter(SourceDocument(external_id=e, title=t, text=x, valid_from=vf) for e, t, x, vf in docs),
        chunk_max_tokens=40,
    )


def _who(svc):
    return factories.principal(workspace_id=svc.ws_id, role="viewer")


async def test_current_cfo_and_since_when(svc):
    await _ingest(svc, OLD, NEW, LATER, OTHER)
    who = _who(svc)
    now = await current_facts(svc, who, TemporalRead("Acme Corp"))
    cfo = [f for f in now if f.relation == "chief financial officer"]
    assert [(f.holder, f.valid_from) for f in cfo] == [("John Roe", datetime(2024, 7, 1, tzinfo=UTC))]
    async with svc.db.session() as s:
        version = await s.get(DocumentVersion, cfo[0].version_id)
    assert version.text[cfo[0].start : cfo[0].end] == cfo[0].text == NEW[2]
    # the unrelated later statement holds too, as a fact of its own, and ends nothing
    assert [f.text for f in now if not f.relation] == [LATER[2]]
    then = await current_facts(svc, who, TemporalRead("Acme Corp", valid_time=T2022))
    assert [(f.relation, f.holder, f.valid_from) for f in then] == [
        ("chief financial officer", "Jane Doe", datetime(2019, 1, 1, tzinfo=UTC))
    ]


async def test_timeline_invalidation_rules(svc):
    await _ingest(svc, OLD, NEW, LATER, OTHER)
    who = _who(svc)
    line = await timeline(svc, who, TemporalRead("acme corp"))
    assert [f.text for f in line] == [OLD[2], NEW[2], LATER[2]]
    old, new, later = line
    assert old.valid_to == datetime(2024, 7, 1, tzinfo=UTC) and old.ended_by == new.id
    assert new.valid_to is None and new.ended_by is None
    assert later.valid_to is None and later.relation == ""
    # two subjects never share statements: Globex's CFO (2023) ends nothing at Acme
    assert all(f.subject == "Acme Corp" for f in line)
    globex = await timeline(svc, who, TemporalRead("Globex"))
    assert [f.holder for f in globex] == ["Mary Major"] and globex[0].valid_to is None
    window = await timeline(
        svc,
        who,
        TemporalRead(
            "Acme Corp", valid_from=datetime(2020, 1, 1, tzinfo=UTC), valid_to=datetime(2021, 1, 1, tzinfo=UTC)
        ),
    )
    assert [f.text for f in window] == [OLD[2]]


async def test_the_index_is_read_bitemporally(svc):
    await _ingest(svc, OLD)
    async with svc.db.session() as s:
        from sqlalchemy import select

        t1 = as_utc(
            (
                await s.execute(select(DocumentVersion.recorded_at).where(DocumentVersion.workspace_id == svc.ws_id))
            ).scalar_one()
        )
    await _ingest(svc, NEW)
    who = _who(svc)
    before = await current_facts(svc, who, TemporalRead("Acme Corp", system_time=t1 + timedelta(microseconds=1)))
    assert [f.holder for f in before] == ["Jane Doe"] and before[0].valid_to is None
    after = await current_facts(svc, who, TemporalRead("Acme Corp"))
    assert [f.holder for f in after] == ["John Roe"]


async def test_graph_leg_adds_cited_fact_items_and_steps_aside_without_time(svc):
    await _ingest(svc, OLD, NEW, LATER, OTHER)
    who = _who(svc)
    req = PackRequest(
        task="Who was the CFO of Acme Corp in 2022?", retrieval="LEXICAL", sources=("PASSAGES", "GRAPH"), max_tokens=400
    )
    pack = await build_pack(svc, who, req)
    facts = [i for i in pack.items if i.kind == "FACT"]
    assert facts and facts[0].text == OLD[2]
    assert facts[0].interval == (datetime(2019, 1, 1, tzinfo=UTC), datetime(2024, 7, 1, tzinfo=UTC), "year")
    assert event_json(facts[0])["interval"]["precision"] == "YEAR"
    host = pack.items[facts[0].rank - 2]
    assert host.kind == "EVIDENCE" and host.citation.passage_id == facts[0].citation.passage_id
    assert any(n.startswith("GRAPH: time constraint [2022-01-01, 2023-01-01)") for n in pack.footer.notes)
    assert sum(i.tokens for i in pack.items) <= 400
    # FACT items are recorded and verified like any other item
    r = await replay_pack(svc, who, ReplayRequest(pack.header.replay_id, "VERIFY"))
    assert {c.status for c in r.checks} == {"UNCHANGED"}
    plain = await build_pack(
        svc, who, PackRequest(task="Who is CFO of Acme Corp?", retrieval="LEXICAL", sources=("PASSAGES", "GRAPH"))
    )
    assert not [i for i in plain.items if i.kind == "FACT"]
    assert any("temporal leg stepped aside" in n for n in plain.footer.notes)
    current = await build_pack(
        svc,
        who,
        PackRequest(task="Who is the current CFO of Acme Corp?", retrieval="LEXICAL", sources=("PASSAGES", "GRAPH")),
    )
    assert [i.text for i in current.items if i.kind == "FACT"][:1] == [NEW[2]]


async def test_a_credential_bound_to_a_context_set_reads_only_statements_in_its_scope(svc):
    """The temporal reads honour a context-set binding like every other read (issue 13): a
    statement of a document outside the set is neither returned nor hinted at."""
    await _ingest(svc, OLD, NEW, LATER, OTHER)
    line = await timeline(svc, _who(svc), TemporalRead("acme corp"))
    cited = line[0]
    assert (cited.external_id, cited.document_title, cited.collection_name) == (OLD[0], OLD[1], "c")
    inside = factories.principal(
        workspace_id=svc.ws_id,
        role="viewer",
        context_set_id="cs_test",
        context_scope=ContextScope(document_ids=frozenset({cited.document_id})),
    )
    assert [f.document_id for f in await timeline(svc, inside, TemporalRead("acme corp"))] == [cited.document_id]
    outside = factories.principal(
        workspace_id=svc.ws_id, role="viewer", context_set_id="cs_test", context_scope=ContextScope()
    )
    assert await timeline(svc, outside, TemporalRead("acme corp")) == []
    assert await current_facts(svc, outside, TemporalRead("Acme Corp")) == []


async def test_reindex_rebuilds_the_temporal_index_with_progress(svc):
    """`cairn reindex` calls rebuild_index: a stale index (statements gone, versions still marked
    indexed, which the lazy indexing never repairs) is extracted again, with progress."""
    from sqlalchemy import delete, func, select

    from cairn.app.core.models import TemporalIndexedVersion, TemporalStatement
    from cairn.app.temporal import rebuild_index

    await _ingest(svc, OLD, NEW, LATER, OTHER)
    who = _who(svc)
    before = await current_facts(svc, who, TemporalRead("Acme Corp"))
    assert [f.holder for f in before if f.relation] == ["John Roe"]
    async with svc.db.session() as s:
        await s.execute(delete(TemporalStatement).where(TemporalStatement.workspace_id == svc.ws_id))
    assert await current_facts(svc, who, TemporalRead("Acme Corp")) == []  # stale: lazy indexing skips it
    calls: list[tuple[str, int, int]] = []
    done = await rebuild_index(svc.db, progress=lambda *a: calls.append(a))
    async with svc.db.session() as s:
        versions = (await s.execute(select(func.count()).select_from(DocumentVersion))).scalar_one()
        marked = (await s.execute(select(func.count()).select_from(TemporalIndexedVersion))).scalar_one()
    assert done == versions == marked >= 4  # every workspace's versions, each marked indexed once
    assert calls[0] == ("temporal", 0, versions) and calls[-1] == ("temporal", versions, versions)
    assert [c[1] for c in calls] == sorted(c[1] for c in calls)
    after = await current_facts(svc, who, TemporalRead("Acme Corp"))
    assert [(f.id, f.holder, f.valid_from, f.text) for f in after] == [
        (f.id, f.holder, f.valid_from, f.text) for f in before
    ]
