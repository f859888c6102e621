"""Context gaps (issue 16): ``reportContextGap`` (scope gaps:report; members too) and
``contextGaps`` (editors and above); their resolution (issue 36): ``resolveContextGap`` (the gap
becomes a verified answer or a definition of a set) and ``dismissContextGap`` (editors and
above). Rules in :mod:`app.gaps`."""

from __future__ import annotations

import enum
from datetime import datetime

import strawberry

from cairn.app import contextsets as cs
from cairn.app import gaps
from cairn.app.governance import Governed, Principal
from cairn.resolvers.contextsets import DefinitionInput, VerifiedAnswerInput
from cairn.resolvers.types import Info


@strawberry.enum(description="OPEN until an editor resolves it (RESOLVED: it became a set entry) or dismisses it.")
class ContextGapStatus(enum.Enum):
    OPEN = "OPEN"
    RESOLVED = "RESOLVED"
    DISMISSED = "DISMISSED"


@strawberry.input(description="What context was missing for a task (task 1–4,000 characters, missing 1–2,000).")
class ContextGapInput:
    task: str = strawberry.field(description="The task or question the agent worked on, 1–4,000 characters.")
    missing: str = strawberry.field(description="What was missing or wrong in the context, 1–2,000 characters.")
    pack_id: strawberry.ID | None = strawberry.field(default=None, description="The pack it concerns (≤ 64).")
    trace_id: str | None = strawberry.field(default=None, description="The trace id of the call it concerns (≤ 64).")


@strawberry.type(description="A reported context gap: the task, what was missing, who reported it and when.")
class ContextGap:
    id: strawberry.ID
    task: str
    missing: str
    reporter_kind: str = strawberry.field(description="agent or member.")
    credential_id: strawberry.ID | None = strawberry.field(description="The reporting agent credential, if any.")
    credential_name: str | None
    member_id: strawberry.ID = strawberry.field(description="The member, or the credential's creator.")
    member_name: str
    pack_id: strawberry.ID | None
    trace_id: str | None
    created_at: datetime
    status: ContextGapStatus
    resolution: str | None = strawberry.field(
        description="RESOLVED: the entry it became (kind, key, entry id, set, version); DISMISSED: the reason."
    )
    resolved_by: strawberry.ID | None = strawberry.field(description="The member who resolved or dismissed it.")
    resolved_by_name: str | None
    resolved_at: datetime | None
    resolved_context_set_id: strawberry.ID | None = strawberry.field(description="RESOLVED: the set of the entry.")
    resolved_entry_id: strawberry.ID | None = strawberry.field(description="RESOLVED: the entry it became.")


@strawberry.input(
    description="Turn a gap into exactly one new entry of a context set: verifiedAnswer or definition (the set's limits)."
)
class ResolveContextGapInput:
    context_set_id: strawberry.ID
    verified_answer: VerifiedAnswerInput | None = None
    definition: DefinitionInput | None = None


@strawberry.type(description="A page of context gaps, newest first.")
class ContextGapConnection:
    gaps: list[ContextGap]
    total_count: int = strawberry.field(description="Gaps reported in the workspace (all pages).")
    end_cursor: str | None = strawberry.field(description="Pass as after for the next page; null on the last page.")
    has_next_page: bool


def to_gap(v: gaps.GapView) -> ContextGap:
    """Service view → GraphQL gap."""
    return ContextGap(
        id=strawberry.ID(v.id),
        task=v.task,
        missing=v.missing,
        reporter_kind=v.reporter_kind,
        credential_id=strawberry.ID(v.credential_id) if v.credential_id else None,
        credential_name=v.credential_name,
        member_id=strawberry.ID(v.member_id),
        member_name=v.member_name,
        pack_id=strawberry.ID(v.pack_id) if v.pack_id else None,
        trace_id=v.trace_id,
        created_at=v.created_at,
        status=ContextGapStatus(v.status),
        resolution=v.resolution,
        resolved_by=strawberry.ID(v.resolved_by) if v.resolved_by else None,
        resolved_by_name=v.resolved_by_name,
        resolved_at=v.resolved_at,
        resolved_context_set_id=strawberry.ID(v.resolved_context_set_id) if v.resolved_context_set_id else None,
        resolved_entry_id=strawberry.ID(v.resolved_entry_id) if v.resolved_entry_id else None,
    )


def _report(i: ContextGapInput) -> gaps.GapReport:
    return gaps.GapReport(task=i.task, missing=i.missing, pack_id=i.pack_id, trace_id=i.trace_id)


def _validate_report(input: ContextGapInput) -> None:
    gaps.validate_report(_report(input))


def _resolution(id: str, input: ResolveContextGapInput) -> gaps.GapResolution:
    va, d = input.verified_answer, input.definition
    return gaps.GapResolution(
        gap_id=id,
        context_set_id=input.context_set_id,
        verified_answer=(
            cs.VerifiedAnswerInput(
                va.question,
                va.answer,
                va.citation.document_id if va.citation else None,
                va.citation.passage_id if va.citation else None,
            )
            if va is not None
            else None
        ),
        definition=cs.DefinitionInput(d.term, d.definition, tuple(d.aliases)) if d is not None else None,
    )


def _validate_resolve(id: strawberry.ID, input: ResolveContextGapInput) -> None:
    _resolution(id, input)


def _validate_dismiss(id: strawberry.ID, reason: str) -> None:
    gaps.GapDismissal(gap_id=id, reason=reason)


def _validate_list(first: int = gaps.GAP_LIST_DEFAULT, after: str | None = None) -> None:
    gaps.validate_list(gaps.GapListRequest(first, after))


@strawberry.type
class GapQuery:
    @strawberry.field(
        description="Reported context gaps of your workspace, newest first (editors and above). first 1–200 (default 50); after = endCursor.",
        extensions=[Governed("contextGaps", validate=_validate_list)],
    )
    async def context_gaps(
        self, info: Info, principal: Principal, first: int = gaps.GAP_LIST_DEFAULT, after: str | None = None
    ) -> ContextGapConnection:
        page = await gaps.list_gaps(info.context.services, principal, gaps.GapListRequest(first, after))
        return ContextGapConnection(
            gaps=[to_gap(g) for g in page.gaps],
            total_count=page.total_count,
            end_cursor=page.end_cursor,
            has_next_page=page.has_next_page,
        )


@strawberry.type
class GapMutation:
    @strawberry.mutation(
        description="Report that context was missing for a task (scope gaps:report): stored for editors to review. Over a limit: CONTEXT_GAP_TEXT_TOO_LONG naming the field.",
        extensions=[Governed("reportContextGap", validate=_validate_report)],
    )
    async def report_context_gap(self, info: Info, input: ContextGapInput, principal: Principal) -> ContextGap:
        return to_gap(await gaps.report_gap(info.context.services, principal, _report(input)))

    @strawberry.mutation(
        description="Turn an open gap into a verified answer or a definition of a context set in one step (editors and "
        "up): a new set version, and the gap RESOLVED with the entry it became. A closed gap: 409 CONTEXT_GAP_RESOLVED.",
        extensions=[Governed("resolveContextGap", validate=_validate_resolve)],
    )
    async def resolve_context_gap(
        self, info: Info, principal: Principal, id: strawberry.ID, input: ResolveContextGapInput
    ) -> ContextGap:
        return to_gap(await gaps.resolve_gap(info.context.services, principal, _resolution(id, input)))

    @strawberry.mutation(
        description="Dismiss an open gap with a reason, 1–2,000 characters (editors and up); it keeps the reason, "
        "who and when. A closed gap: 409 CONTEXT_GAP_RESOLVED.",
        extensions=[Governed("dismissContextGap", validate=_validate_dismiss)],
    )
    async def dismiss_context_gap(self, info: Info, principal: Principal, id: strawberry.ID, reason: str) -> ContextGap:
        return to_gap(
            await gaps.dismiss_gap(info.context.services, principal, gaps.GapDismissal(gap_id=id, reason=reason))
        )
