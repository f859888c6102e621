"""queryFields plans over given values (no database): group limit, typed comparisons."""

from __future__ import annotations

import pytest

from cairn.app.core.errors import BadInput
from cairn.app.fields import Aggregate, DocValues, FieldSpec, FieldType, Filter, Plan, Sort, ValueView
from cairn.app.fields.execution import run_plan

SPECS = [FieldSpec("city", FieldType.TEXT), FieldSpec("fee", FieldType.MONEY), FieldSpec("term", FieldType.DURATION)]


def _doc(i, city, fee=None, term=None):
    d = DocValues(f"doc_{i}", f"d{i:03d}", "", f"v_{i}", 1)
    d.values["city"] = [ValueView("city", city, city.upper(), 0.9, d.document_id, d.version_id)]
    if fee is not None:
        d.values["fee"] = [
            ValueView("fee", {"amount": fee, "currency": "USD"}, f"{fee} USD", 0.9, d.document_id, d.version_id)
        ]
    if term is not None:
        d.values["term"] = [ValueView("term", term, "x", 0.9, d.document_id, d.version_id)]
    return d


def test_more_than_50_groups_is_refused_naming_the_limit():
    docs = [_doc(i, f"City {i}") for i in range(51)]
    with pytest.raises(BadInput) as exc:
        run_plan(Plan("c", ("city",), aggregate=Aggregate("COUNT", group_by="city")), SPECS, docs)
    assert exc.value.code == "FIELD_QUERY_TOO_MANY_GROUPS" and exc.value.extra["limit"] == 50
    ok = run_plan(Plan("c", ("city",), aggregate=Aggregate("COUNT", group_by="city")), SPECS, docs[:50])
    assert len(ok.groups) == 50


def test_typed_comparisons_sort_and_aggregates():
    docs = [
        _doc(1, "Paris", 100, {"amount": 18, "unit": "months"}),
        _doc(2, "Lyon", 300, {"amount": 2, "unit": "years"}),
        _doc(3, "Paris", None, {"amount": 3, "unit": "years"}),
    ]
    r = run_plan(
        Plan("c", ("city", "term"), filters=(Filter("term", "GTE", "2 years"),), sort=(Sort("term", True),)),
        SPECS,
        docs,
    )
    assert [d.external_id for d in r.rows] == ["d003", "d002"]
    r = run_plan(Plan("c", ("fee",), aggregate=Aggregate("SUM", "fee", group_by="city")), SPECS, docs)
    assert [(g.key, g.documents, g.value) for g in r.groups] == [
        ("Paris", 2, {"amount": 100.0, "currency": "USD"}),
        ("Lyon", 1, {"amount": 300.0, "currency": "USD"}),
    ]
    assert r.incomplete and r.coverage["fee"] == pytest.approx(0.6667, abs=1e-4)
    r = run_plan(Plan("c", ("city",), filters=(Filter("fee", "LT", {"amount": 200, "currency": "usd"}),)), SPECS, docs)
    assert [d.external_id for d in r.rows] == ["d001"]


@pytest.mark.parametrize(
    ("value", "where"),
    [
        ("Dela\u0000ware", "plan.filters[0].value"),
        ("x" * 1_001, "plan.filters[0].value"),
        (["Delaware", "Ore\u202egon"], "plan.filters[0].value[1]"),
    ],
)
def test_text_operands_follow_the_text_rule(value, where):
    """A filter's text operand is refused like any other free text: NUL, bidi overrides, over 1,000."""
    from cairn.app.fields.plan import check_limits

    with pytest.raises(BadInput) as e:
        check_limits(Plan("c", ("city",), filters=(Filter("city", "EQ", value),)))
    assert e.value.extra["field"] == where
    check_limits(Plan("c", ("city",), filters=(Filter("city", "EQ", "Delaware"),)))  # plain text passes
