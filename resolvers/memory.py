"""Governed agent memory (SPEC §7): Strawberry types and resolvers (rules in app.memory.service)."""

from __future__ import annotations

from datetime import datetime
from enum import Enum

import strawberry

from cairn.app import memory as mem
from cairn.app.governance import Governed, Principal
from cairn.app.memory import (
    ForgetRequest,
    MemoryListQuery,
    MemoryNote,
    MemorySettingsChange,
    MemorySettingsView,
    RecallQuery,
)
from cairn.resolvers.packs import Trust
from cairn.resolvers.types import Info


@strawberry.enum(
    description="CURRENT = every cited source unchanged; CHANGED = a cited passage changed or its document has a newer version."
)
class MemorySourceState(Enum):
    CURRENT = "CURRENT"
    CHANGED = "CHANGED"


@strawberry.type(
    description="A cited passage: its id and the SHA-256 recorded when the memory was written (never its text)."
)
class MemoryCitation:
    passage_id: strawberry.ID
    passage_sha256: str
    source_state: MemorySourceState


@strawberry.type(
    description="A private note kept for the member behind the credential. Never evidence: type 'memory', evidence false, trust UNTRUSTED; never used in packs. Text is PII-masked ([EMAIL_1], [PHONE_1] …)."
)
class Memory:
    id: strawberry.ID
    namespace: str
    key: str | None
    text: str
    collection_id: strawberry.ID | None
    version: int = strawberry.field(description="1 for the first version of a key, +1 per superseding remember.")
    recorded_at: datetime
    superseded_at: datetime | None
    source_state: MemorySourceState
    citations: list[MemoryCitation]
    type: str = strawberry.field(default="memory", description="Always 'memory'.")
    evidence: bool = strawberry.field(default=False, description="Always false: a memory is not evidence.")
    trust: Trust = Trust.UNTRUSTED


@strawberry.type(description="A kind of personal data masked in the text, with the number of distinct values.")
class MaskedCount:
    kind: str
    count: int


@strawberry.type
class RememberMemoryResult:
    memory: Memory
    superseded: int = strawberry.field(
        description="1 when this replaced the previous version of the same namespace + key, else 0."
    )
    masked: list[MaskedCount]


@strawberry.type(description="1-based rank of the memory in each ranking leg (null: not returned by that leg).")
class MemoryRanks:
    bm25: int | None
    vector: int | None
    entity: int | None


@strawberry.type
class RecalledMemory:
    memory: Memory
    score: float = strawberry.field(description="RRF score, Σ weight / (60 + rank).")
    ranks: MemoryRanks


@strawberry.type(description="A ranking leg: USED, or SKIPPED with the reason (e.g. the 800 ms vector budget).")
class RecallLeg:
    name: str
    status: str
    detail: str
    ms: float


@strawberry.type
class RecallMemoriesResult:
    memories: list[RecalledMemory]
    hidden: int = strawberry.field(
        description="Memories left out because a cited source is deleted, expired or unreadable."
    )
    candidates: int = strawberry.field(
        description="Memories ranked: the newest 300 at most of those matching the query by word or among the 100 most cosine-similar."
    )
    legs: list[RecallLeg]


@strawberry.type
class MemoryPage:
    memories: list[Memory]
    hidden: int
    next_cursor: str | None


@strawberry.type
class ForgetMemoryResult:
    deleted: int = strawberry.field(description="Versions deleted (every version of the key, or one with onlyVersion).")


@strawberry.type(description="The owner's memory settings of this workspace.")
class MemorySettings:
    enabled: bool = strawberry.field(description="'Let agents keep memories' (off by default).")
    retention_days: int = strawberry.field(description="1–365 days (default 90).")
    retaining: bool


@strawberry.type
class DeleteAllMemoriesResult:
    deleted: int


@strawberry.input
class RememberMemoryInput:
    namespace: str = strawberry.field(description="1–64 characters, no personal data.")
    text: str = strawberry.field(description="1–1,000 characters; personal data is masked before storage.")
    key: str | None = strawberry.field(
        default=None, description="≤ 120 characters, no personal data; same namespace + key supersedes."
    )
    collection_id: strawberry.ID | None = None
    citations: list[strawberry.ID] | None = strawberry.field(default=None, description="At most 20 passage ids.")


@strawberry.input
class RecallMemoriesInput:
    query: str = strawberry.field(description="1–1,000 characters.")
    namespace: str | None = None
    collection_id: strawberry.ID | None = None
    as_of: datetime | None = strawberry.field(
        default=None, description="Recall what was valid at this system time (ISO-8601 with zone)."
    )
    limit: int = strawberry.field(default=mem.RECALL_LIMIT, description="1–50.")


@strawberry.input
class ListMemoriesInput:
    namespace: str | None = None
    key: str | None = None
    collection_id: strawberry.ID | None = None
    as_of: datetime | None = None
    limit: int = strawberry.field(default=mem.LIST_LIMIT, description="1–100.")
    cursor: str | None = None
    all_versions: bool = strawberry.field(
        default=False, description="Superseded versions too (a key's history with namespace + key), newest first."
    )


@strawberry.input(description="Either memoryId, or namespace + key.")
class ForgetMemoryInput:
    memory_id: strawberry.ID | None = None
    namespace: str | None = None
    key: str | None = None
    only_version: bool = strawberry.field(
        default=False,
        description="With memoryId: delete that version only (deleting the current one makes the newest "
        "remaining version current again).",
    )


def to_memory(view: mem.MemoryView) -> Memory:
    """Service view → GraphQL memory."""
    r = view.row
    return Memory(
        id=strawberry.ID(r.id),
        namespace=r.namespace,
        key=r.key,
        text=r.text,
        collection_id=strawberry.ID(r.collection_id) if r.collection_id is not None else None,
        version=r.version,
        recorded_at=r.recorded_at,
        superseded_at=r.superseded_at,
        source_state=MemorySourceState(view.source.state),
        citations=[
            MemoryCitation(passage_id=strawberry.ID(p), passage_sha256=h, source_state=MemorySourceState(st))
            for p, h, st in view.source.citations
        ],
    )


def _remember_request(input: RememberMemoryInput) -> MemoryNote:
    return MemoryNote(
        namespace=input.namespace,
        text=input.text,
        key=input.key,
        collection_id=input.collection_id,
        citations=tuple(input.citations or ()),
    )


def _recall_request(input: RecallMemoriesInput) -> RecallQuery:
    return RecallQuery(
        query=input.query,
        namespace=input.namespace,
        collection_id=input.collection_id,
        as_of=input.as_of,
        limit=input.limit,
    )


def _list_request(input: ListMemoriesInput | None = None) -> MemoryListQuery:
    i = input or ListMemoriesInput()
    return MemoryListQuery(
        namespace=i.namespace,
        key=i.key,
        collection_id=i.collection_id,
        as_of=i.as_of,
        limit=i.limit,
        cursor=i.cursor,
        all_versions=i.all_versions,
    )


def _forget_request(input: ForgetMemoryInput) -> ForgetRequest:
    return ForgetRequest(
        memory_id=input.memory_id, namespace=input.namespace, key=input.key, only_version=input.only_version
    )


def _settings_request(enabled: bool | None = None, retention_days: int | None = None) -> MemorySettingsChange:
    return MemorySettingsChange(enabled=enabled, retention_days=retention_days)


def _settings(v: MemorySettingsView) -> MemorySettings:
    return MemorySettings(enabled=v.enabled, retention_days=v.retention_days, retaining=v.retaining)


@strawberry.type
class MemoryQuery:
    @strawberry.field(
        description="Rank your own memories for a query: BM25 + cosine (800 ms budget) + entities, RRF k=60 over the newest 300 matching (memory:read).",
        extensions=[Governed("recallMemories", validate=_recall_request)],
    )
    async def recall_memories(
        self, info: Info, input: RecallMemoriesInput, principal: Principal
    ) -> RecallMemoriesResult:
        out = await mem.recall_memories(info.context.services, principal, _recall_request(input))
        return RecallMemoriesResult(
            memories=[
                RecalledMemory(
                    memory=to_memory(v),
                    score=score,
                    ranks=MemoryRanks(bm25=r.get("bm25"), vector=r.get("vector"), entity=r.get("entity")),
                )
                for v, score, r in out.items
            ],
            hidden=out.hidden,
            candidates=out.candidates,
            legs=[RecallLeg(name=lg.name, status=lg.status, detail=lg.detail, ms=lg.ms) for lg in out.legs],
        )

    @strawberry.field(
        description="Your own memories, newest first (memory:read; members may always list their own).",
        extensions=[Governed("listMemories", validate=_list_request)],
    )
    async def list_memories(
        self, info: Info, principal: Principal, input: ListMemoriesInput | None = None
    ) -> MemoryPage:
        out = await mem.list_own_memories(info.context.services, principal, _list_request(input))
        return MemoryPage(memories=[to_memory(v) for v in out.items], hidden=out.hidden, next_cursor=out.next_cursor)

    @strawberry.field(
        description="The memory switch and retention of this workspace (owner).",
        extensions=[Governed("memorySettings")],
    )
    async def memory_settings(self, info: Info, principal: Principal) -> MemorySettings:
        return _settings(await mem.memory_settings(info.context.services, principal))


@strawberry.type
class MemoryMutation:
    @strawberry.mutation(
        description="Keep a note for the member behind this credential (memory:write). PII is masked first.",
        extensions=[Governed("rememberMemory", validate=_remember_request)],
    )
    async def remember_memory(
        self, info: Info, input: RememberMemoryInput, principal: Principal
    ) -> RememberMemoryResult:
        out = await mem.remember_memory(info.context.services, principal, _remember_request(input))
        return RememberMemoryResult(
            memory=to_memory(out.memory),
            superseded=out.superseded,
            masked=[MaskedCount(kind=k, count=n) for k, n in sorted(out.masked.items())],
        )

    @strawberry.mutation(
        description="Delete a memory and every version of its key (memory:write; members may always delete their own).",
        extensions=[Governed("forgetMemory", validate=_forget_request)],
    )
    async def forget_memory(self, info: Info, input: ForgetMemoryInput, principal: Principal) -> ForgetMemoryResult:
        n = await mem.forget_memory(info.context.services, principal, _forget_request(input))
        return ForgetMemoryResult(deleted=n)

    @strawberry.mutation(
        description="Owner: turn 'let agents keep memories' on/off and set retention (1–365 days).",
        extensions=[Governed("setMemorySettings", validate=_settings_request)],
    )
    async def set_memory_settings(
        self, info: Info, principal: Principal, enabled: bool | None = None, retention_days: int | None = None
    ) -> MemorySettings:
        request = _settings_request(enabled, retention_days)
        return _settings(await mem.change_memory_settings(info.context.services, principal, request))

    @strawberry.mutation(
        description="Owner: delete every memory of the workspace without reading any.",
        extensions=[Governed("deleteAllMemories")],
    )
    async def delete_all_memories(self, info: Info, principal: Principal) -> DeleteAllMemoriesResult:
        return DeleteAllMemoriesResult(deleted=await mem.delete_all_memories(info.context.services, principal))
