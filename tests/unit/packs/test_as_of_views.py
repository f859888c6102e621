"""As-of readings of passages kept across packs (app/packs/resolve.py ``passage_views``).

A row cache that keeps readings (``CountedRows.as_of``) must give exactly what reading the
rows afresh gives, at every read point, in any order of read points: a reading is reused only
at or after the passage's settled time (every time point of its rows passed)."""

from __future__ import annotations

import itertools
import random
from datetime import UTC, datetime, timedelta

from cairn.app.packs.pipeline_types import PassageRow
from cairn.app.packs.resolve import passage_views, settled_at
from cairn.app.packs.row_cache import CountedRows

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def day(n: int) -> datetime:
    return T0 + timedelta(days=n)


def row(pid, doc, version, number, valid_from, valid_to, recorded, span, *, deleted=None, coll_deleted=None):
    """A passage row; datetimes naive, as SQLite returns them."""

    def naive(t):
        return None if t is None else t.replace(tzinfo=None)

    return PassageRow(
        pid, doc, f"text of {pid}", "0" * 64, 10, "coll", "title", f"ext-{doc}", "c",
        version, number, naive(valid_from), naive(valid_to), naive(recorded), naive(deleted), naive(coll_deleted),
        *(span or (None, None)),
    )  # fmt: skip


def corpus() -> dict[str, list[PassageRow]]:
    """Three documents: one rewritten (a passage dropped, one kept, one added), one with a
    closed valid interval, one deleted later."""
    return {
        # doc A: v1 valid from day 0 (recorded day 0); v2 valid from day 3, recorded day 5
        "a-old": [row("a-old", "A", "A1", 1, day(0), None, day(0), (0, 9)), row("a-old", "A", "A2", 2, day(3), None, day(5), None)],
        "a-kept": [row("a-kept", "A", "A1", 1, day(0), None, day(0), (10, 19)), row("a-kept", "A", "A2", 2, day(3), None, day(5), (0, 9))],
        "a-new": [row("a-new", "A", "A1", 1, day(0), None, day(0), None), row("a-new", "A", "A2", 2, day(3), None, day(5), (10, 19))],
        # doc B: valid days 1..4 only
        "b": [row("b", "B", "B1", 1, day(1), day(4), day(1), (0, 5))],
        # doc C: recorded day 2, deleted day 6
        "c": [row("c", "C", "C1", 1, day(0), None, day(2), (0, 5), deleted=day(6))],
    }  # fmt: skip


def reading(views):
    return {pid: (v.version.id, v.span, v.version.superseded, v.version.valid_to) for pid, v in views.items()}


def test_kept_readings_equal_fresh_readings_at_every_read_point_in_any_order():
    rows = corpus()
    points = [(day(v) + timedelta(hours=12 * h), day(s)) for v in range(-1, 9) for h in (0, 1) for s in range(-1, 9)]
    rng = random.Random(7)
    for trial in range(5):
        kept = CountedRows()
        kept.update(rows)
        order = points[:]
        rng.shuffle(order)
        for valid_time, system_time in order:
            fresh = reading(passage_views(dict(rows), list(rows), valid_time, system_time))
            assert reading(passage_views(kept, list(rows), valid_time, system_time)) == fresh, (
                trial,
                valid_time,
                system_time,
            )
        assert kept.as_of  # readings were kept (read points past every passage's settled time)


def test_a_reading_as_of_now_is_not_used_for_a_past_read_point():
    kept = CountedRows()
    kept.update(corpus())
    now = day(10)
    assert reading(passage_views(kept, ["a-kept", "a-new", "a-old"], now, now)) == {
        "a-kept": ("A2", (0, 9), False, None),
        "a-new": ("A2", (10, 19), False, None),
    }
    assert set(kept.as_of) == {"a-kept", "a-new", "a-old"}  # a-old's reading (not visible) is kept too
    past = passage_views(kept, ["a-kept", "a-new", "a-old"], day(4), day(4))  # before A2 was recorded
    assert reading(past) == {"a-old": ("A1", (0, 9), False, None), "a-kept": ("A1", (10, 19), False, None)}
    deleted = passage_views(kept, ["c"], day(7), day(7))
    assert deleted == {} and kept.as_of["c"] == (day(6), None)


def test_new_rows_for_a_passage_forget_its_kept_reading():
    kept = CountedRows()
    kept.update(corpus())
    now = day(10)
    assert passage_views(kept, ["b"], now, now) == {}  # B's interval ended on day 4
    assert "b" in kept.as_of
    kept["b"] = [row("b", "B", "B2", 2, day(1), None, day(8), (0, 5))]  # read again: a version without an end
    assert "b" not in kept.as_of
    assert reading(passage_views(kept, ["b"], now, now)) == {"b": ("B2", (0, 5), False, None)}


def test_settled_at_is_the_latest_time_point_of_the_rows():
    rows = corpus()
    assert settled_at(rows["a-kept"]) == day(5)
    assert settled_at(rows["b"]) == day(4)
    assert settled_at(rows["c"]) == day(6)
    assert all(t.tzinfo is not None for t in itertools.chain(settled_at(r) for r in rows.values()))
