"""Temporal graph reads (scope context:read): ``timeline`` and ``currentFacts``."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import strawberry

from cairn.app import temporal as tm
from cairn.app.governance import Governed, Principal
from cairn.resolvers.packs import AsOfInput, Citation, FactInterval, TimePrecision
from cairn.resolvers.types import Info


@strawberry.type(description="A time-scoped statement from a document, cited, with its interval.")
class TemporalFact:
    id: strawberry.ID
    subject: str = strawberry.field(description="The entity it is about: its document's title.")
    relation: str | None = strawberry.field(
        description="The role it assigns (e.g. 'chief financial officer'); null: no role (an event or other fact)."
    )
    holder: str | None = strawberry.field(description="Who holds the role, as named in the text.")
    text: str = strawberry.field(description="The statement; equals the cited version text [start:end].")
    citation: Citation
    interval: FactInterval = strawberry.field(
        description="As read: an open end is closed by the next statement giving the same role to another holder."
    )
    since: datetime | None = strawberry.field(description="= interval.validFrom.")
    time_source: str = strawberry.field(
        description="TEXT: parsed from the sentence; DOCUMENT: the sentence names no time, so its version's validity."
    )
    ended_by: strawberry.ID | None = strawberry.field(description="The statement that ended this one, if any.")


def to_fact(f: tm.Fact) -> TemporalFact:
    """Service fact → GraphQL fact."""
    return TemporalFact(
        id=strawberry.ID(f.id),
        subject=f.subject,
        relation=f.relation or None,
        holder=f.holder or None,
        text=f.text,
        citation=Citation(
            document_id=strawberry.ID(f.document_id),
            version_id=strawberry.ID(f.version_id),
            passage_id=strawberry.ID(f.passage_id) if f.passage_id is not None else None,
            start=f.start,
            end=f.end,
            sha256=f.sha256,
            external_id=f.external_id,
            document_title=f.document_title,
            collection_id=strawberry.ID(f.collection_id),
            collection_name=f.collection_name,
        ),
        interval=FactInterval(
            valid_from=f.valid_from, valid_to=f.valid_to, precision=TimePrecision(f.precision.upper())
        ),
        since=f.valid_from,
        time_source=f.time_source.upper(),
        ended_by=strawberry.ID(f.ended_by) if f.ended_by is not None else None,
    )


def _read(
    subject: str, from_: datetime | None, to: datetime | None, as_of: AsOfInput | None, limit: int
) -> tm.TemporalRead:
    a = as_of or AsOfInput()
    return tm.TemporalRead(subject, from_, to, a.valid_time, a.system_time, limit)


def _validate_timeline(
    subject: str,
    from_: datetime | None = None,
    to: datetime | None = None,
    as_of: AsOfInput | None = None,
    limit: int = 100,
) -> None:
    tm.validate_read(_read(subject, from_, to, as_of, limit))


def _validate_current(subject: str, as_of: AsOfInput | None = None, limit: int = 100) -> None:
    tm.validate_read(_read(subject, None, None, as_of, limit))


@strawberry.type
class TemporalQuery:
    @strawberry.field(
        description="Statements about a subject (a document title) whose interval overlaps [from, to), ordered by time, each cited (scope context:read). asOf picks the document versions read.",
        extensions=[Governed("timeline", validate=_validate_timeline)],
    )
    async def timeline(
        self,
        info: Info,
        subject: str,
        principal: Principal,
        from_: Annotated[datetime | None, strawberry.argument(name="from")] = None,
        to: datetime | None = None,
        as_of: AsOfInput | None = None,
        limit: int = 100,
    ) -> list[TemporalFact]:
        facts = await tm.timeline(info.context.services, principal, _read(subject, from_, to, as_of, limit))
        return [to_fact(f) for f in facts]

    @strawberry.field(
        description="What holds about a subject at asOf.validTime (default now): per role the latest statement and since when, then role-less statements that hold then (scope context:read).",
        extensions=[Governed("currentFacts", validate=_validate_current)],
    )
    async def current_facts(
        self, info: Info, subject: str, principal: Principal, as_of: AsOfInput | None = None, limit: int = 100
    ) -> list[TemporalFact]:
        facts = await tm.current_facts(info.context.services, principal, _read(subject, None, None, as_of, limit))
        return [to_fact(f) for f in facts]
