"""Governed agent memory: remember/recall/forget, PII masking, candidates, ranking, cited-source
state, retention.

Public surface: other packages import only the names below (import-linter contract in
pyproject.toml).
"""

from app.memory.admin import MAX_RETENTION, MIN_RETENTION, delete_all, purge_expired, purge_for_documents, set_settings
from app.memory.service import (
    LIST_LIMIT,
    MAX_LIST_LIMIT,
    MAX_RECALL_LIMIT,
    RECALL_LIMIT,
    MemoryView,
    forget,
    list_memories,
    recall,
    remember,
    validate_fields,
)

__all__ = [
    "LIST_LIMIT",
    "MAX_LIST_LIMIT",
    "MAX_RECALL_LIMIT",
    "MAX_RETENTION",
    "MIN_RETENTION",
    "RECALL_LIMIT",
    "MemoryView",
    "delete_all",
    "forget",
    "list_memories",
    "purge_expired",
    "purge_for_documents",
    "recall",
    "remember",
    "set_settings",
    "validate_fields",
]
