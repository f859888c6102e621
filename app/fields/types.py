"""Learned-field types (SPEC §5): a field's definition, a candidate value found in a text, and
an extracted value. Pure data, no database."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from enum import Enum
from typing import Any


class FieldType(str, Enum):
    """A field's value type. DATE → ISO-8601 ``YYYY-MM-DD``; MONEY → ``{amount, currency}``;
    NUMBER → ``{value, unit}``; DURATION → ``{amount, unit}`` (unit years/months/weeks/days);
    BOOLEAN → true/false; TEXT → the span's text, whitespace collapsed."""

    NUMBER = "NUMBER"
    MONEY = "MONEY"
    DATE = "DATE"
    BOOLEAN = "BOOLEAN"
    TEXT = "TEXT"
    DURATION = "DURATION"


class Multiplicity(str, Enum):
    """ONE: at most one value per document; MANY: any number (e.g. the parties)."""

    ONE = "ONE"
    MANY = "MANY"


@dataclass(frozen=True)
class FieldSpec:
    """A field definition: ``name`` (``[a-z][a-z0-9_]{0,63}``), type, description (free text the
    zero-shot scorer reads), multiplicity and optional example values (normalised keys)."""

    name: str
    type: FieldType
    description: str = ""
    multiplicity: Multiplicity = Multiplicity.ONE
    examples: tuple[str, ...] = ()


@dataclass(frozen=True)
class Candidate:
    """A typed value found at ``text[start:end]``.

    ``kind`` is the finder that produced it (``DATE``, ``DURATION``, ``MONEY``, ``NUMBER``,
    ``BOOLEAN``, ``PLACE``, ``ORG``, ``NAME``); ``value`` the normalised JSON value; ``key`` a
    string that compares equal for equal values (ISO date, ``3_years``, ``NIKE INC.``)."""

    kind: str
    start: int
    end: int
    value: Any
    key: str


@dataclass
class Extracted:
    """A value chosen by the ranker for one field of one document: its normalised value, key,
    score (probability, 0–1) and every span that states it (the first is the citation)."""

    field: str
    value: Any
    key: str
    score: float
    spans: list[tuple[int, int]] = dataclasses.field(default_factory=list)  # ``field`` is an attribute here
