"""The one adapter: every operation goes through it.

GraphQL root fields declare ``extensions=[Governed("contextPack", validate=…)]``
(:class:`app.governance.extension.Governed`, which handles coroutine and async-generator
resolvers); each call then goes, in order:

1. the operation is looked up in the registry (coordinate, capability, scope);
2. the caller is authenticated (``UNAUTHENTICATED``, ``AGENT_BROWSER_REQUEST_REFUSED``,
   ``AGENT_CREDENTIAL_EXPIRED``/``REVOKED``);
3. permissions are checked (:func:`check_permissions`): members by role; agents by scope (``AGENT_SCOPE_MISSING``),
   member-only operations (``AGENT_OPERATION_NOT_ALLOWED``) and their creator's *current*
   role (``AGENT_CREDENTIAL_AUTHORITY_LOST``);
4. input is validated by the operation's ``validate`` callable (``BAD_USER_INPUT``), then a
   credential bound to a context set is held to the operation's binding
   (:mod:`app.governance.binding`; 403 ``AGENT_CONTEXT_SET_SCOPE_REFUSED``);
5. the call is counted against the credential's rate limit for the operation's class
   (:mod:`app.governance.rate_limits`; 429 ``RATE_LIMITED``);
6. agents' responsibility boundaries are evaluated (:mod:`app.governance.boundaries`);
7. the handler runs; its :class:`~app.core.errors.CairnError` become GraphQL errors with
   ``extensions.code``; anything else becomes ``INTERNAL_SERVER_ERROR`` with the trace id
   (details only in the log);
8. the call is recorded for the envelope (status OK / ERROR / REJECTED).

Handlers therefore contain only domain logic. HTTP routes use :func:`authorize` directly.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
import logging
import secrets
import time
from collections.abc import Callable
from datetime import date, datetime, timedelta
from typing import Any

from graphql import GraphQLError
from sqlalchemy import update
from sqlmodel import col
from starlette.responses import Response
from strawberry.types.unset import UnsetType
from strawberry.utils.str_converters import to_camel_case

from cairn.app.core.db import Database, rows_matched
from cairn.app.core.errors import CairnError, Forbidden, as_cairn_error, to_response
from cairn.app.core.ids import utcnow
from cairn.app.core.models import ConfirmationRequest
from cairn.app.governance.auth import Principal, require_scope
from cairn.app.governance.binding import enforce_binding, refused_outright
from cairn.app.governance.boundaries import Boundary, evaluate
from cairn.app.governance.envelope import CallRecord
from cairn.app.governance.operation import Operation
from cairn.app.governance.ports import RequestContextPort
from cairn.app.governance.rate_limits import subject_of
from cairn.app.governance.registry import REGISTRY
from cairn.app.observability import CHANNELS, end_operation, start_operation

log = logging.getLogger("cairn.adapter")

CONFIRMATION_HEADER = "x-cairn-confirmation"
CONFIRMATION_TTL = timedelta(minutes=10)


class Rejected(CairnError):
    """A responsibility boundary stopped the call (envelope status ``REJECTED``)."""

    http_status = 403


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {to_camel_case(f.name): _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def normalized_arguments(arguments: dict[str, Any]) -> dict[str, Any]:
    """Arguments as plain JSON (inputs → dicts, enums → values, UNSET dropped)."""
    out = {}
    for k, v in sorted(arguments.items()):
        if k == "info" or isinstance(v, UnsetType):
            continue
        out[to_camel_case(k)] = _plain(v)
    return out


def arguments_sha256(op_name: str, arguments: dict[str, Any]) -> str:
    """SHA-256 of the operation name plus its normalised arguments (confirmation binding)."""
    blob = json.dumps([op_name, normalized_arguments(arguments)], sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


async def _consume_confirmation(
    db: Database, token: str, credential_id: str, operation: str, digest: str, now: datetime
) -> bool:
    """Use a confirmation token once: ONE conditional UPDATE, committed before the handler runs.

    The row is marked used only if it is still unused, unexpired and bound to this credential,
    operation and input; the database evaluates that per row under its write lock, so of any
    number of concurrent calls presenting the token exactly one sees a row count of 1.

    Returns:
        True when this call consumed the token.
    """
    async with db.session() as s:
        res = await s.execute(
            update(ConfirmationRequest)
            .where(
                col(ConfirmationRequest.token) == token,
                col(ConfirmationRequest.used_at).is_(None),
                col(ConfirmationRequest.credential_id) == credential_id,
                col(ConfirmationRequest.operation) == operation,
                col(ConfirmationRequest.input_sha256) == digest,
                col(ConfirmationRequest.expires_at) > now,
            )
            .values(used_at=now)
        )
        return rows_matched(res) == 1


async def _boundary(
    ctx: RequestContextPort, op: Operation, principal: Principal, arguments: dict[str, Any]
) -> dict[str, Any]:
    decision = evaluate(op.capability, principal.profile)
    info: dict[str, Any] = {"decision": decision.boundary.value, "capability": op.capability, "reason": decision.reason}
    if decision.boundary is Boundary.ALLOWED:
        return info
    if decision.boundary is Boundary.BLOCKED:
        raise Rejected(
            f"blocked by this agent's responsibility profile: {op.capability} ({decision.reason}); "
            "nothing was executed",
            code="BOUNDARY_BLOCKED",
            boundary=info,
        )
    if decision.boundary is Boundary.SUGGEST_ONLY:
        raise Rejected(
            f"{op.capability} is suggest-only for this agent: here is the proposal; a human must "
            "perform it. Nothing was executed.",
            code="BOUNDARY_SUGGEST_ONLY",
            boundary=info,
            proposal={"operation": op.name, "capability": op.capability, "arguments": normalized_arguments(arguments)},
        )
    digest = arguments_sha256(op.name, arguments)
    presented = ctx.headers.get(CONFIRMATION_HEADER)
    if presented is None and ctx.connection_params:
        presented = ctx.connection_params.get("confirmation")
    now = utcnow()
    if not isinstance(presented, str) or not 1 <= len(presented) <= 64 or "\x00" in presented:
        presented = None  # cannot be a token we issued (and must not reach the database as such)
    if presented and await _consume_confirmation(ctx.services.db, presented, principal.id, op.name, digest, now):
        info["confirmed"] = True
        return info
    async with ctx.services.db.session() as s:
        token = f"cnf_{secrets.token_urlsafe(24)}"
        s.add(
            ConfirmationRequest(
                token=token,
                credential_id=principal.id,
                operation=op.name,
                input_sha256=digest,
                decision=decision.boundary.value,
                created_at=now,
                expires_at=now + CONFIRMATION_TTL,
            )
        )
    info.update(confirmationToken=token, expiresAt=(now + CONFIRMATION_TTL).isoformat())
    verb = "prefers to avoid" if decision.boundary is Boundary.AVOID else "must reconfirm before"
    raise Rejected(
        f"This agent {verb} '{op.capability}' ({decision.reason}). Nothing was executed. To go "
        f"ahead, repeat exactly the same call within 10 minutes with the header "
        f"'X-Cairn-Confirmation: {token}'.",
        code="BOUNDARY_RECONFIRMATION_REQUIRED",
        boundary=info,
    )


def check_permissions(principal: Principal, op: Operation) -> None:
    """Step 3 of the module doc: may ``principal`` call ``op`` at all (members by role; agents by
    scope, member-only operations and their creator's *current* role)?

    Raises:
        Forbidden: ``AGENT_OPERATION_NOT_ALLOWED``, ``AGENT_SCOPE_MISSING``,
            ``AGENT_CREDENTIAL_AUTHORITY_LOST`` or ``FORBIDDEN``.
    """
    if principal.is_agent:
        if op.scope is None:
            raise Forbidden(
                f"{op.name} is for workspace members, not agent credentials", code="AGENT_OPERATION_NOT_ALLOWED"
            )
        if op.scope != "*":
            require_scope(principal, op.scope)
            missing = op.permissions - principal.permissions
            if missing:
                raise Forbidden(
                    f"the member who created this credential no longer holds {sorted(missing)} "
                    f"(current role: {principal.role})",
                    code="AGENT_CREDENTIAL_AUTHORITY_LOST",
                )
    else:
        missing = op.permissions - principal.permissions
        if missing:
            raise Forbidden(
                f"{op.name} needs {sorted(missing)}; your role is {principal.role}", required=sorted(missing)
            )


def may_call(principal: Principal, op: Operation) -> bool:
    """True unless :func:`authorize` refuses every call of ``op`` by ``principal`` whatever its
    arguments: the permission step (:func:`check_permissions`), a context-set binding that
    refuses the operation outright (:func:`~app.governance.binding.refused_outright`) and an
    agent's ``BLOCKED`` boundary. What depends on the call (input, the ids a binding checks,
    rate limits, boundaries that ask for a confirmation) is left to :func:`authorize`. Used to
    list only the tools a credential may call (MCP ``tools/list``), with the same rule."""
    if op.auth == "none":
        return True
    try:
        check_permissions(principal, op)
    except CairnError:
        return False
    if refused_outright(principal, op.name, op.binding) is not None:
        return False
    return not (principal.is_agent and evaluate(op.capability, principal.profile).boundary is Boundary.BLOCKED)


async def authorize(
    ctx: RequestContextPort, op: Operation, arguments: dict[str, Any], validate: Callable[..., Any] | None = None
) -> tuple[Principal | None, dict[str, Any] | None]:
    """Steps 2–6 of the module doc for one call.

    Returns:
        ``(principal, boundary_info)``; principal is None for ``auth="none"`` operations.

    Raises:
        CairnError: the refusal, with its SPEC code.
    """
    if op.auth == "none":
        if validate:
            validate(**{k: v for k, v in arguments.items() if k != "info"})
        return None, None
    principal = await ctx.principal()
    check_permissions(principal, op)
    services = ctx.services
    await services.rate_limiter.check(services.db, subject_of(principal), op.rate_class)
    if validate:
        validate(**{k: v for k, v in arguments.items() if k != "info"})
    if principal.bound:  # the one place every channel applies the context-set binding
        await enforce_binding(services.db, principal, op.name, op.kind, op.binding, normalized_arguments(arguments))
    boundary = await _boundary(ctx, op, principal, arguments) if principal.is_agent else None
    return principal, boundary


DOCUMENT_RATE_CLASS = "reads"
"""The class a GraphQL document that runs no governed field counts against (:func:`meter_document`)."""


async def meter_document(ctx: RequestContextPort) -> None:
    """Count one call of the request's principal for a GraphQL document that runs no governed field.

    A governed root field counts itself when it runs (step 5 of the module doc); a document
    that selects only ``__typename`` or introspection, or that is refused before execution
    (document limits, validation), runs none, yet costs a parse and a validation: it counts
    one :data:`DOCUMENT_RATE_CLASS` call, so every authenticated request is metered whatever
    it selects. Called by the schema (:mod:`resolvers.schema`) for every transport.

    Raises:
        RateLimited: the principal is over its ``reads`` limit (429 ``RATE_LIMITED``).
        CairnError: authentication failed (the transports authenticate before the document
            is read, so this is the cached principal).
    """
    principal = await ctx.principal()
    services = ctx.services
    await services.rate_limiter.check(services.db, subject_of(principal), DOCUMENT_RATE_CLASS)


def to_graphql_error(ctx: RequestContextPort, exc: BaseException) -> GraphQLError:
    """Shape any exception as a GraphQL error with ``extensions.code`` (no stack traces)."""
    if isinstance(exc, GraphQLError):
        return exc
    known = as_cairn_error(exc)
    if known is not None:
        if known is not exc:  # an outage (full disk, database down): the cause stays in the log
            log.warning("%s: %s", known.code, exc, extra={"trace_id": ctx.trace_id})
        answer_unavailable(ctx.response, known)
        return GraphQLError(known.message, extensions=known.extensions(), original_error=known)
    _, extensions = to_response(exc)
    log.error("internal error", exc_info=exc, extra={"trace_id": ctx.trace_id})
    return GraphQLError(f"internal error; quote trace id {ctx.trace_id} when reporting it", extensions=extensions)


def answer_unavailable(response: Any, error: CairnError) -> None:
    """GraphQL over HTTP: a 503 error (an outage, :mod:`app.core.outages`) makes the whole
    response 503 with ``Retry-After`` (the error's ``retryAfter``), as on every other route, so a
    balancer or client backs off instead of reading a 200. ``response`` is the view's
    sub-response (Strawberry copies its status and headers); None elsewhere (WebSocket,
    MCP, the routes, which set the status themselves)."""
    if not isinstance(response, Response) or error.http_status != 503:
        return
    response.status_code = 503
    retry = error.extra.get("retryAfter")
    if retry is not None:
        response.headers["retry-after"] = str(retry)


def start_call(ctx: RequestContextPort, record: CallRecord) -> Any:
    """Start the call's trace span (``<channel> <operation>``, a child of the request's span;
    None with tracing off) and keep it on ``record``; :func:`log_call` ends it. Returns the
    span for :func:`app.observability.use`."""
    op = REGISTRY.get(record.operation)
    channel = CHANNELS.get(op.kind, op.kind) if op is not None else "http"
    record.span = start_operation(
        f"{channel} {record.operation}",
        {
            "cairn.channel": channel,
            "cairn.operation": record.operation,
            "cairn.coordinate": record.coordinate,
            "cairn.capability": record.capability,
        },
        ctx.trace_id,
    )
    return record.span


def mark_failed(record: CallRecord, exc: BaseException, status: str | None = None) -> None:
    """Record a failed call: envelope ``status`` (default :func:`status_of`) and the error's
    ``extensions.code`` (the one mapper, :func:`~app.core.errors.to_response`)."""
    record.status = status or status_of(exc)
    record.code = str(to_response(exc)[1].get("code", "INTERNAL_SERVER_ERROR"))


def log_call(ctx: RequestContextPort, record: CallRecord) -> None:
    """One structured line per operation call: operation, status, boundary, trace id, ms.

    Also the one observability hook of a call: ends its trace span (status, code) and counts it
    with its latency in ``services.telemetry`` (``cairn_calls_total`` and
    ``cairn_call_duration_seconds``; a no-op with metrics off).
    """
    elapsed = time.perf_counter() - ctx.started
    ms = round(elapsed * 1000, 2)
    if record.span is not None:
        end_operation(record.span, status=record.status, code=record.code, seconds=elapsed)
        record.span = None
    telemetry = ctx.services.telemetry
    if telemetry.metrics is not None:
        op = REGISTRY.get(record.operation)
        telemetry.record_call(
            kind=op.kind if op is not None else "http",
            operation=record.operation,
            status=record.status,
            code=record.code,
            seconds=elapsed,
        )
    log.info(
        "call %s %s",
        record.operation,
        record.status,
        extra={
            "trace_id": ctx.trace_id,
            "operation": record.operation,
            "coordinate": record.coordinate,
            "status": record.status,
            "boundary": (record.boundary or {}).get("decision"),
            "ms": ms,
        },
    )


def status_of(exc: BaseException) -> str:
    """Envelope status of a failed call: ``REJECTED`` for boundaries and 401/403, else ``ERROR``."""
    if isinstance(exc, Rejected):
        return "REJECTED"
    if isinstance(exc, CairnError) and exc.http_status in (401, 403):
        return "REJECTED"
    return "ERROR"
