"""Collections, documents and their versions, passages, ingest, the search indexes (indexing and
crash repair) and as-of (valid time / system time) reads.

Public surface: other packages import only the names below (import-linter contract in
pyproject.toml).
"""

from app.corpus.as_of import DocumentRead, VersionMeta, choose_versions, read_document
from app.corpus.documents import (
    delete_document,
    get_collection,
    get_or_create_collection,
    list_collections,
    upsert_document,
    validate_document_input,
)
from app.corpus.indexing import SearchIndexes, open_indexes
from app.corpus.ingest import IngestReport, SkippedFile, SourceDocument, ingest_documents, iter_sources
from app.corpus.operations import (
    CollectionInfo,
    DocumentRequest,
    DocumentWrite,
    NewVersionHook,
    create_collection,
    get_document,
    remove_document,
    workspace_collections,
    write_document,
)

__all__ = [
    "CollectionInfo",
    "DocumentRead",
    "DocumentRequest",
    "DocumentWrite",
    "IngestReport",
    "NewVersionHook",
    "SearchIndexes",
    "SkippedFile",
    "SourceDocument",
    "VersionMeta",
    "choose_versions",
    "create_collection",
    "delete_document",
    "get_collection",
    "get_document",
    "get_or_create_collection",
    "ingest_documents",
    "iter_sources",
    "list_collections",
    "open_indexes",
    "read_document",
    "remove_document",
    "upsert_document",
    "validate_document_input",
    "workspace_collections",
    "write_document",
]
