"""Time expressions → normalised intervals (offline; dates parsed by python-dateutil).

A *date* is found where dateutil's own month names (``parserinfo.MONTHS``), a four-digit year
or an ISO date appear (``May 2003``, ``1 July 2024``, ``2024-07-01``, ``2004``; Japanese
``2004年5月1日`` is rewritten to ISO first) and parsed by :func:`dateutil.parser.parse`; its
*precision* (day / month / year) is what the text specified, found by parsing with two
different defaults. The words around a date give the interval (``[from, to)``, ends
exclusive, ``None`` open):

==========================================  =========================================
``from A to B``, ``between A and B``,        ``[start(A), end(B))``
``A–B``, ``AからBまで``
``since A``, ``from A``, ``starting A``,     ``[start(A), None)``
``after A`` (``[end(A), None)``), ``A以降``
``until A``, ``till A``, ``through A``,      ``[None, end(A))``
``before A`` (``[None, start(A))``), ``Aまで``
``in A``, ``on A``, ``during A``, bare A     ``[start(A), end(A))``
``as of A``                                  the point ``start(A)`` (tasks)
==========================================  =========================================

``end(A)`` is the start of the next day, month or year after A at A's precision: "until
1998" holds through 31 December 1998.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from dateutil import parser as dateparser
from dateutil.relativedelta import relativedelta

_MONTHS = sorted({n for names in dateparser.parserinfo.MONTHS for n in names}, key=len, reverse=True)
_DAY = r"\d{1,2}(?:st|nd|rd|th)?"
_MON = "|".join(_MONTHS)
_YEAR = r"(?:1[0-9]{3}|20[0-9]{2})"
DATE_RE = re.compile(
    rf"(?<![0-9A-Za-z])(?:\d{{4}}-(?:0[1-9]|1[0-2])(?:-\d{{2}})?(?![\d])"
    rf"|(?:{_DAY}\s+)?(?:{_MON})\.?(?:\s+{_DAY}\s*,?)?\s+{_YEAR}"
    rf"|{_YEAR})(?![0-9A-Za-z])",
    re.IGNORECASE,
)
_JA_DATE = re.compile(r"(\d{4})年(?:(\d{1,2})月(?:(\d{1,2})日)?)?")
_RANGE_GAP = re.compile(r"^\s*(?:to|until|till|through|-|–|—|から)\s*$", re.IGNORECASE)
_AND_GAP = re.compile(r"^\s*and\s*$", re.IGNORECASE)
_START_WORDS = ("since", "from", "starting", "starting in", "beginning in", "effective", "after")
_END_WORDS = ("until", "till", "through", "before", "up to", "up until")
_NOW_WORDS = re.compile(r"\b(?:current|currently|now|today|present|at present|these days)\b|現在|現時点", re.IGNORECASE)
PRECISIONS = ("day", "month", "year")


@dataclass(frozen=True)
class Interval:
    """``[valid_from, valid_to)`` in UTC (``None``: open end) with the coarser precision of its ends."""

    valid_from: datetime | None
    valid_to: datetime | None
    precision: str
    kind: str = "point"  # point | range | start | end


@dataclass(frozen=True)
class DateMatch:
    start: int
    end: int
    begin: datetime
    after: datetime
    precision: str


def _ja_to_iso(text: str) -> str:
    """Rewrite ``2004年5月1日`` as ``2004-05-01`` (same length kept by padding with spaces)."""

    def sub(m: re.Match[str]) -> str:
        y, mo, d = m.group(1), m.group(2), m.group(3)
        iso = y if mo is None else f"{y}-{int(mo):02d}" if d is None else f"{y}-{int(mo):02d}-{int(d):02d}"
        return iso.ljust(len(m.group(0)))

    return _JA_DATE.sub(sub, text)


def parse_date(text: str) -> tuple[datetime, datetime, str] | None:
    """``(start, end exclusive, precision)`` of one date string, or None if dateutil cannot read it."""
    try:
        a = dateparser.parse(text, default=datetime(2000, 1, 1))
        b = dateparser.parse(text, default=datetime(2000, 2, 2))
    except (ValueError, OverflowError):
        return None
    if a.month != b.month:
        start = datetime(a.year, 1, 1, tzinfo=UTC)
        return start, start + relativedelta(years=1), "year"
    if a.day != b.day:
        start = datetime(a.year, a.month, 1, tzinfo=UTC)
        return start, start + relativedelta(months=1), "month"
    start = datetime(a.year, a.month, a.day, tzinfo=UTC)
    return start, start + timedelta(days=1), "day"


def find_dates(text: str) -> list[DateMatch]:
    """Every date in ``text`` with its span (Japanese dates included)."""
    norm = _ja_to_iso(text)
    out = []
    for m in DATE_RE.finditer(norm):
        parsed = parse_date(m.group(0).strip())
        if parsed:
            out.append(DateMatch(m.start(), m.start() + len(m.group(0).rstrip()), *parsed))
    return out


def _coarser(a: str, b: str) -> str:
    return a if PRECISIONS.index(a) >= PRECISIONS.index(b) else b


def _before(text: str, pos: int) -> str:
    return " ".join(text[max(0, pos - 24) : pos].lower().split())


def intervals(text: str) -> list[Interval]:
    """Intervals of the time expressions in ``text`` (see module table), in text order."""
    dates = find_dates(text)
    text = _ja_to_iso(text)
    out: list[Interval] = []
    i = 0
    while i < len(dates):
        d = dates[i]
        before = _before(text, d.start)
        after = text[d.end : d.end + 8].lstrip()
        gap = text[d.end : dates[i + 1].start] if i + 1 < len(dates) else ""
        if gap and (_RANGE_GAP.match(gap) or (before.endswith("between") and _AND_GAP.match(gap))):
            e = dates[i + 1]
            out.append(Interval(d.begin, e.after, _coarser(d.precision, e.precision), "range"))
            i += 2
            continue
        if before.endswith("after") or after.startswith("以降") or after.startswith("以来"):
            out.append(Interval(d.after if before.endswith("after") else d.begin, None, d.precision, "start"))
        elif any(before.endswith(w) for w in _START_WORDS) or after.startswith("から"):
            out.append(Interval(d.begin, None, d.precision, "start"))
        elif before.endswith("before"):
            out.append(Interval(None, d.begin, d.precision, "end"))
        elif any(before.endswith(w) for w in _END_WORDS) or after.startswith("まで"):
            out.append(Interval(None, d.after, d.precision, "end"))
        else:
            out.append(Interval(d.begin, d.after, d.precision, "point"))
        i += 1
    return out


def task_constraint(task: str, valid_time: datetime | None, now: datetime) -> tuple[Interval, str] | None:
    """The time a task asks about, and where it came from; None when it names no time.

    ``as of D`` → the instant D; other expressions → the span from the earliest start to the
    latest end of all of them; "current", "now", "today", "at present", 現在 → the instant
    ``valid_time`` (the pack's ``asOf.validTime``, default now); no phrase but an explicit
    ``asOf.validTime`` → that instant.
    """
    found = intervals(task)
    low = task.lower()
    m = re.search(r"\bas of\b", low)
    if m and found:
        d = find_dates(task[m.end() :])
        if d:
            return Interval(d[0].begin, d[0].begin + timedelta(microseconds=1), d[0].precision), "as of"
    if found:
        starts = [f.valid_from for f in found]
        ends = [f.valid_to for f in found]
        start = None if any(s is None for s in starts) else min(s for s in starts if s is not None)
        end = None if any(e is None for e in ends) else max(e for e in ends if e is not None)
        prec = found[0].precision
        for f in found[1:]:
            prec = _coarser(prec, f.precision)
        return Interval(start, end, prec, "range"), "task"
    if _NOW_WORDS.search(task):
        t = valid_time or now
        return Interval(t, t + timedelta(microseconds=1), "day"), "current"
    if valid_time is not None:
        return Interval(valid_time, valid_time + timedelta(microseconds=1), "day"), "asOf.validTime"
    return None
