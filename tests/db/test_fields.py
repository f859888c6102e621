"""Learned fields end to end through the services, on SQLite and PostgreSQL: define, extract
on ingest, cited values, the Delaware question as one plan, aggregates with coverage lines,
knownAt, stale citations, labels and retraining, limits."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace

import pytest

from cairn.app.core.errors import BadInput
from cairn.app.corpus import SourceDocument, ingest_documents, upsert_document
from cairn.app.fields import (
    KLEISTER_NDA_FIELDS,
    Aggregate,
    DefineFieldsRequest,
    ExtractRequest,
    FieldSpec,
    FieldsRequest,
    FieldType,
    Filter,
    LabelRequest,
    Plan,
    Sort,
    SuggestRequest,
    define_fields,
    extract_fields,
    label_value,
    list_fields,
    query_fields,
    suggest_fields,
    train_fields,
    verify_span,
)
from tests import factories
from tests.db.conftest import SQLITE_ONLY

NDAS = {
    "acme.txt": (
        "MUTUAL NON-DISCLOSURE AGREEMENT\n\n"
        "This Mutual Non-Disclosure Agreement (the “Agreement”) is entered into as of March 1, 2015 by and between "
        "Acme Robotics, Inc., a Delaware corporation (the “Company”), and Beta Widgets LLC, a California limited "
        "liability company (“Recipient”).\n\n"
        "1. Term. This Agreement shall remain in effect for a period of three (3) years from the Effective Date.\n\n"
        "2. Governing Law. This Agreement shall be governed by and construed in accordance with the laws of the "
        "State of Delaware, without regard to its conflict of laws principles."
    ),
    "gamma.txt": (
        "CONFIDENTIALITY AGREEMENT\n\n"
        "This Confidentiality Agreement is made and entered into as of June 5, 2018 by and between Gamma Holdings "
        "Corporation, a Nevada corporation (“Gamma”), and Delta Partners LP (“Delta”).\n\n"
        "1. Term. The obligations of this Agreement shall survive for one (1) year after the date hereof.\n\n"
        "2. Governing Law. This Agreement shall be governed by the laws of the State of Delaware."
    ),
    "omega.txt": (
        "NON-DISCLOSURE AGREEMENT\n\n"
        "This Non-Disclosure Agreement is dated as of September 9, 2011 between Omega Systems, Inc., a Texas "
        "corporation (the “Company”), and Sigma Analytics Corp. (“Sigma”).\n\n"
        "1. Governing Law. This Agreement shall be governed by the laws of the State of New York."
    ),
}


def _services(db):
    return SimpleNamespace(db=db)


async def _setup(db):
    async with db.session() as s:
        ws = await factories.workspace(s)
        m, _ = await factories.member(s, workspace_id=ws.id, role="editor")
    editor = factories.member_principal(m)
    docs = [
        SourceDocument(external_id=k, title=k, text=v, valid_from=datetime(2020, 1, 1, tzinfo=UTC))
        for k, v in NDAS.items()
    ]
    await ingest_documents(db, None, workspace_id=ws.id, collection="ndas", documents=iter(docs), chunk_max_tokens=40)
    async with db.session() as s:
        from cairn.app.corpus import list_collections

        (coll, _), *_ = await list_collections(s, workspace_id=ws.id)
    await define_fields(_services(db), editor, DefineFieldsRequest(coll.id, KLEISTER_NDA_FIELDS))
    report = await extract_fields(_services(db), editor, ExtractRequest(coll.id))
    assert report.documents == 3
    return editor, coll


def _cited(value, text):
    assert value.passage_id and value.sha256 and value.start is not None, value
    assert verify_span(text, value.start, value.end, FieldType(value_type(value)), value.key)


def value_type(v):
    return {"effective_date": "DATE", "jurisdiction": "TEXT", "party": "TEXT", "term": "DURATION"}[v.field]


async def test_the_delaware_question_is_one_plan_with_every_value_cited(db):
    editor, coll = await _setup(db)
    plan = Plan(
        coll.id,
        fields=("party", "jurisdiction", "term", "effective_date"),
        filters=(Filter("jurisdiction", "EQ", "delaware"), Filter("term", "GT", "2 years")),
        sort=(Sort("effective_date"),),
    )
    result = await query_fields(_services(db), editor, plan)
    assert [r.external_id for r in result.rows] == ["acme.txt"]
    row = result.rows[0]
    assert [v.value for v in row.values["jurisdiction"]] == ["Delaware"]
    assert [v.value for v in row.values["term"]] == [{"amount": 3, "unit": "years"}]
    assert [v.value for v in row.values["effective_date"]] == ["2015-03-01"]
    assert {v.key for v in row.values["party"]} >= {"ACME ROBOTICS INC."}
    for vals in row.values.values():
        for v in vals:
            _cited(v, NDAS["acme.txt"])
    # term is missing in one of three documents: the result says so
    assert result.incomplete and any(line.startswith("term: 2 of 3 documents") for line in result.coverage_lines)


async def test_count_per_jurisdiction_with_coverage(db):
    editor, coll = await _setup(db)
    result = await query_fields(
        _services(db),
        editor,
        Plan(coll.id, fields=("jurisdiction",), aggregate=Aggregate("COUNT", group_by="jurisdiction")),
    )
    assert [(g.key, g.documents, g.value) for g in result.groups] == [("Delaware", 2, 2), ("New York", 1, 1)]
    assert result.coverage == {"jurisdiction": 1.0} and not result.incomplete
    infos = {i.spec.name: i for i in await list_fields(_services(db), editor, FieldsRequest(coll.id))}
    assert infos["jurisdiction"].coverage == 1.0 and infos["term"].with_value == 2
    assert infos["term"].model in ("SEED", "ZERO_SHOT")


async def test_known_at_returns_the_value_known_then_and_changed_text_is_stale(db):
    editor, coll = await _setup(db)
    async with db.session() as s:
        r = await upsert_document(
            s,
            workspace_id=editor.workspace_id,
            collection_id=coll.id,
            external_id="acme.txt",
            title="acme.txt",
            text=NDAS["acme.txt"].replace("March 1, 2015", "April 2, 2016"),
            valid_from=datetime(2024, 6, 1, tzinfo=UTC),
            chunk_max_tokens=40,
        )
    assert r.status == "updated"
    plan = Plan(coll.id, fields=("effective_date", "jurisdiction"))

    async def acme(p):
        return next(r for r in (await query_fields(_services(db), editor, p)).rows if r.external_id == "acme.txt")

    # not extracted yet: the cited paragraph changed, so the old value is reported stale, not as fact;
    # the unchanged governing-law paragraph still cites its value (offsets moved into the new version)
    row = await acme(plan)
    (v,) = row.values["effective_date"]
    assert v.value is None and v.stale and v.uncited_reason.startswith("STALE")
    (j,) = row.values["jurisdiction"]
    new_text = NDAS["acme.txt"].replace("March 1, 2015", "April 2, 2016")
    assert j.value == "Delaware" and not j.stale and new_text[j.start : j.end] == "Delaware"
    await extract_fields(_services(db), editor, ExtractRequest(coll.id))  # what ingest runs
    row = await acme(plan)
    assert [v.value for v in row.values["effective_date"]] == ["2016-04-02"] and row.version_number == 2
    row = await acme(Plan(coll.id, fields=("effective_date",), known_at="2023-12-31"))
    assert [v.value for v in row.values["effective_date"]] == ["2015-03-01"]
    assert row.version_number == 1
    with pytest.raises(BadInput) as exc:
        await query_fields(_services(db), editor, Plan(coll.id, fields=("term",), known_at="2023-13-01"))
    assert exc.value.code == "FIELD_KNOWN_AT_INVALID"


async def test_labels_train_the_ranker(db):
    editor, coll = await _setup(db)
    await define_fields(
        _services(db),
        editor,
        DefineFieldsRequest(coll.id, (FieldSpec("company_state", FieldType.TEXT, "state of incorporation"),)),
    )
    await extract_fields(_services(db), editor, ExtractRequest(coll.id))
    async with db.session() as s:
        from sqlalchemy import select

        from cairn.app.core.models import Document

        ids = {d.external_id: d.id for d in (await s.execute(select(Document))).scalars() if d.collection_id == coll.id}
    assert await label_value(_services(db), editor, LabelRequest(ids["acme.txt"], "company_state", ("Delaware",))) == [
        "DELAWARE"
    ]
    await label_value(_services(db), editor, LabelRequest(ids["gamma.txt"], "company_state", ("Nevada",)))
    with pytest.raises(BadInput) as exc:
        await label_value(_services(db), editor, LabelRequest(ids["acme.txt"], "term", ("soon",)))
    assert exc.value.code == "FIELD_LABEL_INVALID"
    origin = await train_fields(_services(db), editor, coll.id)
    assert origin["company_state"] == "LABELS"
    await extract_fields(_services(db), editor, ExtractRequest(coll.id))
    result = await query_fields(
        _services(db), editor, Plan(coll.id, fields=("company_state",), sort=(Sort("company_state"),))
    )
    got = {r.external_id: [v.value for v in r.values["company_state"]] for r in result.rows}
    assert got["acme.txt"] == ["Delaware"] and got["gamma.txt"] == ["Nevada"]
    assert [v.source for v in result.rows[0].values["company_state"]] == ["LABEL"]
    assert got["omega.txt"] == ["Texas"]  # learned: the state in "a Texas corporation"
    # a correction the model never proposed is cited where the text states it
    await label_value(_services(db), editor, LabelRequest(ids["omega.txt"], "jurisdiction", ("texas",)))
    result = await query_fields(_services(db), editor, Plan(coll.id, fields=("jurisdiction",)))
    (v,) = next(r for r in result.rows if r.external_id == "omega.txt").values["jurisdiction"]
    assert (v.value, v.source, v.uncited_reason) == ("Texas", "LABEL", None)
    assert NDAS["omega.txt"][v.start : v.end] == "Texas" and v.passage_id and v.sha256


@pytest.mark.parametrize(
    ("plan", "code", "limit"),
    [
        (dict(fields=("party",) * 7), "FIELD_QUERY_TOO_MANY_FIELDS", 6),
        (dict(fields=()), "FIELD_QUERY_NO_FIELDS", 1),
        (dict(fields=("party",), filters=(Filter("term", "EXISTS"),) * 7), "FIELD_QUERY_TOO_MANY_FILTERS", 6),
        (dict(fields=("party",), limit=201), "FIELD_QUERY_LIMIT_OUT_OF_RANGE", 200),
        (dict(fields=("nope",)), "FIELD_NOT_DEFINED", None),
        (dict(fields=("party",), filters=(Filter("party", "GT", "x"),)), "FIELD_QUERY_INVALID_FILTER", None),
        (dict(fields=("party",), filters=(Filter("term", "GT", "soon"),)), "FIELD_QUERY_INVALID_FILTER", None),
        (dict(fields=("party",), aggregate=Aggregate("SUM", "party")), "FIELD_QUERY_INVALID_AGGREGATE", None),
    ],
)
@SQLITE_ONLY  # each limit is checked on the plan (and the field names read) before a field query is built
async def test_every_limit_is_refused_with_a_code_naming_it(db, plan, code, limit):
    editor, coll = await _setup(db)
    with pytest.raises(BadInput) as exc:
        await query_fields(_services(db), editor, Plan(coll.id, **plan))
    assert exc.value.code == code
    if limit is not None:
        assert exc.value.extra["limit"] == limit and str(limit) in exc.value.message


async def test_suggestions_are_not_applied(db):
    editor, coll = await _setup(db)
    got = await suggest_fields(_services(db), editor, SuggestRequest(coll.id))
    assert all(s.name not in {"party", "term"} for s in got)
    infos = await list_fields(_services(db), editor, FieldsRequest(coll.id))
    assert sorted(i.spec.name for i in infos) == ["effective_date", "jurisdiction", "party", "term"]
