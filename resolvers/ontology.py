"""Ontology (SPEC §6): knowledge networks, object types, object instances, semantic recall,
loading, and trace interactions. Types and resolvers only; the rules live in
``app/ontology/*``, ``semantic_recall`` and ``trace``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import strawberry
from strawberry.scalars import JSON

from cairn.app import interactions as tracing
from cairn.app import ontology
from cairn.app.core.config import Settings
from cairn.app.core.errors import BadInput
from cairn.app.core.text_rules import validate_path
from cairn.app.governance import Governed, Principal
from cairn.app.ontology import (
    InstanceQuery,
    InstancesRequest,
    LoadRequest,
    ObjectTypesRequest,
    RecallRequest,
    SemanticRecallRequest,
    allowed_source_dir,
    check_identifier,
    check_request,
    check_shape,
    parse_mapping,
    toon_rows,
)
from cairn.resolvers.interactions import TraceInput, plain, receipt_of, trace_dict, traced_call
from cairn.resolvers.ontology_types import (
    MAX_INLINE_FILES,
    ConditionInput,
    CsvFileInput,
    FilterInput,
    KnowledgeNetworkInfo,
    LoadKnowledgeNetworkResult,
    ObjectInstancesResult,
    ObjectTypeDefinition,
    ObjectTypesResult,
    PropertyDefinition,
    RecallNode,
    ResponseFormat,
    SemanticRecallResult,
    SortInput,
)
from cairn.resolvers.types import Info


def _validate_kn(kn_id: str, trace: TraceInput | None = None, **_: Any) -> None:
    check_identifier(kn_id, "knId")
    tracing.check_trace(trace_dict(trace))


def _instance_query(
    kn_id: str,
    ot_id: str,
    filters: list[FilterInput] | None,
    condition: ConditionInput | None,
    limit: int,
    offset: int | None,
    cursor: str | None,
    sort: list[SortInput] | None,
    properties: list[str] | None,
) -> InstanceQuery:
    return InstanceQuery(
        kn_id=kn_id,
        ot_id=ot_id,
        condition=plain(condition) if condition is not None else None,
        filters=[plain(f) for f in filters] if filters is not None else None,
        limit=limit,
        offset=offset,
        cursor=cursor,
        sort=[{"field": s.field, "direction": s.direction.value} for s in sort] if sort else None,
        properties=properties,
    )


def _validate_instances(
    kn_id: str,
    ot_id: str,
    filters: list[FilterInput] | None = None,
    condition: ConditionInput | None = None,
    limit: int = 10,
    offset: int | None = None,
    cursor: str | None = None,
    sort: list[SortInput] | None = None,
    properties: list[str] | None = None,
    response_format: ResponseFormat | None = None,
    search_after: JSON | None = None,
    trace: TraceInput | None = None,
) -> None:
    _validate_kn(kn_id, trace)
    check_identifier(ot_id, "otId")
    if search_after is not None:
        raise BadInput(
            "searchAfter is no longer accepted (it was silently ignored before); page with the "
            "opaque cursor of the previous response, or with offset",
            field="searchAfter",
        )
    if sort is not None and len(sort) == 0:
        raise BadInput("sort takes 1–8 keys (omit it for the default order)", field="sort")
    check_shape(_instance_query(kn_id, ot_id, filters, condition, limit, offset, cursor, sort, properties))


def _validate_recall(
    kn_id: str,
    query: str,
    concept_groups: list[str] | None = None,
    object_types: list[str] | None = None,
    exclude_object_types: list[str] | None = None,
    max_object_types: int = 10,
    max_instances_per_type: int = 5,
    rerank: bool = False,
    include_object_types: bool = True,
    response_format: ResponseFormat | None = None,
    trace: TraceInput | None = None,
) -> None:
    _validate_kn(kn_id, trace)
    check_request(
        RecallRequest(
            kn_id=kn_id,
            query=query,
            concept_groups=concept_groups,
            object_types=object_types,
            exclude_object_types=exclude_object_types,
            max_object_types=max_object_types,
            max_instances_per_type=max_instances_per_type,
        )
    )


def _validate_load(
    mapping: str,
    source_dir: str | None = None,
    files: list[CsvFileInput] | None = None,
    trace: TraceInput | None = None,
) -> None:
    tracing.check_trace(trace_dict(trace))
    if source_dir is not None:
        validate_path(source_dir, "sourceDir")
    if source_dir is not None and files is not None:
        raise BadInput("give sourceDir or files, not both", field="files")
    if files is not None:
        if not 1 <= len(files) <= MAX_INLINE_FILES:
            raise BadInput(f"files lists 1–{MAX_INLINE_FILES} CSV files", field="files", limit=MAX_INLINE_FILES)
        for i, f in enumerate(files):
            if not f.name.endswith(".csv"):
                raise BadInput(f"files[{i}].name must end with .csv", field=f"files[{i}].name")
            check_identifier(f.name[:-4], f"files[{i}].name (without .csv)")
    parse_mapping(mapping)


def _allowed_dir(settings: Settings, source_dir: str) -> Path:
    """The real path of ``sourceDir`` under ``CAIRN_ONTOLOGY_SOURCE_DIRS`` (links resolved), or BadInput."""
    return allowed_source_dir(source_dir, settings.ontology_source_dirs)


@strawberry.type
class OntologyQuery:
    @strawberry.field(description="Knowledge networks of your workspace.", extensions=[Governed("knowledgeNetworks")])
    async def knowledge_networks(self, info: Info, principal: Principal) -> list[KnowledgeNetworkInfo]:
        rows = await ontology.list_knowledge_networks(info.context.services, principal)
        return [
            KnowledgeNetworkInfo(
                id=k.kn_id, name=k.name, description=k.description, generation=k.generation, loaded_at=k.loaded_at
            )
            for k in rows
        ]

    @strawberry.field(
        description="Object types of a knowledge network with properties and their conditionOperations.",
        extensions=[Governed("objectTypes", validate=_validate_kn)],
    )
    async def object_types(
        self, info: Info, kn_id: str, principal: Principal, trace: TraceInput | None = None
    ) -> ObjectTypesResult:
        request = ObjectTypesRequest(kn_id=kn_id, call=traced_call(info, "objectTypes", trace, {"knId": kn_id}))
        result, receipt = await ontology.object_types(info.context.services, principal, request)
        return ObjectTypesResult(
            kn_id=kn_id,
            receipt=receipt_of(receipt),
            object_types=[
                ObjectTypeDefinition(**{**t, "properties": [PropertyDefinition(**p) for p in t["properties"]]})
                for t in result
            ],
        )

    @strawberry.field(
        description="Instances of one object type: filters or condition, sort, cursor/offset paging. "
        "Without sort the order has no meaning: 'top N' needs sort.",
        extensions=[Governed("objectInstances", validate=_validate_instances)],
    )
    async def object_instances(
        self,
        info: Info,
        kn_id: str,
        ot_id: str,
        principal: Principal,
        filters: list[FilterInput] | None = None,
        condition: ConditionInput | None = None,
        limit: int = 10,
        offset: int | None = None,
        cursor: str | None = None,
        sort: list[SortInput] | None = None,
        properties: list[str] | None = None,
        response_format: ResponseFormat = ResponseFormat.JSON,
        search_after: Annotated[
            JSON | None, strawberry.argument(description="Refused (legacy): page with cursor.")
        ] = None,
        trace: TraceInput | None = None,
    ) -> ObjectInstancesResult:
        q = _instance_query(kn_id, ot_id, filters, condition, limit, offset, cursor, sort, properties)
        args = {
            "knId": kn_id,
            "otId": ot_id,
            "filters": q.filters,
            "condition": q.condition,
            "limit": limit,
            "offset": offset,
            "cursor": cursor,
            "sort": q.sort,
            "properties": properties,
            "responseFormat": response_format.value,
        }

        request = InstancesRequest(query=q, call=traced_call(info, "objectInstances", trace, args))
        result, receipt = await ontology.object_instances(info.context.services, principal, request)
        toon = response_format is ResponseFormat.TOON
        return ObjectInstancesResult(
            rows=None if toon else result["rows"],
            toon=toon_rows(result["rows"]) if toon else None,
            response_format=response_format,
            total_count=result["totalCount"],
            cursor=result["cursor"],
            condition_source=result["conditionSource"],
            filters_ignored=result["filtersIgnored"],
            messages=result["messages"],
            receipt=receipt_of(receipt),
        )

    @strawberry.field(
        description="One natural-language query → relevant instances across object types "
        "(phase 1 picks types, phase 2 fuses knn and match by RRF).",
        extensions=[Governed("semanticRecall", validate=_validate_recall)],
    )
    async def semantic_recall(
        self,
        info: Info,
        kn_id: str,
        query: str,
        principal: Principal,
        concept_groups: list[str] | None = None,
        object_types: list[str] | None = None,
        exclude_object_types: list[str] | None = None,
        max_object_types: int = 10,
        max_instances_per_type: int = 5,
        rerank: bool = False,
        include_object_types: bool = True,
        response_format: ResponseFormat = ResponseFormat.JSON,
        trace: TraceInput | None = None,
    ) -> SemanticRecallResult:
        req = RecallRequest(
            kn_id=kn_id,
            query=query,
            concept_groups=concept_groups,
            object_types=object_types,
            exclude_object_types=exclude_object_types,
            max_object_types=max_object_types,
            max_instances_per_type=max_instances_per_type,
            rerank=rerank,
            include_object_types=include_object_types,
        )

        args = {k: plain(v) for k, v in req.__dict__.items()} | {"responseFormat": response_format.value}
        request = SemanticRecallRequest(recall=req, call=traced_call(info, "semanticRecall", trace, args))
        result, receipt = await ontology.recall_instances(info.context.services, principal, request)
        toon = response_format is ResponseFormat.TOON
        nodes = [
            RecallNode(
                object_type_id=n["objectTypeId"],
                instance_identity=n["instanceIdentity"],
                properties=n["properties"],
                score=n["score"],
                reranker_score=n["rerankerScore"],
                matched_by=n["matchedBy"],
            )
            for n in result["nodes"]
        ]
        return SemanticRecallResult(
            nodes=None if toon else nodes,
            toon=toon_rows(result["nodes"]) if toon else None,
            object_types=result["objectTypes"],
            selected_object_types=result["selected"],
            message=result["message"],
            receipt=receipt_of(receipt),
        )


@strawberry.type
class OntologyMutation:
    @strawberry.mutation(
        description="Load (or replace) a knowledge network from a YAML/JSON mapping and CSV files "
        "(inline files, or sourceDir under CAIRN_ONTOLOGY_SOURCE_DIRS). Members only.",
        extensions=[Governed("loadKnowledgeNetwork", validate=_validate_load)],
    )
    async def load_knowledge_network(
        self,
        info: Info,
        mapping: str,
        principal: Principal,
        source_dir: str | None = None,
        files: list[CsvFileInput] | None = None,
        trace: TraceInput | None = None,
    ) -> LoadKnowledgeNetworkResult:
        args = {
            "mapping": mapping,
            "sourceDir": source_dir,
            "files": {f.name: tracing.input_sha256("file", {"c": f.content}) for f in files or []},
        }
        request = LoadRequest(
            mapping=mapping,
            call=traced_call(info, "loadKnowledgeNetwork", trace, args),
            source_dir=source_dir,
            files={f.name[:-4]: f.content for f in files} if files is not None else None,
        )
        result, receipt = await ontology.load_knowledge_network(info.context.services, principal, request)
        return LoadKnowledgeNetworkResult(
            kn_id=result["knId"],
            generation=result["generation"],
            instances=result["instances"],
            embedded=result["embedded"],
            vector_model=result["vectorModel"],
            receipt=receipt_of(receipt),
        )
