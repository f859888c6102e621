"""The retrieval legs of a pack, bound to the caller's workspace, filters and depth.

Split from :mod:`app.packs.service` (the pipeline). :func:`search_legs` binds BM25 over
Whoosh and the dense search (each vector space the task is routed to, searched with its own
model's embedding of the task and merged by rank: :mod:`retrieval.dense`) to the caller, runs
them (:func:`retrieval.pipeline.run_legs`) until the pack's deadline and hands each leg's
deeper search to the as-of over-fetch; :func:`visible_dense_spaces` applies as-of visibility
to each vector space before the spaces are merged.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

import numpy as np

from cairn.app.core.errors import BadInput
from cairn.app.governance import Principal
from cairn.app.observability import set_attributes, span
from cairn.app.packs.pipeline_types import LegResults, PackServices, PackTimings, RowCache
from cairn.app.packs.resolve import first_window, prefetch, visible_legs
from cairn.app.packs.types import PackRequest
from cairn.retrieval.dense import DenseServed, merge_spaces
from cairn.retrieval.pipeline import LEG_DEPTH, Legs, Ranked, RetrievalConfig, run_legs


async def search_legs(
    services: PackServices,
    principal: Principal,
    req: PackRequest,
    config: RetrievalConfig,
    filters: tuple[list[str] | None, list[str] | None],
    deadline: float,
    timings: PackTimings,
    cache: RowCache,
    more: dict[str, Callable[[int], Ranked]],
) -> tuple[LegResults, DenseServed]:
    """Bind the leg searches to the caller's workspace, filters and depth, and run them
    (:func:`retrieval.pipeline.run_legs`) until ``deadline`` (monotonic seconds).

    ``more`` receives, per leg that ran, the same search at another limit (the dense one
    reuses the task's query vector in each space it searched, merged again at that limit),
    for :func:`app.packs.resolve.visible_legs` to over-fetch.

    Returns:
        The legs' results, and what the dense leg searched (models, each passage's space;
        an over-fetch adds the spaces of the passages it found).

    While the dense leg embeds the task, BM25's top ``first_window(maxTokens)`` candidates'
    rows are read into ``cache`` (:func:`app.packs.resolve.prefetch`).

    Raises:
        BadInput: ``DENSE`` on a server without an embedding model.
    """
    idx = services.indexes
    colls, docs = filters
    depth = LEG_DEPTH  # never from the budget: a passage's fused score must not depend on maxTokens
    dense, vectors = idx.dense, idx.vectors
    served = DenseServed()
    if config.dense_only and (dense is None or vectors is None):
        raise BadInput(
            "input.retrieval DENSE needs an embedding model; this server runs without one "
            "(CAIRN_EMBEDDER=none): use HYBRID or LEXICAL",
            field="input.retrieval",
        )
    ws = principal.workspace_id

    def lexical(limit: int = depth) -> Ranked:
        with span("pack.leg.bm25", {"cairn.leg": "bm25", "cairn.leg.depth": limit}) as s:
            out = idx.lexical.search(req.task, workspace_id=ws, collection_ids=colls, document_ids=docs, limit=limit)
            set_attributes(s, {"cairn.leg.results": len(out)})
            return out

    more["lexical"] = lexical
    if dense is None or vectors is None:
        legs = Legs(lexical)  # HYBRID: the pipeline notes the missing dense leg
    else:

        def route() -> tuple[str, ...]:
            return dense.task_spaces(
                req.task,
                multilingual_has_passages=lambda: vectors.has_space(dense.multilingual_space or "", workspace_id=ws),
            )

        # asking the store whether the workspace has multilingual passages is I/O (a server in cluster mode)
        spaces = await asyncio.to_thread(route) if dense.multilingual is not None else route()
        served.non_latin = dense.primary_space not in spaces
        served.models = [dense.by_space[name].name for name in spaces]

        def coverage() -> float | None:
            if dense.primary_space not in spaces:
                return None
            return dense.primary.vocabulary_coverage(req.task)

        def encode() -> Mapping[str, np.ndarray]:
            with span("pack.leg.dense.embed", {"cairn.leg": "dense", "cairn.embedder": " + ".join(served.models)}):
                return dense.encode_task(req.task, spaces)

        def search_space(name: str, vec: np.ndarray, limit: int) -> Ranked:
            out = vectors.search(vec, workspace_id=ws, collection_ids=colls, document_ids=docs, limit=limit, space=name)
            served.space_of.update((pid, name) for pid, _ in out)
            return out

        def deeper(name: str, vec: np.ndarray) -> Callable[[int], Ranked]:
            def run(limit: int) -> Ranked:
                attrs = {"cairn.leg": "dense", "cairn.leg.depth": limit, "cairn.vector.space": name}
                with span("pack.leg.dense.search", attrs) as s:
                    out = search_space(name, vec, limit)
                    set_attributes(s, {"cairn.leg.results": len(out)})
                    return out

            return run

        def search(query: Mapping[str, np.ndarray], limit: int = depth) -> Ranked:
            more["dense"] = lambda n: search(query, n)  # the over-fetch reuses the task's vector(s)
            served.more = {name: deeper(name, vec) for name, vec in query.items()}
            with span("pack.leg.dense.search", {"cairn.leg": "dense", "cairn.leg.depth": limit}) as s:
                served.lists = {name: search_space(name, vec, limit) for name, vec in query.items()}
                out = merge_spaces(served.lists, limit)
                set_attributes(s, {"cairn.leg.results": len(out)})
                return out

        legs = Legs(lexical, encode=encode, search_vectors=search, coverage=coverage)

    async def warm(lexical: Sequence[tuple[str, float]], dense_finished: Callable[[], bool]) -> None:
        ids = [pid for pid, _ in lexical[: first_window(req.max_tokens)]]
        await prefetch(services, principal, ids, cache, until=dense_finished)

    return await run_legs(config, legs, deadline=deadline, timings=timings.values, warm=warm), served


async def visible_dense_spaces(
    services: PackServices,
    principal: Principal,
    legs: LegResults,
    served: DenseServed,
    valid_time: datetime,
    system_time: datetime,
    cache: RowCache,
    depth: int,
    more: dict[str, Callable[[int], Ranked]],
) -> None:
    """When the dense leg searched several vector spaces: as-of visibility per space, *then* the
    merge (:func:`retrieval.dense.merge_spaces` interleaves by rank, so hiding a passage of one
    space after the merge would shift the other space's passages; per space, a pack as of a
    past time ranks exactly what was visible then). Each space over-fetches on its own
    (reusing its query vector); ``legs.ranked["dense"]`` becomes the merged visible list and
    needs no further over-fetch (``more["dense"]`` is dropped)."""
    if "dense" not in legs.ranked or len(served.lists) < 2:
        return
    lists = {f"dense/{name}": ranked for name, ranked in served.lists.items()}
    deeper = {f"dense/{name}": run for name, run in served.more.items()}
    await visible_legs(
        services, principal, lists, valid_time, system_time, cache, depth=depth, more=deeper, notes=legs.notes
    )
    legs.ranked["dense"] = merge_spaces({name[len("dense/") :]: ranked for name, ranked in lists.items()}, depth)
    more.pop("dense", None)
