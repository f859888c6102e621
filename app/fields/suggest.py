"""Field suggestions from the documents themselves: recurring ``Label: value`` lines.

A line ``Label: value`` (label 1–5 words, starting with a letter, value non-empty, the
line ≤ 200 characters) found in at least 2 documents (and 20 % of them when there are
more than 10) suggests a field named after the label (``effective_date`` from "Effective
Date:"). Its type is the type most of its values parse as (DATE, MONEY, DURATION,
NUMBER, BOOLEAN; else TEXT). Suggestions are never applied: an editor defines the fields.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from cairn.app.fields.finders import FINDERS
from cairn.app.fields.types import FieldType

_LINE = re.compile(
    r"^[ \t]*(?P<label>[A-Za-z][A-Za-z0-9 '’&/()-]{0,48}?)[ \t]*:[ \t]*(?P<value>\S.{0,180}?)[ \t]*$", re.M
)
_TYPES = (FieldType.DATE, FieldType.MONEY, FieldType.DURATION, FieldType.NUMBER, FieldType.BOOLEAN)


@dataclass(frozen=True)
class Suggestion:
    """A suggested field: name, type, the label as written, documents it appears in, up to 3
    example values."""

    name: str
    type: FieldType
    label: str
    documents: int
    examples: tuple[str, ...]


def field_name(label: str) -> str:
    """``Effective Date`` → ``effective_date`` (lower case, non-alphanumerics → ``_``, ≤ 64)."""
    name = re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")
    if not name or not name[0].isalpha():
        name = "f_" + name
    return name[:64]


def _type_of(values: Sequence[str]) -> FieldType:
    votes: Counter[FieldType] = Counter()
    for v in values:
        for t in _TYPES:
            hits = FINDERS[t](v)
            if hits and (hits[0].end - hits[0].start) >= 0.6 * len(v.strip()):
                votes[t] += 1
                break
    if votes:
        t, n = votes.most_common(1)[0]
        if n * 2 > len(values):
            return t
    return FieldType.TEXT


def suggest(texts: Sequence[str], existing: Sequence[str] = (), limit: int = 20) -> list[Suggestion]:
    """Suggestions from ``texts`` (one per document), most documents first, leaving out names
    in ``existing``."""
    seen: dict[str, set[int]] = defaultdict(set)
    labels: dict[str, str] = {}
    values: dict[str, list[str]] = defaultdict(list)
    for i, text in enumerate(texts):
        for m in _LINE.finditer(text):
            label = " ".join(m.group("label").split())
            if len(label.split()) > 5:
                continue
            name = field_name(label)
            seen[name].add(i)
            labels.setdefault(name, label)
            values[name].append(m.group("value"))
    need = max(2, int(0.2 * len(texts)) if len(texts) > 10 else 2)
    out = [
        Suggestion(name, _type_of(values[name]), labels[name], len(docs), tuple(dict.fromkeys(values[name]))[:3])
        for name, docs in seen.items()
        if len(docs) >= need and name not in existing
    ]
    out.sort(key=lambda s: (-s.documents, s.name))
    return out[:limit]
