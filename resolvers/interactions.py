"""Trace interactions (SPEC §6 "Trace context"): ``startInteraction``, the ``trace`` input,
operation receipts, and the helper that runs an operation under trace/idempotency rules."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import strawberry

from cairn.app import interactions as tracing
from cairn.app.core.text_rules import validate_identifier
from cairn.app.governance import Governed, Principal, normalized_arguments
from cairn.resolvers.types import Info


@strawberry.input(description="Trace context from startInteraction: both ids, or omit it (ad hoc).")
class TraceInput:
    conversation_id: str | None = None
    interaction_id: str | None = None


@strawberry.type(
    description="What the server recorded for a managed (trace) or idempotent (X-Client-Invocation-Id) call."
)
class OperationReceipt:
    id: str
    operation: str
    conversation_id: str | None
    interaction_id: str | None
    invocation_id: str | None
    input_sha256: str
    replayed: bool = strawberry.field(description="True: a retry; the recorded result was returned, nothing ran again.")
    recorded_at: datetime


@strawberry.type
class Interaction:
    conversation_id: str
    interaction_id: str
    created_at: datetime


def plain(value: Any) -> Any:
    """Inputs → plain JSON (camelCase keys, enum values), as the adapter normalises arguments."""
    return normalized_arguments({"v": value}).get("v")


def receipt_of(r: tracing.Receipt | None) -> OperationReceipt | None:
    """Service receipt → GraphQL receipt (None stays None)."""
    return OperationReceipt(**r.__dict__) if r else None


def trace_dict(trace: TraceInput | None) -> dict[str, Any] | None:
    """The ``trace`` input as a plain dict (None when absent)."""
    return None if trace is None else {"conversationId": trace.conversation_id, "interactionId": trace.interaction_id}


def traced_call(info: Info, op: str, trace: TraceInput | None, args: dict[str, Any]) -> tracing.TracedCall:
    """The call of operation ``op`` for :func:`app.interactions.run_traced_call`: its trace, the
    request headers (``X-Client-Invocation-Id``) and its arguments as plain JSON (its identity)."""
    return tracing.TracedCall(
        operation=op,
        trace=trace_dict(trace),
        headers=info.context.headers,
        normalized_input={k: plain(v) for k, v in sorted(args.items())},
    )


def _validate_start(conversation_id: str | None = None) -> None:
    if conversation_id is not None:
        validate_identifier(conversation_id, "conversationId", 40)


@strawberry.type
class TraceMutation:
    @strawberry.mutation(
        description="Open an interaction: server-issued conversationId + interactionId for trace inputs.",
        extensions=[Governed("startInteraction", validate=_validate_start)],
    )
    async def start_interaction(
        self, info: Info, principal: Principal, conversation_id: str | None = None
    ) -> Interaction:
        row = await tracing.open_interaction(info.context.services, principal, conversation_id)
        return Interaction(
            conversation_id=row.conversation_id, interaction_id=row.interaction_id, created_at=row.created_at
        )
