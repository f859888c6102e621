"""The GRAPH leg of context packs: statements whose interval matches the task's time.

:func:`temporal_leg` reads the task's time constraint (:func:`app.temporal.timex.task_constraint`:
"in 2005", "between 2004 and 2006", "current", "as of …", or an explicit ``asOf.validTime``).
Without one the leg steps aside (a note says so). With one it ranks the statements (of each
document's as-of version) about subjects the task names (the normalised title appears in
the task) or of the documents of the top BM25 passages, keeping those whose interval
overlaps the constraint (only the named subjects' statements when the task names one; else
those of the top :data:`TOP_DOCS_WITHOUT_SUBJECT` BM25 documents), by::

    score = [subject named in the task] + IoU(interval, constraint) + 0.5 × (share of the
            task's words found in the statement)

(open ends clipped 30 years beyond the constraint; ties by document id, offset). The
ranked *passages* holding those statements join the pack's fusion as leg ``graph``; the best
statement of each becomes a ``FACT`` item (:mod:`app.packs.graph_hook`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import select
from sqlmodel import col

from cairn.app.core.models import Passage
from cairn.app.governance import DatabasePort, Principal
from cairn.app.temporal.extract import subject_key
from cairn.app.temporal.service import Fact, visible_facts
from cairn.app.temporal.timex import Interval, task_constraint

MAX_RANKED = 200
TOP_DOCS_WITHOUT_SUBJECT = 3
"""When the task names no subject, statements come from the documents of this many best BM25 passages."""
_SPAN = timedelta(days=365 * 30)
_WORD = re.compile(r"\w+")
_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "the",
        "of",
        "in",
        "on",
        "at",
        "to",
        "for",
        "from",
        "by",
        "with",
        "as",
        "is",
        "was",
        "were",
        "be",
        "been",
        "which",
        "who",
        "what",
        "when",
        "where",
        "whom",
        "did",
        "do",
        "does",
        "between",
        "since",
        "until",
        "during",
        "that",
        "this",
        "it",
        "its",
        "his",
        "her",
        "their",
        "he",
        "she",
        "they",
    ]
)


@dataclass
class GraphLeg:
    """Result of the leg: ranked passage ids for the pack's fusion, the best statement per passage, notes."""

    ranked: list[str] = field(default_factory=list)
    facts: dict[str, tuple[Fact, float]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    constraint: Interval | None = None


def _iou(f: Fact, c: Interval) -> float:
    lo_c = c.valid_from or ((c.valid_to - _SPAN) if c.valid_to else None)
    hi_c = c.valid_to or ((c.valid_from + _SPAN) if c.valid_from else None)
    if lo_c is None or hi_c is None:
        return 0.0
    lo_f = f.valid_from or (lo_c - _SPAN)
    hi_f = f.valid_to or (hi_c + _SPAN)
    inter = (min(hi_f, hi_c) - max(lo_f, lo_c)).total_seconds()
    if inter <= 0:
        return 0.0
    union = (max(hi_f, hi_c) - min(lo_f, lo_c)).total_seconds()
    return inter / union if union > 0 else 0.0


def _ngrams(key: str, n_max: int = 6) -> list[str]:
    toks = key.split()
    out = {" ".join(toks[i : i + n]) for n in range(1, n_max + 1) for i in range(len(toks) - n + 1)}
    return sorted(out)[:400]


async def temporal_leg(
    services: DatabasePort,
    principal: Principal,
    task: str,
    *,
    explicit_valid_time: datetime | None,
    valid_time: datetime,
    system_time: datetime,
    collection_ids: list[str] | None,
    document_ids: list[str] | None,
    lexical_ids: list[str] | None,
) -> GraphLeg:
    """Run the leg (module doc). ``lexical_ids``: the BM25 leg's passage ids, best first."""
    leg = GraphLeg()
    found = task_constraint(task, explicit_valid_time, valid_time)
    if found is None:
        leg.notes.append(
            "GRAPH: the task names no time ('in 2005', 'between 2004 and 2006', 'current', 'as of …') and "
            "asOf.validTime is not set; the temporal leg stepped aside"
        )
        return leg
    constraint, source = found
    leg.constraint = constraint
    key = subject_key(task)
    grams = _ngrams(key)
    top_docs: list[str] = []
    if lexical_ids:
        async with services.db.session() as s:
            rows = await s.execute(
                select(col(Passage.id), col(Passage.document_id)).where(col(Passage.id).in_(lexical_ids[:30]))
            )
            by_id = dict(rows.all())
        top_docs = list(dict.fromkeys(by_id[p] for p in lexical_ids[:30] if p in by_id))
    if document_ids:
        top_docs = [d for d in top_docs if d in set(document_ids)] or list(document_ids)
    facts = await visible_facts(
        services,
        principal,
        subject_keys=grams,
        subject_bases=grams,
        document_ids=top_docs,
        valid_time=valid_time,
        system_time=system_time,
        collection_ids=collection_ids,
    )
    if document_ids:
        facts = [f for f in facts if f.document_id in set(document_ids)]
    gram_set = set(grams)
    named = [f for f in facts if subject_key(f.subject) in gram_set or f.subject_base in gram_set]
    if named:  # the task names its subject: other documents' statements are noise
        facts = named
    else:  # else the documents of the best BM25 passages stand in for the subject
        keep = set(top_docs[:TOP_DOCS_WITHOUT_SUBJECT])
        facts = [f for f in facts if f.document_id in keep]
    words = {w for w in _WORD.findall(task.lower()) if w not in _STOP and not w.isdigit()}
    scored: list[tuple[float, Fact]] = []
    for f in facts:
        iou = _iou(f, constraint)
        if iou <= 0 or f.passage_id is None:
            continue
        fw = set(_WORD.findall(f.text.lower()))
        share = len(words & fw) / len(words) if words else 0.0
        named_here = subject_key(f.subject) in gram_set or f.subject_base in gram_set
        score = (1.0 if named_here else 0.0) + iou + 0.5 * share
        scored.append((score, f))
    scored.sort(key=lambda x: (-x[0], x[1].document_id, x[1].start, x[1].id))
    for score, f in scored:
        pid = f.passage_id
        if pid is not None and pid not in leg.facts:
            leg.facts[pid] = (f, round(score, 6))
            leg.ranked.append(pid)
            if len(leg.ranked) >= MAX_RANKED:
                break
    frm = constraint.valid_from.date().isoformat() if constraint.valid_from else "…"
    to = constraint.valid_to.date().isoformat() if constraint.valid_to else "…"
    leg.notes.append(
        f"GRAPH: time constraint [{frm}, {to}) from {source}; {len(scored)} statements match "
        f"({len(leg.ranked)} passages in the temporal leg)"
    )
    return leg
