"""The temporal GRAPH leg in the pack pipeline (issue 14): :class:`GraphHook`, a
:class:`~app.packs.pipeline_types.PackHook` run with ``sources: GRAPH`` — kept in one file.

Before fusion (:meth:`GraphHook.before_fusion`) :func:`run_graph_leg` runs
:func:`app.temporal.temporal_leg` after the BM25/dense legs; its ranked passages, kept to those
visible at the pack's read point, join the fusion as the ``graph`` leg. After packing
(:meth:`GraphHook.after_packing`) :func:`add_fact_items` puts, right after each packed passage
among the leg's best :data:`MAX_FACT_ITEMS` that holds a matching statement, a ``FACT`` item:
the statement's exact span (cited like any item, its own SHA-256) with its normalised interval.
FACT items count against the budget: when they do not fit, the lowest-ranked items give way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from cairn.app.observability import set_attributes, span
from cairn.app.packs.pipeline_types import Candidate, LegResults, PackHook, PackRun
from cairn.app.packs.resolve import visible_legs
from cairn.app.packs.types import Citation, PackItem
from cairn.app.temporal import GraphLeg, temporal_leg
from cairn.retrieval.dedup import DedupGroup
from cairn.retrieval.tokens import count_tokens

MAX_FACT_ITEMS = 5
"""FACT items per pack: the statements of the temporal leg's best-ranked passages only."""

GRAPH_WEIGHT = 0.5
"""Static fusion weight of the temporal leg (its prior in score fusion, its RRF weight as of a past time), from TimeQA train (80 pages, 291 questions;
``python -m bench.timeqa --split train --pages 80 [--retrieval LEXICAL] --tune``), hit@1 at
0.5 / 1.0 / 2.0: LEXICAL legs 0.478 / 0.457 / 0.447; HYBRID legs 0.488 / 0.498 / 0.485 (3
questions apart; 0.5 keeps the better hit@3 and hit@10 with FACT items: 0.643 / 0.797)."""


@dataclass(frozen=True, slots=True)
class GraphHook:
    """The GRAPH source's part of a pack (:class:`~app.packs.pipeline_types.PackHook`; module doc).

    Attributes:
        leg: The temporal leg once it ran (:meth:`before_fusion` returns a hook holding it),
            whose statements become FACT items; None before.
    """

    leg: GraphLeg | None = None

    def before_retrieval(self, run: PackRun) -> PackRun:
        """No scope of its own: ``run`` unchanged."""
        return run

    async def before_fusion(self, run: PackRun, legs: LegResults) -> tuple[LegResults, PackHook]:
        """Run the temporal leg (:func:`run_graph_leg`) and keep its passages visible at the read
        point (:func:`app.packs.resolve.visible_legs`, no over-fetch); the hook returned holds the leg."""
        with span("pack.leg.graph", {"cairn.leg": "graph"}) as s:
            legs, leg = await run_graph_leg(run, legs)
            set_attributes(s, {"cairn.leg.results": len(legs.ranked.get("graph", ()))})
        if "graph" in legs.ranked:
            graph = legs.ranked["graph"]
            visible = await visible_legs(
                run.services,
                run.principal,
                {"graph": graph},
                run.valid_time,
                run.system_time,
                run.cache,
                depth=len(graph),
            )
            legs = replace(legs, ranked={**legs.ranked, "graph": visible.ranked["graph"]})
        return legs, GraphHook(leg)

    def before_packing(self, groups: Sequence[DedupGroup[Candidate]]) -> list[DedupGroup[Candidate]]:
        """No evidence of its own to drop: ``groups`` unchanged."""
        return list(groups)

    def after_packing(self, run: PackRun, items: Sequence[PackItem]) -> list[PackItem]:
        """FACT items after their host passages within the budget the lead left (:func:`add_fact_items`)."""
        return add_fact_items(list(items), self.leg, run.evidence_tokens, first_rank=run.first_rank)


async def run_graph_leg(run: PackRun, legs: LegResults) -> tuple[LegResults, GraphLeg]:
    """Run the temporal leg after the BM25/dense legs and join it to ``legs``.

    Returns:
        ``legs`` with ``ranked["graph"]`` (the leg's passages, best first, each with its best
        statement's score) weighted :data:`GRAPH_WEIGHT`, and the leg's notes after theirs (a
        leg that found nothing adds only its notes); and the :class:`app.temporal.GraphLeg`
        (its statements become FACT items: :func:`add_fact_items`). The BM25 leg's ids pick
        the documents to read when the task names no subject.
    """
    colls, docs = run.filters
    leg = await temporal_leg(
        run.services,
        run.principal,
        run.req.task,
        explicit_valid_time=run.req.valid_time,
        valid_time=run.valid_time,
        system_time=run.system_time,
        collection_ids=colls,
        document_ids=docs,
        lexical_ids=legs.ids().get("lexical"),
    )
    notes = [*legs.notes, *leg.notes]
    if not leg.ranked:
        return replace(legs, notes=notes), leg
    ranked = [(pid, leg.facts[pid][1] if pid in leg.facts else 0.0) for pid in leg.ranked]
    return (
        replace(
            legs,
            ranked={**legs.ranked, "graph": ranked},
            weights={**legs.weights, "graph": GRAPH_WEIGHT},
            notes=notes,
        ),
        leg,
    )


def add_fact_items(
    items: list[PackItem], leg: GraphLeg | None, max_tokens: int, *, first_rank: int = 1
) -> list[PackItem]:
    """Insert FACT items after their host passages; drop the lowest-ranked items to fit ``max_tokens``.

    A FACT item follows an ``EVIDENCE`` item whose passage is among the leg's best
    :data:`MAX_FACT_ITEMS` and holds the statement in the cited version; it carries the
    statement's exact span (``kind`` FACT, ``interval`` = ``(validFrom, validTo, precision)``).
    Items are renumbered from ``first_rank`` (after a context set's approved items). ``leg`` None or without statements: ``items`` unchanged.
    """
    if leg is None or not leg.facts:
        return items
    best = set(leg.ranked[:MAX_FACT_ITEMS])
    out: list[PackItem] = []
    for it in items:
        out.append(it)
        if it.citation is None:  # an approved context-set entry: no passage to hold a statement
            continue
        pid = it.citation.passage_id or ""
        hit = leg.facts.get(pid) if it.kind == "EVIDENCE" and pid in best else None
        if hit is None or hit[0].version_id != it.citation.version_id:
            continue
        f, score = hit
        out.append(
            PackItem(
                0,
                "FACT",
                f.text,
                count_tokens(f.text),
                "UNTRUSTED",
                score,
                None,
                None,
                Citation(
                    f.document_id,
                    f.version_id,
                    f.passage_id,
                    f.start,
                    f.end,
                    f.sha256,
                    external_id=it.citation.external_id,
                    document_title=it.citation.document_title,
                    collection_id=it.citation.collection_id,
                    collection_name=it.citation.collection_name,
                ),
                (),
                it.document_title,
                it.collection_id,
                it.valid_from,
                it.valid_to,
                it.superseded,
                False,
                (),
                external_id=it.external_id,
                collection_name=it.collection_name,
                interval=(f.valid_from, f.valid_to, f.precision),
            )
        )
    while out and sum(i.tokens for i in out) > max_tokens:
        out.pop()
    return [replace(i, rank=n) for n, i in enumerate(out, start=first_rank)]
