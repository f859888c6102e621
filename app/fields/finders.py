"""Type-aware candidate finders: every value that could fill a field, with its exact span.

Each finder returns :class:`Candidate` s whose ``text[start:end]`` is the stated value:

- DATE: "January 6, 2012", "6th day of January, 2012", "6 January 2012", "1/6/2012",
  "2012-01-06"; normalised to ISO-8601 by python-dateutil (``dateutil.parser.parse`` with
  the day first only for ``DD.MM.YYYY``); impossible dates are dropped.
- DURATION: "two (2) years", "24 months", "one-year", "a period of eighteen months";
  number words (``one`` … ``ninety-nine``, ``a``/``an``) and digits; key ``{n}_{unit}``
  (``1_year``, ``3_years``, ``18_months``: the Kleister NDA form).
- MONEY: "$1,000,000", "US$ 2.5 million", "EUR 500", "500 dollars": ``{amount, currency}``
  (ISO 4217 code).
- NUMBER: digits with an optional unit word or ``%``: ``{value, unit}``.
- BOOLEAN: "yes"/"no"/"true"/"false" and ticked/empty check boxes (☒ ☑ / ☐).
- TEXT (entities): ``PLACE`` (US states, Canadian provinces and countries), ``ORG`` (capitalised
  words ending in a company suffix: Inc., LLC, Corporation, Ltd., …; every left boundary
  is a candidate) and ``NAME`` (maximal runs of 2–7 capitalised words: people, companies
  without a suffix). Keys are upper-cased with commas dropped and spaces collapsed.
"""

from __future__ import annotations

import re
from datetime import date

from dateutil import parser as dateparser

from cairn.app.fields.types import Candidate, FieldType

MONTHS = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|"
    r"Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)"
)
_ORD = r"(?:st|nd|rd|th)?"
_DATE_RE = re.compile(
    rf"\b(?:{MONTHS}\.?\s+\d{{1,2}}{_ORD}\s*,?\s+\d{{4}}"  # January 6, 2012
    rf"|\d{{1,2}}{_ORD}\s+(?:day\s+of\s+)?{MONTHS}\.?\s*,?\s+\d{{4}}"  # 6th day of January, 2012
    r"|\d{1,2}/\d{1,2}/(?:\d{4}|\d{2})"  # 1/6/2012
    r"|\d{4}-\d{2}-\d{2}"  # 2012-01-06
    r"|\d{1,2}\.\d{1,2}\.\d{4})\b",  # 06.01.2012 (day first)
    re.IGNORECASE,
)

_SMALL = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "a": 1, "an": 1,
}  # fmt: skip
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}
_WORD_NUM = r"(?:(?:twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)(?:[-\s](?:one|two|three|four|five|six|seven|eight|nine))?|zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|an?)"
_DURATION_RE = re.compile(
    rf"\b(?:(?P<word>{_WORD_NUM})(?:\s*\(\s*(?P<paren>\d+(?:\.\d+)?)\s*\))?|(?P<digits>\d+(?:\.\d+)?))"
    r"[\s-]*(?:\(\s*\d+(?:\.\d+)?\s*\)\s*)?(?P<unit>years?|months?|weeks?|days?|calendar\s+years?|calendar\s+months?)\b",
    re.IGNORECASE,
)

_CURRENCY = {"$": "USD", "us$": "USD", "usd": "USD", "€": "EUR", "eur": "EUR", "£": "GBP", "gbp": "GBP"}
_MONEY_RE = re.compile(
    r"(?P<cur>US\$|\$|€|£|\bUSD|\bEUR|\bGBP)\s?(?P<amt>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
    r"(?:\s*(?P<mult>million|billion|thousand)\b)?"
    r"|\b(?P<amt2>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)\s*(?P<mult2>million|billion|thousand)?\s*"
    r"(?P<cur2>dollars|USD|euros?|EUR|pounds sterling|GBP)\b",
    re.IGNORECASE,
)
_MULT = {"thousand": 1_000, "million": 1_000_000, "billion": 1_000_000_000}
_UNITS = (
    "percent|per cent|shares|employees|days|months|years|hours|miles|kilometers|km|kg|pounds|units|"
    "copies|pages|persons|people|members|customers|locations|stores|acres|square feet"
)
_NUMBER_RE = re.compile(
    rf"(?<![\w.,$€£])(?P<num>\d{{1,3}}(?:,\d{{3}})+(?:\.\d+)?|\d+(?:\.\d+)?)(?![\w]|[.,]\d)(?:\s?(?P<unit>%|(?:{_UNITS})\b))?",
    re.IGNORECASE,
)
_BOOL_RE = re.compile(r"\b(?P<w>yes|no|true|false)\b|(?P<box>[☒☑✓✔☐])", re.IGNORECASE)

US_STATES = ["Alabama", "Alaska", "Arizona", "Arkansas", "California", "Colorado", "Connecticut", "Delaware", "Florida", "Georgia", "Hawaii", "Idaho", "Illinois", "Indiana", "Iowa", "Kansas", "Kentucky", "Louisiana", "Maine", "Maryland", "Massachusetts", "Michigan", "Minnesota", "Mississippi", "Missouri", "Montana", "Nebraska", "Nevada", "Ohio", "Oklahoma", "Oregon", "Pennsylvania", "Tennessee", "Texas", "Utah", "Vermont", "Virginia", "Washington", "Wisconsin", "Wyoming"] + [
    "New Hampshire", "New Jersey", "New Mexico", "New York", "North Carolina", "North Dakota",
    "Rhode Island", "South Carolina", "South Dakota", "West Virginia", "District of Columbia",
]  # fmt: skip
OTHER_PLACES = [
    "Ontario", "Quebec", "British Columbia", "Alberta", "England", "England and Wales", "Scotland",
    "Ireland", "United Kingdom", "Canada", "Israel", "Germany", "France", "Switzerland", "Netherlands",
    "Japan", "China", "Hong Kong", "Singapore", "India", "Australia", "Sweden", "Norway", "Denmark",
    "Finland", "Italy", "Spain", "Luxembourg", "Bermuda", "Cayman Islands", "Mexico", "Brazil", "Korea",
    "Taiwan", "Belgium", "Austria", "Puerto Rico",
]  # fmt: skip
_PLACE_RE = re.compile(
    r"\b(?:" + "|".join(re.escape(p) for p in sorted(US_STATES + OTHER_PLACES, key=len, reverse=True)) + r")\b",
    re.IGNORECASE,
)

ORG_SUFFIXES = (
    r"Inc\.?|Incorporated|Corp\.?|Corporation|Company|Co\.|LLC|L\.L\.C\.|Ltd\.?|Limited|L\.?P\.|LP|LLP|L\.L\.P\.|"
    r"PLC|plc|N\.V\.|S\.A\.|AG|GmbH|ASA|AB|B\.V\.|Bancorp|Holdings|Trust|Bank|Partners|Group"
)
_CAP = r"(?:[A-Z0-9][\w¢&'’.\-]*)"
_CONNECT = r"(?:and|of|for|&|de|the)"
_ORG_RE = re.compile(
    rf"\b(?P<body>{_CAP}(?:\s+(?:{_CONNECT}\s+)?{_CAP}){{0,7}}?),?\s+(?P<suffix>(?i:{ORG_SUFFIXES}))(?![\w])(?:,?\s+(?i:Inc\.?|LLC|Ltd\.?))?"
)
_NAME_RE = re.compile(
    r"\b(?:[A-Z][\w¢'’\-]*\.?|[A-Z]\.)(?:[ \t]+(?:(?:and|of|&)[ \t]+)?(?:[A-Z][\w¢'’\-]*\.?|[A-Z]\.)){1,6}"
)
_SPACE = re.compile(r"\s+")


_KEY_WORDS = [
    (re.compile(r"\bINCORPORATED\b|\bINC\b(?!\.)"), "INC."),
    (re.compile(r"\bLIMITED\b|\bLTD\b(?!\.)"), "LTD."),
    (re.compile(r"\bCORP\b(?!\.)"), "CORP."),
    (re.compile(r"&"), " AND "),
]


def text_key(raw: str) -> str:
    """The comparison key of a TEXT value: upper-cased, commas dropped, whitespace collapsed,
    surrounding quotes/brackets and trailing commas/semicolons stripped, company suffixes in
    one form (Incorporated/Inc → INC., Limited/Ltd → LTD., & → AND; Kleister NDA's form)."""
    s = _SPACE.sub(" ", raw.replace(",", " ")).strip(" \"'“”‘’()[]:;").upper()
    for pattern, repl in _KEY_WORDS:
        s = pattern.sub(repl, s)
    return _SPACE.sub(" ", s).strip()


def _word_number(word: str) -> float | None:
    w = word.lower().replace("-", " ").split()
    if len(w) == 1:
        return _SMALL.get(w[0], _TENS.get(w[0]))
    if len(w) == 2 and w[0] in _TENS and w[1] in _SMALL:
        return _TENS[w[0]] + _SMALL[w[1]]
    return None


def duration_key(amount: float, unit: str) -> str:
    """``3_years``, ``1_year``, ``18_months``, ``55.5_months`` (Kleister NDA's form)."""
    n = int(amount) if float(amount).is_integer() else amount
    base = unit.rstrip("s")
    return f"{n}_{base if n == 1 else base + 's'}"


def find_dates(text: str) -> list[Candidate]:
    """DATE candidates (see the module docstring); value and key are ``YYYY-MM-DD``."""
    out = []
    for m in _DATE_RE.finditer(text):
        raw = m.group(0)
        clean = re.sub(r"(\d)(st|nd|rd|th)\b", r"\1", raw, flags=re.IGNORECASE)
        clean = re.sub(r"\bday\s+of\b", "", clean, flags=re.IGNORECASE)
        try:
            d = dateparser.parse(clean, dayfirst=bool(re.fullmatch(r"\d{1,2}\.\d{1,2}\.\d{4}", raw)))
        except (ValueError, OverflowError):
            continue
        if not 1900 <= d.year <= 2100:
            continue
        iso = date(d.year, d.month, d.day).isoformat()
        out.append(Candidate("DATE", m.start(), m.end(), iso, iso))
    return out


MAX_DURATION_AMOUNT = 10_000
"""Largest duration amount read as a value (a contract term of 10,000 years is already absurd)."""


def find_durations(text: str) -> list[Candidate]:
    """DURATION candidates; value ``{amount, unit}``, key ``3_years``."""
    out = []
    for m in _DURATION_RE.finditer(text):
        if m.group("paren"):
            amount: float | None = float(m.group("paren"))
        elif m.group("digits"):
            amount = float(m.group("digits"))
        else:
            amount = _word_number(m.group("word"))
        if amount is None or not 0 < amount <= MAX_DURATION_AMOUNT:  # also refuses inf from 400-digit numbers
            continue
        unit = m.group("unit").lower().split()[-1]
        unit = unit if unit.endswith("s") else unit + "s"
        value = {"amount": int(amount) if float(amount).is_integer() else amount, "unit": unit}
        out.append(Candidate("DURATION", m.start(), m.end(), value, duration_key(amount, unit)))
    return out


def find_money(text: str) -> list[Candidate]:
    """MONEY candidates; value ``{amount, currency}`` (amount a float, currency ISO 4217)."""
    out = []
    for m in _MONEY_RE.finditer(text):
        cur = (m.group("cur") or m.group("cur2") or "").lower()
        currency = _CURRENCY.get(cur) or (
            "USD" if cur.startswith("dollar") else "EUR" if cur.startswith("euro") else "GBP"
        )
        amt = float((m.group("amt") or m.group("amt2")).replace(",", ""))
        mult = (m.group("mult") or m.group("mult2") or "").lower()
        amount = amt * _MULT.get(mult, 1)
        value = {"amount": amount, "currency": currency}
        out.append(Candidate("MONEY", m.start(), m.end(), value, f"{amount:g} {currency}"))
    return out


def find_numbers(text: str) -> list[Candidate]:
    """NUMBER candidates; value ``{value, unit}`` (unit a word, ``%`` or null)."""
    out = []
    for m in _NUMBER_RE.finditer(text):
        num = float(m.group("num").replace(",", ""))
        unit = m.group("unit")
        unit = None if unit is None else ("%" if unit.lower() in ("%", "percent", "per cent") else unit.lower())
        value = {"value": int(num) if num.is_integer() else num, "unit": unit}
        out.append(Candidate("NUMBER", m.start(), m.end(), value, f"{num:g}{' ' + unit if unit else ''}"))
    return out


def find_booleans(text: str) -> list[Candidate]:
    """BOOLEAN candidates: yes/no/true/false and check boxes (☒ ☑ ✓ ✔ true, ☐ false)."""
    out = []
    for m in _BOOL_RE.finditer(text):
        tok = (m.group("w") or m.group("box")).lower()
        value = tok in ("yes", "true", "☒", "☑", "✓", "✔")
        out.append(Candidate("BOOLEAN", m.start(), m.end(), value, "TRUE" if value else "FALSE"))
    return out


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while end > start and text[end - 1] in " ,;:\t\n":
        end -= 1
    return start, end


def find_entities(text: str) -> list[Candidate]:
    """TEXT candidates: PLACE, ORG (every left boundary of a suffixed company name) and NAME
    (maximal capitalised runs of 2–7 words); value = the span with whitespace collapsed."""
    out: list[Candidate] = []
    for m in _PLACE_RE.finditer(text):
        raw = m.group(0)
        if not raw[0].isupper():
            continue
        value = _SPACE.sub(" ", raw)
        out.append(Candidate("PLACE", m.start(), m.end(), value, text_key(value)))
    seen: set[tuple[int, int]] = set()
    for m in _ORG_RE.finditer(text):
        body_start, end = m.start("body"), m.end()
        # every left boundary: the words of the body, from the nearest to the farthest
        starts = [body_start] + [body_start + w.start() + 1 for w in re.finditer(r"\s(?=\S)", m.group("body"))]
        for s in starts:
            if text[s].islower() or text[s] in "&":
                continue
            s, e = _trim(text, s, end)
            if (s, e) in seen:
                continue
            seen.add((s, e))
            value = _SPACE.sub(" ", text[s:e])
            out.append(Candidate("ORG", s, e, value, text_key(value)))
    for m in _NAME_RE.finditer(text):
        s, e = _trim(text, m.start(), m.end())
        if (s, e) in seen or e - s < 4:
            continue
        value = _SPACE.sub(" ", text[s:e])
        if value.isupper() and len(value) > 60:
            continue
        out.append(Candidate("NAME", s, e, value, text_key(value)))
    return out


FINDERS = {
    FieldType.DATE: find_dates,
    FieldType.DURATION: find_durations,
    FieldType.MONEY: find_money,
    FieldType.NUMBER: find_numbers,
    FieldType.BOOLEAN: find_booleans,
    FieldType.TEXT: find_entities,
}


def find_candidates(text: str, field_type: FieldType) -> list[Candidate]:
    """Every candidate of ``field_type`` in ``text``, in span order (start, then end)."""
    return sorted(FINDERS[field_type](text), key=lambda c: (c.start, c.end, c.kind))


def verify_span(text: str, start: int, end: int, field_type: FieldType, key: str) -> bool:
    """True when ``text[start:end]`` still states the value ``key``: the finder of
    ``field_type`` run on the span alone yields a candidate covering the whole span with that
    key (the live check of a citation)."""
    if not 0 <= start < end <= len(text):
        return False
    span = text[start:end]
    return any(c.key == key and c.start == 0 and c.end == len(span) for c in FINDERS[field_type](span))
