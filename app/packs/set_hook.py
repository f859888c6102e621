"""Hook of context sets into the pack pipeline (issue 13) — kept in one file, like
:mod:`app.packs.graph_hook`; set-first packing itself lives in :mod:`app.contextsets.packing`.

The set is planned before retrieval (its scope narrows the filters: :func:`plan_context_set`),
its items are emitted first (BEST_EFFORT: before the legs run; :func:`set_item`), evidence gets
the budget left (:func:`without_required` drops what the set's required items already quote),
and REQUIRE_COMPLETE fails on missing required evidence before any event.
"""

from __future__ import annotations

from datetime import datetime

from cairn.app.contextsets import SetItem, SetPlan, plan_set
from cairn.app.core.errors import PackIncomplete
from cairn.app.governance import Principal
from cairn.app.packs.pipeline_types import Candidate, PackServices
from cairn.app.packs.types import Citation, ContextSetEntryRef, PackItem, PackRequest
from cairn.retrieval.dedup import DedupGroup


async def plan_context_set(
    services: PackServices,
    principal: Principal,
    req: PackRequest,
    filters: tuple[list[str] | None, list[str] | None],
    valid_time: datetime,
    system_time: datetime,
) -> SetPlan | None:
    """The context set's part of the pack (:func:`app.contextsets.plan_set`), or None without a set.

    Raises:
        PackIncomplete: ``REQUIRE_COMPLETE`` and required evidence is missing (``REQUIRED_EVIDENCE``).
        ContextSetScopeRefused, ContextSetInactive, NotFound: from :func:`app.contextsets.plan_set`.
    """
    plan = await plan_set(
        services,
        principal,
        task=req.task,
        context_set_id=req.context_set_id,
        collection_ids=filters[0],
        document_ids=filters[1],
        max_tokens=req.max_tokens,
        valid_time=valid_time,
        system_time=system_time,
    )
    if plan is not None and plan.missing_required and req.coverage == "REQUIRE_COMPLETE":
        raise PackIncomplete(
            "coverage REQUIRE_COMPLETE could not be met (REQUIRED_EVIDENCE): "
            + "; ".join(plan.missing_required)
            + ". Raise input.budget.maxTokens, or use BEST_EFFORT",
            reasons=["REQUIRED_EVIDENCE"],
            field="input.budget.maxTokens",
        )
    return plan


def set_item(rank: int, i: SetItem) -> PackItem:
    """A :class:`~app.contextsets.SetItem` as a pack item at ``rank``: required evidence keeps
    its citation, naming its source (external id, title, collection) as evidence does; an
    approved entry has none and names its source in ``context_set_entry`` (its external id
    and collection name stay empty)."""
    cit = None
    if i.version_id is not None and i.document_id is not None and i.sha256 is not None:
        cit = Citation(
            i.document_id,
            i.version_id,
            i.passage_id,
            i.start,
            i.end,
            i.sha256,
            external_id=i.external_id,
            document_title=i.title,
            collection_id=i.collection_id or "",
            collection_name=i.collection_name,
        )
    ref = ContextSetEntryRef(
        i.context_set_id,
        i.entry_id,
        i.set_version,
        i.document_id if cit is None else None,
        i.passage_id if cit is None else None,
    )
    return PackItem(
        rank,
        i.kind,
        i.text,
        i.tokens,
        i.trust,
        round(i.score, 8),
        None,
        None,
        cit,
        (),
        i.title,
        i.collection_id,
        i.valid_from,
        i.valid_to,
        i.superseded,
        False,
        (),
        external_id=i.external_id,
        collection_name=i.collection_name,
        context_set_entry=ref,
    )


def set_reasons(plan: SetPlan | None) -> list[str]:
    """The incompleteness a set's part of the pack causes (:data:`app.packs.types.INCOMPLETE_REASONS`):
    missing required evidence, its first matched entry (the pack's top item) over the budget,
    another approved entry over the budget. The plan's notes name each entry."""
    if plan is None:
        return []
    out = ["REQUIRED_EVIDENCE"] if plan.missing_required else []
    if plan.top_over_budget:
        out.append("TOP_ITEM_OVER_BUDGET")
    if len(plan.over_budget) > plan.top_over_budget:
        out.append("SET_ITEM_OVER_BUDGET")
    return out


def leads(plan: SetPlan | None) -> bool:
    """True when the set's items head the pack (so the best evidence item is not its top item)."""
    return plan is not None and (bool(plan.items) or plan.top_over_budget)


def without_required(groups: list[DedupGroup[Candidate]], plan: SetPlan | None) -> list[DedupGroup[Candidate]]:
    """Evidence groups less those the set's required items already quote."""
    if plan is None:
        return groups
    return [g for g in groups if g.kept.id not in plan.required_passages and g.kept.doc not in plan.required_documents]
