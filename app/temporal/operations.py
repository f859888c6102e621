"""Temporal reads: ``timeline`` and ``currentFacts``, one function per operation,
``fn(services, principal, request)``; each validates its request and reads through
:func:`app.temporal.service.visible_facts` (which opens its own session, after indexing the
workspace's new versions).

``services`` is the process's :class:`app.context.Services`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from cairn.app.core.errors import BadInput
from cairn.app.core.ids import utcnow
from cairn.app.core.text_rules import require_storable
from cairn.app.governance import Principal, ServicesPort
from cairn.app.temporal.extract import subject_key
from cairn.app.temporal.service import FAR_FUTURE, FAR_PAST, Fact, visible_facts

MAX_LIMIT = 500


@dataclass(frozen=True)
class TemporalRead:
    """``timeline`` / ``currentFacts`` input (validated by :func:`validate_read`)."""

    subject: str
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    valid_time: datetime | None = None
    system_time: datetime | None = None
    limit: int = 100


def validate_read(req: TemporalRead) -> None:
    """Raises BadInput naming ``subject``, ``from``/``to``, ``asOf.*`` or ``limit``."""
    require_storable(req.subject, "subject")
    if not subject_key(req.subject):
        raise BadInput("subject must contain letters or digits (e.g. a document title)", field="subject")
    if len(req.subject) > 200:
        raise BadInput("subject is over 200 characters", field="subject", limit=200)
    for value, name in (
        (req.valid_from, "from"),
        (req.valid_to, "to"),
        (req.valid_time, "asOf.validTime"),
        (req.system_time, "asOf.systemTime"),
    ):
        if value is not None and value.tzinfo is None:
            raise BadInput(f"{name} needs a timezone (e.g. 2024-07-01T00:00:00Z)", field=name)
    if req.valid_from and req.valid_to and req.valid_to <= req.valid_from:
        raise BadInput("to must be after from", field="to")
    if not 1 <= req.limit <= MAX_LIMIT:
        raise BadInput(f"limit must be 1–{MAX_LIMIT} (got {req.limit})", field="limit", limit=f"1-{MAX_LIMIT}")


def _times(req: TemporalRead) -> tuple[datetime, datetime]:
    now = utcnow()
    return req.valid_time or now, min(req.system_time or now, now)


def _overlaps(f: Fact, a: datetime | None, b: datetime | None) -> bool:
    return (f.valid_from or FAR_PAST) < (b or FAR_FUTURE) and (a or FAR_PAST) < (f.valid_to or FAR_FUTURE)


async def timeline(services: ServicesPort, principal: Principal, req: TemporalRead) -> list[Fact]:
    """Statements about ``subject`` whose interval overlaps ``[from, to)``, ordered by time.

    Order: validFrom (open first), validTo (open last), document id, offset. ``asOf`` picks
    the document versions (as for every read); at most ``limit`` statements.
    """
    validate_read(req)
    vt, st = _times(req)
    facts = await visible_facts(
        services, principal, subject_keys=[subject_key(req.subject)], document_ids=None, valid_time=vt, system_time=st
    )
    facts = [f for f in facts if _overlaps(f, req.valid_from, req.valid_to)]
    facts.sort(key=lambda f: (f.valid_from or FAR_PAST, f.valid_to or FAR_FUTURE, f.document_id, f.start, f.id))
    return facts[: req.limit]


async def current_facts(services: ServicesPort, principal: Principal, req: TemporalRead) -> list[Fact]:
    """What holds at ``asOf.validTime`` (default now) about ``subject``: per role the latest
    statement whose interval contains that time (``validFrom`` = since when), then each
    role-less statement that holds then. Ordered by relation, then validFrom (newest first)."""
    validate_read(req)
    vt, st = _times(req)
    facts = await visible_facts(
        services, principal, subject_keys=[subject_key(req.subject)], document_ids=None, valid_time=vt, system_time=st
    )
    holding = [f for f in facts if _overlaps(f, vt, vt + timedelta(microseconds=1))]
    best: dict[str, Fact] = {}
    rest: list[Fact] = []
    for f in holding:
        if not f.relation:
            rest.append(f)
        elif f.relation not in best or (f.valid_from or FAR_PAST, f.id) > (
            best[f.relation].valid_from or FAR_PAST,
            best[f.relation].id,
        ):
            best[f.relation] = f
    out = [best[k] for k in sorted(best)]
    rest.sort(key=lambda f: (-(f.valid_from or FAR_PAST).timestamp(), f.document_id, f.start, f.id))
    return (out + rest)[: req.limit]
