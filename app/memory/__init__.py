"""Governed agent memory: remember/recall/forget, PII masking, candidates, ranking, cited-source
state, retention.

Public surface: other packages import only the names below (import-linter contract in
pyproject.toml).
"""

from cairn.app.memory.admin import (
    MAX_RETENTION,
    MIN_RETENTION,
    delete_all,
    purge_expired,
    purge_for_documents,
    set_settings,
)
from cairn.app.memory.candidates import memory_terms
from cairn.app.memory.operations import (
    MemorySettingsView,
    change_memory_settings,
    delete_all_memories,
    forget_memory,
    list_own_memories,
    memory_settings,
    recall_memories,
    remember_memory,
)
from cairn.app.memory.requests import (
    ForgetRequest,
    MemoryListQuery,
    MemoryNote,
    MemorySettingsChange,
    RecallQuery,
)
from cairn.app.memory.service import (
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
    "ForgetRequest",
    "MemoryListQuery",
    "MemoryNote",
    "MemorySettingsChange",
    "MemorySettingsView",
    "MemoryView",
    "RecallQuery",
    "change_memory_settings",
    "delete_all",
    "delete_all_memories",
    "forget",
    "forget_memory",
    "list_memories",
    "list_own_memories",
    "memory_settings",
    "memory_terms",
    "purge_expired",
    "purge_for_documents",
    "recall",
    "recall_memories",
    "remember",
    "remember_memory",
    "set_settings",
    "validate_fields",
]
