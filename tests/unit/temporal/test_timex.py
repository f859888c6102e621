"""Time expressions → intervals (dateutil-parsed dates; ends exclusive; open ends None)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from cairn.app.temporal import intervals, task_constraint
from cairn.app.temporal.extract import extract


def d(y, m=1, day=1):
    return datetime(y, m, day, tzinfo=UTC)


@pytest.mark.parametrize(
    "text,expected",
    [
        ("He worked there from 2004 to 2006.", [(d(2004), d(2007), "year")]),
        ("She left in May 2003.", [(d(2003, 5), d(2003, 6), "month")]),
        ("Since July 2024 the CFO is Roe.", [(d(2024, 7), None, "month")]),
        ("It stood until 1998.", [(None, d(1999), "year")]),
        ("彼は2004年から2006年まで東京にいた。", [(d(2004), d(2007), "year")]),
        ("2019年以降", [(d(2019), None, "year")]),
        ("Baker , during 1916-1920 , while", [(d(1916), d(1921), "year")]),
        ("between 2004 and 2006", [(d(2004), d(2007), "year")]),
        ("in 2010 and 2012", [(d(2010), d(2011), "year"), (d(2012), d(2013), "year")]),
        ("On 1 July 2024 he joined.", [(d(2024, 7, 1), d(2024, 7, 2), "day")]),
        ("effective 2024-07-01", [(d(2024, 7, 1), None, "day")]),
        ("No time here at all.", []),
    ],
)
def test_intervals(text, expected):
    assert [(i.valid_from, i.valid_to, i.precision) for i in intervals(text)] == expected


def test_task_constraints():
    now = d(2026, 12, 1)
    assert task_constraint("Who coached the team in 2005?", None, now)[0].valid_from == d(2005)
    iv, source = task_constraint("Who is the current CFO of Acme?", None, now)
    assert iv.valid_from == now and source == "current"
    iv, source = task_constraint("Who was CFO as of March 2022?", None, now)
    assert iv.valid_from == d(2022, 3) and source == "as of"
    assert task_constraint("Who is the CFO of Acme?", None, now) is None
    assert task_constraint("Who is the CFO of Acme?", d(2022), now)[1] == "asOf.validTime"


def test_role_statements_and_unrelated_ones():
    a = extract("Jane Doe was appointed CFO of Acme Corp in 2019.", "Acme Corp", None, None)
    assert [(s.relation, s.holder, s.interval.valid_from, s.interval.valid_to) for s in a] == [
        ("chief financial officer", "Jane Doe", d(2019), None)
    ]
    c = extract("Since March 2025, the CFO also chairs the audit committee.", "Acme Corp", None, None)
    assert [(s.relation, s.interval.valid_from) for s in c] == [("", d(2025, 3))]
    # a role statement without a date takes its version's validity
    b = extract("John Roe is the CFO of Acme Corp.", "Acme Corp", d(2024, 7), None)
    assert [(s.relation, s.holder, s.interval.valid_from, s.time_source) for s in b] == [
        ("chief financial officer", "John Roe", d(2024, 7), "document")
    ]
