"""Context sets in the pack pipeline (issue 13): :class:`ContextSetHook`, a
:class:`~app.packs.pipeline_types.PackHook` — kept in one file, like :mod:`app.packs.graph_hook`;
set-first packing itself lives in :mod:`app.contextsets.packing`.

The set is planned before retrieval (:meth:`ContextSetHook.plan`; REQUIRE_COMPLETE fails on
missing required evidence before any event); ``before_retrieval`` narrows the run's scope to
the set's and makes its items the pack's :class:`~app.packs.pipeline_types.Lead` (emitted
first, BEST_EFFORT: before the legs run; :func:`set_item`), so evidence gets the budget left;
``before_packing`` drops evidence the set's required items already quote.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from cairn.app.contextsets import SetItem, SetPlan, plan_set
from cairn.app.core.errors import PackIncomplete
from cairn.app.packs.pipeline_types import Candidate, Lead, LegResults, PackHook, PackRun
from cairn.app.packs.types import Citation, ContextSetEntryRef, PackItem
from cairn.retrieval.dedup import DedupGroup


@dataclass(frozen=True, slots=True)
class ContextSetHook:
    """A context set's part of a pack (:class:`~app.packs.pipeline_types.PackHook`; module doc).

    Attributes:
        plan: The set's plan for this task (:func:`app.contextsets.plan_set`).
    """

    plan: SetPlan

    @classmethod
    async def plan_for(cls, run: PackRun) -> ContextSetHook | None:
        """The hook of the request's context set (``input.contextSetId`` or the credential's
        binding) planned within ``run.filters`` at the run's read point, or None without a set.

        Raises:
            PackIncomplete: ``REQUIRE_COMPLETE`` and required evidence is missing (``REQUIRED_EVIDENCE``).
            ContextSetScopeRefused, ContextSetInactive, NotFound: from :func:`app.contextsets.plan_set`.
        """
        req = run.req
        plan = await plan_set(
            run.services,
            run.principal,
            task=req.task,
            context_set_id=req.context_set_id,
            collection_ids=run.filters[0],
            document_ids=run.filters[1],
            max_tokens=req.max_tokens,
            valid_time=run.valid_time,
            system_time=run.system_time,
        )
        if plan is None:
            return None
        if plan.missing_required and req.coverage == "REQUIRE_COMPLETE":
            raise PackIncomplete(
                "coverage REQUIRE_COMPLETE could not be met (REQUIRED_EVIDENCE): "
                + "; ".join(plan.missing_required)
                + ". Raise input.budget.maxTokens, or use BEST_EFFORT",
                reasons=["REQUIRED_EVIDENCE"],
                field="input.budget.maxTokens",
            )
        return cls(plan)

    def before_retrieval(self, run: PackRun) -> PackRun:
        """Retrieval limited to the set's scope; the set's items lead the pack (ranks 1..n)."""
        plan = self.plan
        lead = Lead(
            items=tuple(set_item(rank, i) for rank, i in enumerate(plan.items, start=1)),
            tokens=plan.tokens,
            notes=tuple(plan.notes),
            reasons=tuple(set_reasons(plan)),
            heads=bool(plan.items) or plan.top_over_budget,
            over_budget=tuple(plan.over_budget),
            truncated=bool(plan.skipped),
        )
        return replace(run, filters=(plan.collection_ids, plan.document_ids), lead=lead)

    async def before_fusion(self, run: PackRun, legs: LegResults) -> tuple[LegResults, PackHook]:
        """No leg of its own: ``legs`` unchanged."""
        return legs, self

    def before_packing(self, groups: Sequence[DedupGroup[Candidate]]) -> list[DedupGroup[Candidate]]:
        """Evidence groups less those the set's required items already quote."""
        plan = self.plan
        return [
            g for g in groups if g.kept.id not in plan.required_passages and g.kept.doc not in plan.required_documents
        ]

    def after_packing(self, run: PackRun, items: Sequence[PackItem]) -> list[PackItem]:
        """No items after the evidence: ``items`` unchanged."""
        return list(items)


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


def set_reasons(plan: SetPlan) -> list[str]:
    """The incompleteness a set's part of the pack causes (:data:`app.packs.types.INCOMPLETE_REASONS`):
    missing required evidence, its first matched entry (the pack's top item) over the budget,
    another approved entry over the budget. The plan's notes name each entry."""
    out = ["REQUIRED_EVIDENCE"] if plan.missing_required else []
    if plan.top_over_budget:
        out.append("TOP_ITEM_OVER_BUDGET")
    if len(plan.over_budget) > plan.top_over_budget:
        out.append("SET_ITEM_OVER_BUDGET")
    return out
