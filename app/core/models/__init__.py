"""SQLModel tables: the source of truth. Whoosh and Qdrant are derived from these.

Time columns are timezone-aware UTC. Bitemporal documents: each :class:`DocumentVersion`
has a *valid time* interval ``[valid_from, valid_to)`` (when its content is true in the
world) and a *system time* ``recorded_at`` (when Cairn recorded it). A deletion is a
system-time fact (``Document.deleted_at``); rows are not physically removed.

One module per noun (identity, corpus, temporal, ontology, memory, decisions, fields,
curation); this package re-exports every table, and importing it registers them all with
``SQLModel.metadata`` (``migrations/env.py``).
"""

from cairn.app.core.models.corpus import (
    Collection,
    CorpusGeneration,
    Document,
    DocumentVersion,
    IndexChange,
    Passage,
    PassageVector,
    SharedValue,
    VersionPassage,
)
from cairn.app.core.models.curation import ContextGap, ContextSet, ContextSetEntry, ContextSetVersion, QueryTemplate
from cairn.app.core.models.decisions import AgentSession, Decision, DecisionIdempotency, SessionMessage
from cairn.app.core.models.fields import FieldDefinition, FieldExtraction, FieldLabel, FieldState, FieldValue
from cairn.app.core.models.identity import AgentCredential, ConfirmationRequest, Member, RateLimitCounter, Workspace
from cairn.app.core.models.memory import AgentMemory, MemoryCitation, MemoryTerm, MemoryWrite
from cairn.app.core.models.ontology import (
    KnowledgeNetwork,
    ObjectInstance,
    ObjectType,
    OperationReceipt,
    TraceInteraction,
)
from cairn.app.core.models.temporal import ReplayRecord, TemporalIndexedVersion, TemporalStatement

__all__ = [
    "AgentCredential",
    "AgentMemory",
    "AgentSession",
    "Collection",
    "ConfirmationRequest",
    "ContextGap",
    "ContextSet",
    "ContextSetEntry",
    "ContextSetVersion",
    "CorpusGeneration",
    "Decision",
    "DecisionIdempotency",
    "Document",
    "DocumentVersion",
    "FieldDefinition",
    "FieldExtraction",
    "FieldLabel",
    "FieldState",
    "FieldValue",
    "IndexChange",
    "KnowledgeNetwork",
    "Member",
    "MemoryCitation",
    "MemoryTerm",
    "MemoryWrite",
    "ObjectInstance",
    "ObjectType",
    "OperationReceipt",
    "Passage",
    "PassageVector",
    "QueryTemplate",
    "RateLimitCounter",
    "ReplayRecord",
    "SessionMessage",
    "SharedValue",
    "TemporalIndexedVersion",
    "TemporalStatement",
    "TraceInteraction",
    "VersionPassage",
    "Workspace",
]
