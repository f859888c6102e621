"""Context gaps (issue 16): ``reportContextGap`` (scope gaps:report; members too) and
``contextGaps`` (editors and above), rules in :mod:`app.gaps`."""

from __future__ import annotations

from datetime import datetime

import strawberry

from cairn.app import gaps
from cairn.app.governance import Governed, Principal
from cairn.resolvers.types import Info


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
    )


def _report(i: ContextGapInput) -> gaps.GapReport:
    return gaps.GapReport(task=i.task, missing=i.missing, pack_id=i.pack_id, trace_id=i.trace_id)


def _validate_report(input: ContextGapInput) -> None:
    gaps.validate_report(_report(input))


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
