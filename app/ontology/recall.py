"""``semanticRecall``: one natural-language query → relevant instances across object types.

Phase 1 — pick object types. Scope first (applied before ranking and truncation):
``conceptGroups`` keep types in any of the groups; ``objectTypes`` keep the named ids
(unknown ids → no result and a message listing them); ``excludeObjectTypes`` removes ids
and wins over ``objectTypes``. Types without a ``match``/``knn`` property cannot yield
instances and are dropped. Each remaining type gets a relevance
``0.5·cos(query, descriptor) + 0.5·lexical`` where the descriptor is the type's name,
description and property names embedded once per load, and ``lexical`` the share of the
query's analysed terms found in that descriptor. The top ``maxObjectTypes`` are kept.

Phase 2 — recall instances. On each kept type, concurrently: ``knn`` on every vector
property (k = 50) and ``multi_match`` (BM25, OR of the query's terms) over all full-text
properties. The legs are fused by reciprocal rank fusion (Cormack et al. 2009, k = 60,
ranks from 1; :func:`retrieval.fusion.rrf`), divided by the number of legs the type has
(a type with only a full-text leg is not halved against one with two). Each of the top 50
candidates is then weighted by its query-term coverage ``c`` — the share of the query's
analysed terms found in the instance's text values or the type's name — as
``rrf / legs · (1 + 2c)``. Across types a node's ``score`` is that times
``(1 + typeRelevance)``; the first ``maxInstancesPerType`` of each type are merged by
score (ties: type id, then instance key).

Measured with ``python -m bench.semantic_recall`` (20 Northwind questions, hit@5 / hit@1 /
MRR@5): plain RRF × type relevance 17/20, 12/20, 0.702; + per-leg normalisation and
richer Summary texts in the mapping 20/20, 13/20, 0.778; + coverage weighting 20/20,
17/20, 0.912. On 10 held-out questions written afterwards: 7/10, 3/10, 0.467 (misses need
facts held only in non-text properties, e.g. "discontinued", "reports to").

``rerank``: a cross-encoder (:mod:`retrieval.rerank`, ``CAIRN_RERANKER_PATH``) re-orders
the merged nodes by its score of (query, the node's text values), keeping ``score`` and
adding ``rerankerScore``; when no cross-encoder loads (none ships offline with Cairn) the
fused order is kept and the message says so.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cairn.app.core.db import Database
from cairn.app.core.errors import BadInput
from cairn.app.core.models import ObjectType
from cairn.app.ontology.store import OntologyStore, TypeIndex, text_field
from cairn.app.ontology.types import condition_operations
from cairn.retrieval.analysis import analyze_runs
from cairn.retrieval.fusion import Fused, rrf

KNN_DEPTH = 50
MATCH_DEPTH = 50
CANDIDATES = 50
COVERAGE_WEIGHT = 2.0
MAX_QUERY = 1_000


@dataclass
class RecallRequest:
    """Inputs of ``semanticRecall`` (see module doc for each option)."""

    kn_id: str
    query: str
    concept_groups: list[str] | None = None
    object_types: list[str] | None = None
    exclude_object_types: list[str] | None = None
    max_object_types: int = 10
    max_instances_per_type: int = 5
    rerank: bool = False
    include_object_types: bool = True


@dataclass
class RecallNode:
    """One recalled instance."""

    object_type_id: str
    identity: dict[str, Any]
    properties: dict[str, Any]
    score: float
    matched_by: list[str]
    reranker_score: float | None = None


@dataclass
class RecallResult:
    """Nodes best first, compact definitions of the types that produced them, a message."""

    nodes: list[RecallNode] = field(default_factory=list)
    object_types: list[dict[str, Any]] = field(default_factory=list)
    type_scores: dict[str, float] = field(default_factory=dict)
    message: str | None = None


def check_request(r: RecallRequest) -> None:
    """Bounds of the options.

    Raises:
        BadInput: naming the field and the limit.
    """
    if not r.query.strip() or len(r.query) > MAX_QUERY:
        raise BadInput(f"query must be 1–{MAX_QUERY} characters", field="query", limit=MAX_QUERY)
    if not 1 <= r.max_object_types <= 100:
        raise BadInput("maxObjectTypes must be 1–100", field="maxObjectTypes", limit="1-100")
    if not 1 <= r.max_instances_per_type <= 100:
        raise BadInput("maxInstancesPerType must be 1–100", field="maxInstancesPerType", limit="1-100")
    for name in ("concept_groups", "object_types", "exclude_object_types"):
        values = getattr(r, name)
        if values is not None and len(values) > 100:
            raise BadInput(f"{name} lists at most 100 ids", field=name, limit=100)


def _terms(text: str) -> list[str]:
    return list(dict.fromkeys(t for run in analyze_runs(text) for t in run))


def descriptor(ot: ObjectType) -> str:
    """Text describing a type for phase 1: name, description, property names."""
    names = ", ".join(p["name"] for p in ot.properties)
    return f"{ot.name}. {ot.description} Properties: {names}"


def compact_type(ot: ObjectType, *, vectors_available: bool) -> dict[str, Any]:
    """The compact definition returned with nodes: id, name, key, properties with operators."""
    return {
        "id": ot.ot_id,
        "name": ot.name,
        "description": ot.description,
        "primaryKey": list(ot.primary_key),
        "conceptGroups": list(ot.concept_groups),
        "properties": [
            {
                "name": p["name"],
                "type": p["type"],
                "conditionOperations": condition_operations(p, vectors_available=vectors_available),
            }
            for p in ot.properties
        ],
    }


async def _type_relevance(
    store: OntologyStore, types: Sequence[ObjectType], query: str, qvec: np.ndarray | None
) -> dict[str, float]:
    cache = store.descriptor_vectors
    qterms = set(_terms(query))
    out = {}
    missing = [ot for ot in types if (ot.workspace_id, ot.kn_id, ot.ot_id, ot.generation) not in cache]
    if missing and qvec is not None and store.embedder is not None:
        vecs = await asyncio.to_thread(store.embedder.encode, [descriptor(ot) for ot in missing])
        for ot, v in zip(missing, vecs):
            cache[(ot.workspace_id, ot.kn_id, ot.ot_id, ot.generation)] = v
    for ot in types:
        cos = 0.0
        if qvec is not None:
            cos = float(np.dot(cache[(ot.workspace_id, ot.kn_id, ot.ot_id, ot.generation)], qvec))
        dterms = set(_terms(descriptor(ot)))
        lexical = len(qterms & dterms) / len(qterms) if qterms else 0.0
        out[ot.ot_id] = 0.5 * cos + 0.5 * lexical
    return out


async def _recall_type(
    store: OntologyStore,
    db: Database,
    workspace_id: str,
    ot: ObjectType,
    query: str,
    qvec: np.ndarray | None,
    use_vectors: bool,
    depth: int,
) -> tuple[TypeIndex, list[tuple[float, Fused, dict[str, Any]]]]:
    tindex = await store.type_index(db, workspace_id=workspace_id, kn_id=ot.kn_id, ot_id=ot.ot_id)
    legs: dict[str, list[str]] = {}
    jobs = []
    names = []
    text_props = [p["name"] for p in ot.properties if p.get("fullText")]
    if text_props:
        jobs.append(asyncio.to_thread(tindex.match, [text_field(n) for n in text_props], query))
        names.append("match")
    if use_vectors and qvec is not None:
        for p in ot.properties:
            if p.get("vector"):
                jobs.append(asyncio.to_thread(tindex.knn, p["name"], qvec, KNN_DEPTH))
                names.append(f"knn:{p['name']}")
    results = await asyncio.gather(*jobs)
    for name, hits in zip(names, results):
        order = sorted(hits, key=lambda pos: (-hits[pos], pos))
        legs[name] = [tindex.keys[pos] for pos in order[: MATCH_DEPTH if name == "match" else KNN_DEPTH]]
    n_legs = max(1, len(legs))
    position = {k: i for i, k in enumerate(tindex.keys)}
    qterms = set(_terms(query))
    type_terms = set(_terms(f"{ot.name} {ot.ot_id}"))
    scored = []
    for f in rrf(legs)[:CANDIDATES]:
        row = tindex.rows[position[f.id]]
        row_terms = set(_terms(" ".join(v for v in row.values() if isinstance(v, str))))
        coverage = len(qterms & (row_terms | type_terms)) / len(qterms) if qterms else 0.0
        scored.append((f.score / n_legs * (1.0 + COVERAGE_WEIGHT * coverage), f, row))
    scored.sort(key=lambda t: (-t[0], t[1].id))
    return tindex, scored[:depth]


async def semantic_recall(store: OntologyStore, db: Database, *, workspace_id: str, r: RecallRequest) -> RecallResult:
    """Run a semantic recall (see module doc).

    Raises:
        BadInput: option out of bounds. NotFound: unknown knowledge network.
    """
    check_request(r)
    async with db.session() as s:
        types = await store.types(s, workspace_id=workspace_id, kn_id=r.kn_id)
    by_id = {ot.ot_id: ot for ot in types}
    if r.object_types is not None:
        unknown = [i for i in r.object_types if i not in by_id]
        if unknown and len(unknown) == len(r.object_types):
            return RecallResult(message=f"none of objectTypes exist in {r.kn_id}: {', '.join(unknown)}")
        scope = [by_id[i] for i in r.object_types if i in by_id]
        note = f"unknown objectTypes ignored: {', '.join(unknown)}" if unknown else None
    else:
        scope, note = list(types), None
    if r.concept_groups:
        wanted = set(r.concept_groups)
        scope = [ot for ot in scope if wanted & set(ot.concept_groups)]
    if r.exclude_object_types:
        excluded = set(r.exclude_object_types)
        scope = [ot for ot in scope if ot.ot_id not in excluded]
    scope = [
        ot
        for ot in scope
        if any(p.get("fullText") or (p.get("vector") and store.vectors_available(ot)) for p in ot.properties)
    ]
    if not scope:
        return RecallResult(
            message="no object type in scope has a full-text or vector index; nothing to recall"
            + (f" ({note})" if note else "")
        )
    use_vectors = any(store.vectors_available(ot) for ot in scope)
    qvec = await store.encode_query(r.query) if use_vectors else None
    relevance = await _type_relevance(store, scope, r.query, qvec)
    chosen = sorted(scope, key=lambda ot: (-relevance[ot.ot_id], ot.ot_id))[: r.max_object_types]
    results = await asyncio.gather(
        *[
            _recall_type(
                store, db, workspace_id, ot, r.query, qvec, store.vectors_available(ot), r.max_instances_per_type
            )
            for ot in chosen
        ]
    )
    nodes: list[RecallNode] = []
    defs = {}
    for ot, (_tindex, fused) in zip(chosen, results):
        for score, f, row in fused:
            nodes.append(
                RecallNode(
                    object_type_id=ot.ot_id,
                    identity={k: row.get(k) for k in ot.primary_key},
                    properties=dict(row),
                    score=round(score * (1.0 + relevance[ot.ot_id]), 8),
                    matched_by=sorted(f.ranks),
                )
            )
            defs[ot.ot_id] = ot
    nodes.sort(key=lambda n: (-n.score, n.object_type_id, str(n.identity)))
    messages = [note] if note else []
    if r.rerank and nodes:
        reranker, why = await store.reranker()
        if reranker is None:
            messages.append(
                f"rerank requested but no cross-encoder is available ({why}); "
                "nodes keep the fused order (rerankerScore is null)"
            )
        else:
            texts = [" ".join(str(v) for v in n.properties.values() if isinstance(v, str)) for n in nodes]
            scores = await asyncio.to_thread(reranker.score, r.query, texts)
            for n, sc in zip(nodes, scores):
                n.reranker_score = float(sc)
            nodes.sort(key=lambda n: -(n.reranker_score or 0.0))
    if not nodes:
        messages.append(f"no instance of {', '.join(ot.ot_id for ot in chosen)} matches {r.query!r}")
    result = RecallResult(
        nodes=nodes,
        type_scores={ot.ot_id: round(relevance[ot.ot_id], 6) for ot in chosen},
        message="; ".join(messages) or None,
    )
    if r.include_object_types:
        result.object_types = [
            compact_type(defs[i], vectors_available=store.vectors_available(defs[i])) for i in sorted(defs)
        ]
    return result
