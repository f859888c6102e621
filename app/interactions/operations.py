"""Interaction services: ``fn(services, principal, request)``; they open their own sessions.

:func:`run_traced_call` is what capability services (ontology) use to run one operation under
the trace/idempotency rules of :mod:`app.interactions.service`.

``services`` is the process's :class:`app.context.Services` (not imported: ``app.context``
imports this package).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from cairn.app.governance import Principal, ServicesPort
from cairn.app.interactions.service import Receipt, run_traced, start_interaction


@dataclass(frozen=True)
class TracedCall:
    """One call of a traced operation, as its caller identifies it.

    Attributes:
        operation: The operation name (``objectTypes``, …).
        trace: The ``trace`` input as ``{"conversationId", "interactionId"}`` or None (ad hoc).
        headers: Request headers, lower-case names (``X-Client-Invocation-Id`` is read from them).
        normalized_input: The call's arguments as plain JSON, ``trace`` excluded (its identity).
    """

    operation: str
    trace: dict[str, Any] | None
    headers: dict[str, str]
    normalized_input: dict[str, Any]


@dataclass(frozen=True)
class InteractionInfo:
    """A new interaction: the ids a client puts in ``trace`` inputs."""

    conversation_id: str
    interaction_id: str
    created_at: datetime


async def run_traced_call(
    services: ServicesPort, principal: Principal, call: TracedCall, run: Callable[[], Awaitable[Any]]
) -> tuple[Any, Receipt | None]:
    """Run ``run()`` for ``call`` under :func:`app.interactions.service.run_traced`.

    Returns:
        ``(JSON result, receipt or None)``; a replay returns the recorded result without running.

    Raises:
        BadInput / NotFound: bad trace context. Conflict: invocation id reused or in progress.
    """
    return await run_traced(
        services.db,
        workspace_id=principal.workspace_id,
        principal_id=principal.id,
        operation=call.operation,
        trace=call.trace,
        headers=call.headers,
        normalized_input=call.normalized_input,
        run=run,
    )


async def open_interaction(
    services: ServicesPort, principal: Principal, conversation_id: str | None = None
) -> InteractionInfo:
    """Issue a new interaction (in a new conversation unless ``conversation_id`` is given).

    Raises:
        NotFound: ``conversation_id`` was not issued to the caller's workspace.
    """
    row = await start_interaction(
        services.db, workspace_id=principal.workspace_id, principal_id=principal.id, conversation_id=conversation_id
    )
    return InteractionInfo(row.conversation_id, row.interaction_id, row.created_at)
