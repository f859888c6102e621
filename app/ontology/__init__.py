"""Knowledge networks: mapping files, loading, the in-memory store, instance queries and semantic
recall.

Public surface: other packages import only the names below (import-linter contract in
pyproject.toml).
"""

from cairn.app.ontology.load import list_networks, load_network
from cairn.app.ontology.mapping import allowed_source_dir, parse_mapping, read_mapping_file
from cairn.app.ontology.operations import (
    InstancesRequest,
    LoadRequest,
    NetworkInfo,
    ObjectTypesRequest,
    SemanticRecallRequest,
    list_knowledge_networks,
    load_knowledge_network,
    object_instances,
    object_types,
    recall_instances,
)
from cairn.app.ontology.query import InstanceQuery, check_shape, query_instances, toon_rows
from cairn.app.ontology.recall import RecallRequest, check_request, semantic_recall
from cairn.app.ontology.store import OntologyStore
from cairn.app.ontology.types import check_identifier, condition_operations

__all__ = [
    "InstanceQuery",
    "InstancesRequest",
    "LoadRequest",
    "NetworkInfo",
    "ObjectTypesRequest",
    "OntologyStore",
    "RecallRequest",
    "SemanticRecallRequest",
    "allowed_source_dir",
    "check_identifier",
    "check_request",
    "check_shape",
    "condition_operations",
    "list_knowledge_networks",
    "list_networks",
    "load_knowledge_network",
    "load_network",
    "object_instances",
    "object_types",
    "parse_mapping",
    "query_instances",
    "read_mapping_file",
    "recall_instances",
    "semantic_recall",
    "toon_rows",
]
