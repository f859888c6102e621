"""Time-scoped statements from a version's text (offline, no model).

A statement is one sentence (split at ``. ! ? 。 ！ ？`` and line breaks) that holds a time
expression (:mod:`app.temporal.timex`; one statement per expression) or assigns a role
(below; then its interval is the document version's valid interval, ``time_source =
"document"``). Its subject is the document's title (entity pages: the statement is about
the page's entity), so two subjects never share a statement.

Role assignment: a role noun of :data:`ROLES` after a cue (``appointed``, ``named``,
``became``, ``served as``, ``was``, ``as`` …) — "Jane Doe was appointed CFO" assigns
``chief financial officer``; "the CFO also chairs the audit committee" assigns nothing.
An appointment-like cue with a point in time ("appointed CFO in 2019") opens the interval
at that point ("since 2019"). The holder is the first capitalised name in the sentence
other than the subject.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from cairn.app.temporal.timex import Interval, intervals

ROLES = {
    "ceo": "chief executive officer",
    "chief executive officer": "chief executive officer",
    "chief executive": "chief executive officer",
    "cfo": "chief financial officer",
    "chief financial officer": "chief financial officer",
    "coo": "chief operating officer",
    "chief operating officer": "chief operating officer",
    "cto": "chief technology officer",
    "chief technology officer": "chief technology officer",
    "chairman": "chair",
    "chairwoman": "chair",
    "chairperson": "chair",
    "chair": "chair",
    "president": "president",
    "vice president": "vice president",
    "prime minister": "prime minister",
    "governor": "governor",
    "mayor": "mayor",
    "head coach": "head coach",
    "manager": "manager",
    "director": "director",
    "general manager": "general manager",
    "secretary": "secretary",
    "treasurer": "treasurer",
    "ambassador": "ambassador",
    "captain": "captain",
}
_ROLE_ALT = "|".join(sorted((re.escape(r) for r in ROLES), key=len, reverse=True))
_EVENT_CUES = (
    r"appointed|named|elected|became|becomes|hired as|promoted to|took over as|joined as|succeeded \w+(?:\s\w+)? as"
)
_STATE_CUES = r"serves as|served as|serving as|remains|remained|was|is|as"
_ROLE_RE = re.compile(
    rf"\b(?P<cue>{_EVENT_CUES}|{_STATE_CUES})\s+(?:(?:the|a|an|its|their|his|her|new|interim|acting)\s+)*(?P<role>{_ROLE_ALT})\b",
    re.IGNORECASE,
)
_EVENT_RE = re.compile(
    r"\b(?:appointed|named|elected|became|becomes|hired|promoted|took over|joined|succeeded)\b", re.IGNORECASE
)
_NAME_RE = re.compile(r"\b([A-Z][a-z]+(?:\s+(?:[A-Z]\.|[A-Z][a-z]+))+)")
_SENT_RE = re.compile(r"[^.!?。！？\n]+(?:[.!?。！？]+|$)")


@dataclass(frozen=True)
class Statement:
    """One statement: span ``[start, end)`` in the text, its interval, role and holder."""

    start: int
    end: int
    text: str
    interval: Interval
    relation: str
    holder: str
    time_source: str  # text | document


def subject_key(subject: str) -> str:
    """Normalised subject: lower case, runs of non-word characters as one space."""
    return " ".join(re.sub(r"[\W_]+", " ", subject.lower()).split())[:200]


def subject_base(subject: str) -> str:
    """:func:`subject_key` of the subject without a trailing bracketed disambiguation."""
    return subject_key(re.sub(r"\s*[(（][^()（）]*[)）]\s*$", "", subject)) or subject_key(subject)


def sentences(text: str) -> list[tuple[int, int]]:
    """Sentence spans, trimmed of surrounding whitespace (empty ones dropped)."""
    out = []
    for m in _SENT_RE.finditer(text):
        a, b = m.start(), m.end()
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        if b > a:
            out.append((a, b))
    return out


def extract(
    text: str, subject: str, version_valid_from: datetime | None, version_valid_to: datetime | None
) -> list[Statement]:
    """Statements of one version's text (module doc), in text order."""
    skey = subject_key(subject)
    out: list[Statement] = []
    for a, b in sentences(text):
        sent = text[a:b]
        m = _ROLE_RE.search(sent)
        relation = ROLES[m.group("role").lower()] if m else ""
        event = bool(m and _EVENT_RE.search(sent))
        holder = ""
        if relation:
            for n in _NAME_RE.finditer(sent):
                if subject_key(n.group(1)) not in skey and skey not in subject_key(n.group(1)):
                    holder = n.group(1)
                    break
        found = intervals(sent)
        if not found and relation:
            iv = Interval(version_valid_from, version_valid_to, "day", "range")
            out.append(Statement(a, b, sent, iv, relation, holder, "document"))
            continue
        for iv in found:
            if relation and event and iv.kind == "point":
                iv = Interval(iv.valid_from, None, iv.precision, "start")
            out.append(Statement(a, b, sent, iv, relation, holder, "text"))
    return out
