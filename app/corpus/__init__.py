"""Collections, documents and their versions, passages, ingest, the search indexes (indexing and
crash repair) and as-of (valid time / system time) reads.

Public surface: other packages import only the names below (import-linter contract in
pyproject.toml).
"""

from cairn.app.corpus.as_of import (
    DocumentRead,
    VersionMeta,
    VersionView,
    choose_versions,
    deleted_by,
    read_document,
    visible_versions,
)
from cairn.app.corpus.changes import Cursor, shared_value
from cairn.app.corpus.documents import (
    MAX_MEDIA_TYPE_CHARS,
    delete_document,
    get_collection,
    get_or_create_collection,
    list_collections,
    upsert_document,
    validate_document_input,
)
from cairn.app.corpus.follower import ChangeFollower
from cairn.app.corpus.generation import read_generation
from cairn.app.corpus.indexing import SearchIndexes
from cairn.app.corpus.ingest import IngestReport, ingest_documents
from cairn.app.corpus.listing import (
    MAX_PAGE,
    DocumentListRequest,
    DocumentPage,
    DocumentSummary,
    InvalidDocumentCursor,
    PageSizeOutOfRange,
    validate_list_request,
)
from cairn.app.corpus.opening import IndexNeedsRebuild, open_indexes
from cairn.app.corpus.operations import (
    CitationRequest,
    CollectionInfo,
    CorpusServices,
    DocumentRequest,
    DocumentWrite,
    NewVersionHook,
    SectionRequest,
    create_collection,
    get_document,
    list_documents,
    read_passages,
    remove_document,
    verify_citation,
    workspace_collections,
    write_document,
)
from cairn.app.corpus.passages import (
    MAX_NEIGHBOURS,
    CitationCheck,
    PassageView,
    check_citation,
    read_section,
    span_sha256,
)
from cairn.app.corpus.sources import (
    SUPPORTED,
    SkippedFile,
    SourceDocument,
    is_supported,
    iter_sources,
    select_files,
    unsupported_reason,
)
from cairn.app.corpus.uploads import (
    MAX_UPLOAD_FILES,
    UploadedFile,
    UploadReport,
    UploadRequest,
    UploadResult,
    file_title,
    ingest_uploads,
    validate_upload_request,
)
from cairn.app.corpus.warmup import warm_models

__all__ = [
    "MAX_MEDIA_TYPE_CHARS",
    "MAX_NEIGHBOURS",
    "MAX_PAGE",
    "MAX_UPLOAD_FILES",
    "SUPPORTED",
    "ChangeFollower",
    "CitationCheck",
    "CitationRequest",
    "CollectionInfo",
    "CorpusServices",
    "Cursor",
    "DocumentListRequest",
    "DocumentPage",
    "DocumentRead",
    "DocumentRequest",
    "DocumentSummary",
    "DocumentWrite",
    "IndexNeedsRebuild",
    "IngestReport",
    "InvalidDocumentCursor",
    "NewVersionHook",
    "PageSizeOutOfRange",
    "PassageView",
    "SearchIndexes",
    "SectionRequest",
    "SkippedFile",
    "SourceDocument",
    "UploadReport",
    "UploadRequest",
    "UploadResult",
    "UploadedFile",
    "VersionMeta",
    "VersionView",
    "check_citation",
    "choose_versions",
    "create_collection",
    "delete_document",
    "deleted_by",
    "file_title",
    "get_collection",
    "get_document",
    "get_or_create_collection",
    "ingest_documents",
    "ingest_uploads",
    "is_supported",
    "iter_sources",
    "list_collections",
    "list_documents",
    "open_indexes",
    "read_document",
    "read_generation",
    "read_passages",
    "read_section",
    "remove_document",
    "select_files",
    "shared_value",
    "span_sha256",
    "unsupported_reason",
    "upsert_document",
    "validate_document_input",
    "validate_list_request",
    "validate_upload_request",
    "verify_citation",
    "visible_versions",
    "warm_models",
    "workspace_collections",
    "write_document",
]
