"""Context sets (SPEC §4, issue 13): curated, versioned sets of approved entries (verified
answers, definitions, instructions, required evidence) with a scope of collections and
documents; library reads by word match; the set-first part of context packs; credential binding; replay
VERIFY of a pack's set items.

Public surface: other packages import only the names below (import-linter contract in
pyproject.toml).
"""

from cairn.app.contextsets.errors import ContextSetLimit, ContextSetNameTaken
from cairn.app.contextsets.importer import import_context_sets
from cairn.app.contextsets.library import (
    AnswerHit,
    DefinitionHit,
    validate_list,
    validate_lookup,
    validate_match,
)
from cairn.app.contextsets.loading import active_set, check_set_access
from cairn.app.contextsets.operations import (
    ContextSetVersionsRequest,
    CreateContextSetRequest,
    GetContextSetRequest,
    ListContextSetsRequest,
    LookupDefinitionsRequest,
    MatchVerifiedAnswersRequest,
    UpdateContextSetRequest,
    context_set_versions,
    create_context_set,
    get_context_set,
    list_context_sets,
    lookup_definitions,
    match_verified_answers,
    update_context_set,
)
from cairn.app.contextsets.packing import SetItem, SetPlan, plan_set
from cairn.app.contextsets.types import (
    KINDS,
    READ_LIMIT_DEFAULT,
    READ_LIMIT_MAX,
    ContextSetView,
    ContextSetWrite,
    DefinitionInput,
    Entry,
    EvidenceRef,
    VerifiedAnswerInput,
    VersionView,
    validate_limit,
    validate_write,
)
from cairn.app.contextsets.verify import EntryCheck, RecordedEntry, check_entries

__all__ = [
    "KINDS",
    "READ_LIMIT_DEFAULT",
    "READ_LIMIT_MAX",
    "AnswerHit",
    "ContextSetLimit",
    "ContextSetNameTaken",
    "ContextSetVersionsRequest",
    "ContextSetView",
    "ContextSetWrite",
    "CreateContextSetRequest",
    "DefinitionHit",
    "DefinitionInput",
    "Entry",
    "EntryCheck",
    "EvidenceRef",
    "GetContextSetRequest",
    "ListContextSetsRequest",
    "LookupDefinitionsRequest",
    "MatchVerifiedAnswersRequest",
    "RecordedEntry",
    "SetItem",
    "SetPlan",
    "UpdateContextSetRequest",
    "VerifiedAnswerInput",
    "VersionView",
    "active_set",
    "check_entries",
    "check_set_access",
    "context_set_versions",
    "create_context_set",
    "get_context_set",
    "import_context_sets",
    "list_context_sets",
    "lookup_definitions",
    "match_verified_answers",
    "plan_set",
    "update_context_set",
    "validate_limit",
    "validate_list",
    "validate_lookup",
    "validate_match",
    "validate_write",
]
