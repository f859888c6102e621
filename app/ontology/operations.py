"""Ontology services: one function per operation, ``fn(services, principal, request)``.

Each returns domain objects; the traced ones (object types, instances, semantic recall, load)
run under :func:`app.interactions.run_traced_call` and return ``(JSON result, receipt)``: the
result is what a replay returns, so its shape is the recorded one. The rules live in
:mod:`app.ontology.store`, :mod:`app.ontology.query`, :mod:`app.ontology.recall` and
:mod:`app.ontology.load`; the store is ``services.ontology``.

``services`` is the process's :class:`app.context.Services`, typed by the Protocols
:class:`app.governance.ServicesPort` and :class:`OntologyServices` (``app.context`` imports this
package, so it cannot be imported here).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from cairn.app.core.errors import BadInput
from cairn.app.governance import Principal, ServicesPort
from cairn.app.interactions import Receipt, TracedCall, run_traced_call
from cairn.app.ontology.load import list_networks, load_network
from cairn.app.ontology.mapping import allowed_source_dir, parse_mapping
from cairn.app.ontology.query import InstanceQuery, query_instances
from cairn.app.ontology.recall import RecallRequest, semantic_recall
from cairn.app.ontology.store import OntologyStore
from cairn.app.ontology.types import condition_operations

Traced = tuple[Any, Receipt | None]
"""``(JSON result, receipt or None)`` of a traced operation."""


class OntologyServices(ServicesPort, Protocol):
    """What the ontology operations use beyond :class:`~app.governance.ServicesPort`: the process's
    :class:`~app.ontology.store.OntologyStore`."""

    @property
    def ontology(self) -> OntologyStore: ...


@dataclass(frozen=True)
class NetworkInfo:
    """A knowledge network of the workspace."""

    kn_id: str
    name: str
    description: str
    generation: int
    loaded_at: datetime


@dataclass(frozen=True)
class ObjectTypesRequest:
    """Object types of one network."""

    kn_id: str
    call: TracedCall


@dataclass(frozen=True)
class InstancesRequest:
    """One objectInstances query."""

    query: InstanceQuery
    call: TracedCall


@dataclass(frozen=True)
class SemanticRecallRequest:
    """One semanticRecall."""

    recall: RecallRequest
    call: TracedCall


@dataclass(frozen=True)
class LoadRequest:
    """Load a network over the API: a YAML/JSON mapping text and CSV files, inline (name without
    ``.csv`` → content) or from ``source_dir`` under ``CAIRN_ONTOLOGY_SOURCE_DIRS``."""

    mapping: str
    call: TracedCall
    source_dir: str | None = None
    files: dict[str, str] | None = None


async def list_knowledge_networks(services: ServicesPort, principal: Principal) -> list[NetworkInfo]:
    """The caller's workspace's knowledge networks, by id."""
    async with services.db.session() as s:
        rows = await list_networks(s, workspace_id=principal.workspace_id)
    return [NetworkInfo(k.kn_id, k.name, k.description, k.generation, k.loaded_at) for k in rows]


def _type_json(ot: Any, store: Any) -> dict[str, Any]:
    available = store.vectors_available(ot)
    return {
        "id": ot.ot_id,
        "name": ot.name,
        "description": ot.description,
        "concept_groups": list(ot.concept_groups),
        "primary_key": list(ot.primary_key),
        "instance_count": ot.instance_count,
        "vector_model": ot.vector_model if available else None,
        "properties": [
            {
                "name": p["name"],
                "type": p["type"],
                "description": p.get("description", ""),
                "full_text_index": bool(p.get("fullText")),
                "vector_index": bool(p.get("vector")) and available,
                "condition_operations": condition_operations(p, vectors_available=available),
            }
            for p in ot.properties
        ],
    }


async def object_types(services: OntologyServices, principal: Principal, request: ObjectTypesRequest) -> Traced:
    """Object types of a network with their properties (snake_case keys, as recorded for replays).

    Raises:
        NotFound: no such network. Trace errors: :func:`app.interactions.run_traced_call`.
    """
    store = services.ontology

    async def run() -> list[dict[str, Any]]:
        async with services.db.session() as s:
            types = await store.types(s, workspace_id=principal.workspace_id, kn_id=request.kn_id)
        return [_type_json(ot, store) for ot in types]

    return await run_traced_call(services, principal, request.call, run)


async def object_instances(services: OntologyServices, principal: Principal, request: InstancesRequest) -> Traced:
    """One page of instances: ``{rows, totalCount, cursor, conditionSource, messages, filtersIgnored}``.

    Raises:
        BadInput / NotFound: see :func:`app.ontology.query.query_instances`.
    """
    q = request.query

    async def run() -> dict[str, Any]:
        page = await query_instances(services.ontology, services.db, workspace_id=principal.workspace_id, q=q)
        return {
            "rows": page.rows,
            "totalCount": page.total_count,
            "cursor": page.cursor,
            "conditionSource": page.condition_source,
            "messages": page.messages,
            "filtersIgnored": page.condition_source == "condition" and bool(q.filters),
        }

    return await run_traced_call(services, principal, request.call, run)


async def recall_instances(services: OntologyServices, principal: Principal, request: SemanticRecallRequest) -> Traced:
    """Semantic recall: ``{nodes, objectTypes, selected, message}`` (nodes with camelCase keys).

    Raises:
        BadInput / NotFound: see :func:`app.ontology.recall.semantic_recall`.
    """
    req = request.recall

    async def run() -> dict[str, Any]:
        r = await semantic_recall(services.ontology, services.db, workspace_id=principal.workspace_id, r=req)
        return {
            "nodes": [
                {
                    "objectTypeId": n.object_type_id,
                    "instanceIdentity": n.identity,
                    "properties": n.properties,
                    "score": n.score,
                    "rerankerScore": n.reranker_score,
                    "matchedBy": n.matched_by,
                }
                for n in r.nodes
            ],
            "objectTypes": r.object_types if req.include_object_types else None,
            "selected": r.type_scores,
            "message": r.message,
        }

    return await run_traced_call(services, principal, request.call, run)


async def load_knowledge_network(services: ServicesPort, principal: Principal, request: LoadRequest) -> Traced:
    """Load (or replace) a network from CSV files: ``{knId, generation, instances, embedded, vectorModel}``.

    Raises:
        BadInput: a non-CSV mapping source (SQL sources are loaded with ``cairn ontology load``),
            no files and no source dir, a source dir outside ``CAIRN_ONTOLOGY_SOURCE_DIRS``, or a
            bad mapping/CSV (:func:`app.ontology.load.load_network`).
    """
    settings = services.settings
    spec = parse_mapping(request.mapping)
    if spec.source.kind != "csv":
        raise BadInput(
            "over GraphQL a mapping may read CSV files only (source.kind: csv); SQL database sources "
            "are loaded by an operator with `cairn ontology load`",
            field="mapping.source.kind",
        )
    path = (
        allowed_source_dir(request.source_dir, settings.ontology_source_dirs)
        if request.source_dir is not None
        else None
    )
    if path is None and request.files is None:
        raise BadInput("give the CSV files inline (files) or a sourceDir", field="files")

    async def run() -> dict[str, Any]:
        rep = await load_network(
            services.db,
            services.indexes.embedder,
            workspace_id=principal.workspace_id,
            mapping=spec,
            source_dir=path,
            files=request.files,
            allowed_roots=settings.ontology_source_dirs,
        )
        return {
            "knId": rep.kn_id,
            "generation": rep.generation,
            "instances": rep.instances,
            "embedded": rep.embedded,
            "vectorModel": rep.vector_model,
        }

    return await run_traced_call(services, principal, request.call, run)
