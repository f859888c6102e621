"""The retrieval legs of a pack, bound to the run's task, workspace and scope.

Split from :mod:`app.packs.service` (the pipeline). Each leg's search is a frozen
:class:`~app.packs.pipeline_types.LegSearch`: :class:`LexicalSearch` (BM25 over Whoosh) and
:class:`DenseSearch` (each vector space the task is routed to, :class:`DenseRoute`, searched
with its own model's embedding of the task, :class:`SpaceSearch`, and merged in the lead space's
cosines: :mod:`retrieval.dense`). :func:`search_legs` runs them (:func:`retrieval.pipeline.run_legs`)
until the pack's deadline and returns :class:`FoundLegs` — the legs' results and the searches
to run again deeper; :func:`visible_found` applies as-of visibility (each vector space before
the spaces are merged) and returns the visible legs with what the dense leg served.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from cairn.app.core.errors import BadInput
from cairn.app.corpus import SearchIndexes
from cairn.app.observability import set_attributes, span
from cairn.app.packs.pipeline_types import DenseServed, Filters, LegResults, LegSearch, PackRun
from cairn.app.packs.resolve import first_window, prefetch, visible_legs
from cairn.retrieval.dense import DenseModels, lead_space, merge_spaces
from cairn.retrieval.pipeline import LEG_DEPTH, DenseHits, Legs, Ranked, run_legs
from cairn.retrieval.vectors import VectorIndex


@dataclass(frozen=True, slots=True)
class LexicalSearch:
    """BM25 over the lexical index for the task, within the workspace and scope (a :class:`LegSearch`)."""

    indexes: SearchIndexes
    task: str
    workspace_id: str
    filters: Filters

    def search(self, limit: int = LEG_DEPTH) -> Ranked:
        """The top ``limit`` passages by BM25, best first (in a ``pack.leg.bm25`` span)."""
        colls, docs = self.filters
        with span("pack.leg.bm25", {"cairn.leg": "bm25", "cairn.leg.depth": limit}) as s:
            out = self.indexes.lexical.search(
                self.task, workspace_id=self.workspace_id, collection_ids=colls, document_ids=docs, limit=limit
            )
            set_attributes(s, {"cairn.leg.results": len(out)})
            return out


@dataclass(frozen=True, slots=True)
class SpaceSearch:
    """One vector space searched with the task's query vector of that space's model (a :class:`LegSearch`)."""

    vectors: VectorIndex
    space: str
    vector: np.ndarray
    workspace_id: str
    filters: Filters

    def find(self, limit: int) -> Ranked:
        """``(passage id, cosine)``, best first, at most ``limit``."""
        colls, docs = self.filters
        return self.vectors.search(
            self.vector,
            workspace_id=self.workspace_id,
            collection_ids=colls,
            document_ids=docs,
            limit=limit,
            space=self.space,
        )

    def search(self, limit: int) -> Ranked:
        """:meth:`find` in a ``pack.leg.dense.search`` span naming the space (the per-space over-fetch)."""
        attrs = {"cairn.leg": "dense", "cairn.leg.depth": limit, "cairn.vector.space": self.space}
        with span("pack.leg.dense.search", attrs) as s:
            out = self.find(limit)
            set_attributes(s, {"cairn.leg.results": len(out)})
            return out


@dataclass(frozen=True, slots=True)
class DenseSearch:
    """The dense leg: every routed space searched with its own query vector, the lists merged
    (:func:`retrieval.dense.merge_spaces`); a :class:`LegSearch` whose deeper search reuses the
    task's query vectors."""

    spaces: tuple[SpaceSearch, ...]

    @classmethod
    def of(
        cls, vectors: VectorIndex, query: Mapping[str, np.ndarray], workspace_id: str, filters: Filters
    ) -> DenseSearch:
        """The search with ``query`` (space → the task's query vector), spaces in that order."""
        return cls(tuple(SpaceSearch(vectors, name, vec, workspace_id, filters) for name, vec in query.items()))

    def hits(self, limit: int = LEG_DEPTH) -> DenseHits:
        """Each space's top ``limit`` and their merge (in one ``pack.leg.dense.search`` span)."""
        with span("pack.leg.dense.search", {"cairn.leg": "dense", "cairn.leg.depth": limit}) as s:
            by_space = {sp.space: sp.find(limit) for sp in self.spaces}
            out = merge_spaces(by_space, limit)
            set_attributes(s, {"cairn.leg.results": len(out)})
        return DenseHits(out, by_space, {sp.space: sp.vector for sp in self.spaces})

    def search(self, limit: int) -> Ranked:
        """The merged ranking at ``limit`` (the single-space over-fetch)."""
        return self.hits(limit).ranked

    def space(self, name: str) -> SpaceSearch:
        """The search of the space ``name`` (one of :attr:`spaces`)."""
        return next(sp for sp in self.spaces if sp.space == name)


@dataclass(frozen=True, slots=True)
class DenseRoute:
    """Where the dense leg searches for one task: the routed spaces (primary first,
    :meth:`retrieval.dense.DenseModels.task_spaces`) and their models."""

    dense: DenseModels
    task: str
    spaces: tuple[str, ...]

    @property
    def models(self) -> tuple[str, ...]:
        """The routed spaces' model names, in search order."""
        return tuple(self.dense.by_space[name].name for name in self.spaces)

    @property
    def non_latin(self) -> bool:
        """The task was routed as non-Latin script (the multilingual space only)."""
        return self.dense.primary_space not in self.spaces

    def encode(self) -> Mapping[str, np.ndarray]:
        """The task's query vector in each routed space (in a ``pack.leg.dense.embed`` span)."""
        with span("pack.leg.dense.embed", {"cairn.leg": "dense", "cairn.embedder": " + ".join(self.models)}):
            return self.dense.encode_task(self.task, self.spaces)

    def coverage(self) -> float | None:
        """The primary model's vocabulary coverage of the task; None when the task is not routed to
        it or the model does not measure coverage (the leg then weighs 1.0)."""
        if self.dense.primary_space not in self.spaces:
            return None
        return self.dense.primary.vocabulary_coverage(self.task)


@dataclass(frozen=True, slots=True)
class FoundLegs:
    """The legs as searched by the deadline (:func:`search_legs`).

    Attributes:
        legs: Their results (:class:`retrieval.pipeline.LegResults`).
        route: The dense leg's route; None without an embedding model or without a scope.
        lexical: The BM25 search, to run again deeper (None without a scope).
        dense: The dense search with the task's query vectors, to run again deeper (None unless
            the dense leg finished and searched).
    """

    legs: LegResults
    route: DenseRoute | None = None
    lexical: LexicalSearch | None = None
    dense: DenseSearch | None = None


async def search_legs(run: PackRun) -> FoundLegs:
    """Bind the leg searches to the run's task, workspace and scope, and run them
    (:func:`retrieval.pipeline.run_legs`) until ``run.deadline``, each returning
    :data:`~retrieval.pipeline.LEG_DEPTH` passages whatever the budget (a passage's fused score
    must not depend on ``maxTokens``). A scope that leaves nothing to search (a context set's)
    runs no leg.

    While the dense leg embeds the task, BM25's top ``first_window(maxTokens)`` candidates'
    rows are read into ``run.cache`` (:func:`app.packs.resolve.prefetch`).

    Raises:
        BadInput: ``DENSE`` on a server without an embedding model.
    """
    if run.filters[0] == [] or run.filters[1] == []:
        return FoundLegs(LegResults({}, (), {"lexical": 1.0, "dense": 1.0}))
    idx, req, ws = run.services.indexes, run.req, run.principal.workspace_id
    dense, vectors = idx.dense, idx.vectors
    if run.config.dense_only and (dense is None or vectors is None):
        raise BadInput(
            "input.retrieval DENSE needs an embedding model; this server runs without one "
            "(CAIRN_EMBEDDER=none): use HYBRID or LEXICAL",
            field="input.retrieval",
        )
    lexical = LexicalSearch(idx, req.task, ws, run.filters)

    async def warm(found: Sequence[tuple[str, float]], dense_finished: Callable[[], bool]) -> None:
        ids = [pid for pid, _ in found[: first_window(req.max_tokens)]]
        await prefetch(run.services, run.principal, ids, run.cache, until=dense_finished)

    if dense is None or vectors is None:  # HYBRID: the pipeline notes the missing dense leg
        legs = await run_legs(run.config, Legs(lexical.search), deadline=run.deadline, warm=warm)
        return FoundLegs(legs, None, lexical)

    def has_multilingual() -> bool:
        return vectors.has_space(dense.multilingual_space or "", workspace_id=ws)

    # asking the store whether the workspace has multilingual passages is I/O (a server in cluster mode)
    if dense.multilingual is not None:
        spaces = await asyncio.to_thread(dense.task_spaces, req.task, multilingual_has_passages=has_multilingual)
    else:
        spaces = dense.task_spaces(req.task, multilingual_has_passages=has_multilingual)
    route = DenseRoute(dense, req.task, spaces)

    def first_hits(query: Mapping[str, np.ndarray]) -> DenseHits:
        return DenseSearch.of(vectors, query, ws, run.filters).hits()

    legs = await run_legs(
        run.config,
        Legs(lexical.search, encode=route.encode, search_vectors=first_hits, coverage=route.coverage),
        deadline=run.deadline,
        warm=warm,
    )
    # the over-fetch reuses the task's vector(s)
    again = DenseSearch.of(vectors, legs.dense.vectors, ws, run.filters) if legs.dense is not None else None
    return FoundLegs(legs, route, lexical, again)


async def visible_found(run: PackRun, found: FoundLegs) -> tuple[LegResults, DenseServed]:
    """The legs kept to passages visible at the run's read point (:func:`app.packs.resolve.visible_legs`,
    a leg left short searching again deeper through ``found.lexical`` / ``found.dense``), the
    visibility notes after the legs' own.

    When the dense leg searched several vector spaces: visibility per space, *then* the merge
    (:func:`retrieval.dense.merge_spaces` scores a passage of another space by how far it stands out
    of its own list, so hiding a passage of one space after the merge would move the other space's
    passages; per space, a pack as of a past time ranks exactly what was visible then). Each space over-fetches on its own (reusing its query
    vector); the merged visible list needs no further over-fetch.

    Returns:
        The visible legs, and what the dense leg served (its models and each visible dense
        passage's space).
    """
    legs, depth = found.legs, LEG_DEPTH
    ranked = dict(legs.ranked)
    notes = list(legs.notes)
    deeper: dict[str, LegSearch] = {"lexical": found.lexical} if found.lexical is not None else {}
    by_space: dict[str, Ranked] = {}
    spaces = legs.dense.by_space if legs.dense is not None and "dense" in ranked else {}
    if len(spaces) > 1 and found.dense is not None:
        per_space = await visible_legs(
            run.services,
            run.principal,
            {f"dense/{name}": out for name, out in spaces.items()},
            run.valid_time,
            run.system_time,
            run.cache,
            depth=depth,
            deeper={f"dense/{name}": found.dense.space(name) for name in spaces},
        )
        notes.extend(per_space.notes)
        by_space = {name.removeprefix("dense/"): out for name, out in per_space.ranked.items()}
        ranked["dense"] = merge_spaces(by_space, depth)
    elif found.dense is not None:
        deeper["dense"] = found.dense
    visible = await visible_legs(
        run.services, run.principal, ranked, run.valid_time, run.system_time, run.cache, depth=depth, deeper=deeper
    )
    notes.extend(visible.notes)
    if len(spaces) == 1:  # one space: every visible dense passage is of it
        by_space = dict.fromkeys(spaces, visible.ranked["dense"])
    served = DenseServed()
    if found.route is not None:
        served = DenseServed(
            found.route.models,
            found.route.non_latin,
            {pid: name for name, out in by_space.items() for pid, _ in out},
            lead_space(by_space),
            {name: out[0][1] for name, out in by_space.items() if out},
        )
    return replace(legs, ranked=visible.ranked, notes=notes), served
