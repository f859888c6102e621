"""Memory tools: ``remember``, ``recall``, ``forget``: arguments → :mod:`app.memory.requests` (which validate
themselves, as for GraphQL) → the memory service → JSON."""

from __future__ import annotations

from typing import Any

from cairn.app import memory as mem
from cairn.app.context import RequestContext
from cairn.app.governance import Principal
from cairn.app.mcp.spec import ANY, ARR, ID, INT, OBJ, ToolSpec, obj, parse_time, string
from cairn.app.packs import Trust

# --- memory ------------------------------------------------------------------------------


def _memory(view: Any) -> dict[str, Any]:
    r = view.row
    return {
        "id": r.id,
        "namespace": r.namespace,
        "key": r.key,
        "text": r.text,
        "collectionId": r.collection_id,
        "version": r.version,
        "recordedAt": r.recorded_at.isoformat() if r.recorded_at else None,
        "supersededAt": r.superseded_at.isoformat() if r.superseded_at else None,
        "sourceState": view.source.state,
        "citations": [{"passageId": p, "passageSha256": h, "sourceState": st} for p, h, st in view.source.citations],
        "type": "memory",
        "evidence": False,
        "trust": Trust.UNTRUSTED.value,
    }


_REMEMBER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["namespace", "text"],
    "properties": {
        "namespace": string("A topic name, e.g. preferences (no personal data).", max_len=64),
        "text": string("The note; personal data is masked before storage.", max_len=1000),
        "key": string("A stable name: a later note with the same namespace and key replaces it.", max_len=120),
        "collectionId": {**ID, "description": "Tie the memory to a collection."},
        "citations": {
            "type": "array",
            "items": {"type": "string"},
            "maxItems": 20,
            "description": "Passage ids the note rests on.",
        },
    },
}


def _prepare_remember(args: dict[str, Any]) -> mem.MemoryNote:
    return mem.MemoryNote(
        namespace=args["namespace"],
        text=args["text"],
        key=args.get("key"),
        collection_id=args.get("collectionId"),
        citations=tuple(args.get("citations") or ()),
    )


async def _run_remember(ctx: RequestContext, principal: Principal, req: mem.MemoryNote) -> dict[str, Any]:
    out = await mem.remember_memory(ctx.services, principal, req)
    return {
        "memory": _memory(out.memory),
        "superseded": out.superseded,
        "masked": [{"kind": k, "count": n} for k, n in sorted(out.masked.items())],
    }


_RECALL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["query"],
    "properties": {
        "query": string("What to recall, in plain words.", max_len=1000),
        "namespace": string("Only this namespace.", max_len=64),
        "collectionId": {**ID, "description": "Only memories tied to this collection."},
        "asOf": {"type": "string", "description": "Recall as recorded at this time (ISO-8601 with zone)."},
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": mem.MAX_RECALL_LIMIT,
            "default": mem.RECALL_LIMIT,
            "description": "Most memories.",
        },
    },
}


def _prepare_recall(args: dict[str, Any]) -> mem.RecallQuery:
    return mem.RecallQuery(
        query=args["query"],
        namespace=args.get("namespace"),
        collection_id=args.get("collectionId"),
        as_of=parse_time(args.get("asOf"), "input.asOf"),
        limit=args.get("limit", mem.RECALL_LIMIT),
    )


async def _run_recall(ctx: RequestContext, principal: Principal, req: mem.RecallQuery) -> dict[str, Any]:
    out = await mem.recall_memories(ctx.services, principal, req)
    return {
        "memories": [
            {
                "memory": _memory(v),
                "score": score,
                "ranks": {"bm25": r.get("bm25"), "vector": r.get("vector"), "entity": r.get("entity")},
            }
            for v, score, r in out.items
        ],
        "hidden": out.hidden,
        "candidates": out.candidates,
        "legs": [{"name": lg.name, "status": lg.status, "detail": lg.detail, "ms": lg.ms} for lg in out.legs],
    }


_FORGET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "memoryId": {**ID, "description": "A memory id (deletes every version of its key)."},
        "namespace": string("The memory's namespace (with key).", max_len=64),
        "key": string("The memory's key (with namespace).", max_len=120),
    },
}


def _prepare_forget(args: dict[str, Any]) -> mem.ForgetRequest:
    return mem.ForgetRequest(memory_id=args.get("memoryId"), namespace=args.get("namespace"), key=args.get("key"))


async def _run_forget(ctx: RequestContext, principal: Principal, req: mem.ForgetRequest) -> dict[str, Any]:
    return {"deleted": await mem.forget_memory(ctx.services, principal, req)}


TOOLS = [
    ToolSpec(
        "remember",
        "Saves a private note about the user or the task for later conversations (personal data is masked); "
        "a note with the same namespace and key replaces the old one. Notes are never evidence. "
        'Example: {"namespace": "preferences", "key": "units", "text": "Prefers metric units."}',
        _REMEMBER_SCHEMA,
        _prepare_remember,
        _run_remember,
        obj({"memory": OBJ, "superseded": ANY}, required=("memory",)),
        field_prefix="input.",
        read_only=False,
    ),
    ToolSpec(
        "recall",
        "Your saved notes most relevant to a query, best first, with score. Use it at the start of a task to "
        'reuse what you learned before. Example: {"query": "preferred units"}',
        _RECALL_SCHEMA,
        _prepare_recall,
        _run_recall,
        obj({"memories": ARR}, required=("memories",)),
        field_prefix="input.",
    ),
    ToolSpec(
        "forget",
        "Deletes a note and all its earlier versions: give memoryId, or namespace and key. Returns deleted "
        '(versions removed). Example: {"memoryId": "mem_…"}',
        _FORGET_SCHEMA,
        _prepare_forget,
        _run_forget,
        obj({"deleted": INT}, required=("deleted",)),
        field_prefix="input.",
        read_only=False,
    ),
]
"""The tools of this module, in listing order."""
