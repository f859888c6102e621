"""The governance adapter as a Strawberry field extension: ``extensions=[Governed("x", validate=v)]``.

Every GraphQL root field declares its registry operation this way::

    @strawberry.field(description=..., extensions=[Governed("document", validate=_validate_read)])
    async def document(self, info: Info, id: strawberry.ID, principal: Principal) -> Document: ...

For each call, in order (steps of :mod:`app.governance.adapter`):

1. a :class:`~app.governance.envelope.CallRecord` is appended to the request's envelope;
2. :func:`~app.governance.adapter.authorize` authenticates, checks permissions, runs
   ``validate`` on the converted arguments (minus ``info``), counts the rate limit and
   evaluates the agent's responsibility boundary; a refusal becomes a coded GraphQL error
   (status ``REJECTED`` for boundaries and 401/403, else ``ERROR``) and is logged;
3. the resolver runs with ``principal`` filled in when it declares that parameter (it is
   never a GraphQL argument: :meth:`Governed.apply` removes it from the field);
4. its exceptions become coded GraphQL errors (``ERROR``/``REJECTED``); anything that is not a
   :class:`~app.core.errors.CairnError` becomes ``INTERNAL_SERVER_ERROR`` with the trace id;
5. :func:`~app.governance.adapter.log_call` runs exactly once per call — for a subscription
   (async-generator resolver) when its stream ends, however it ends; it also ends the call's
   trace span (started before step 2, current while the resolver runs) and counts the call in
   the metrics (:mod:`app.observability`).

The contract check (:mod:`app.governance.contract`) reads the ``Governed`` extension of each
root field: exactly one, named like the field, with ``validate`` when the field takes arguments.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Any

from strawberry.extensions import FieldExtension
from strawberry.extensions.field_extension import AsyncExtensionResolver
from strawberry.types import Info
from strawberry.types.field import StrawberryField

from cairn.app.core.errors import CairnError
from cairn.app.governance.adapter import authorize, log_call, mark_failed, start_call, to_graphql_error
from cairn.app.governance.envelope import CallRecord
from cairn.app.governance.operation import Operation
from cairn.app.governance.ports import RequestContextPort
from cairn.app.governance.registry import get_operation
from cairn.app.observability import use


class Governed(FieldExtension):
    """Run a root field's resolver through the governance adapter (see module doc).

    Args:
        op_name: The registry name; must equal the GraphQL field name (contract check).
            Unknown names raise ``KeyError`` when the resolver module is imported.
        validate: Called with the resolver's converted arguments (minus ``info``) before the
            resolver runs; raises :class:`~app.core.errors.BadInput`. Required when the field
            takes arguments (contract check).

    Raises:
        KeyError: ``op_name`` is not in the registry.
    """

    def __init__(self, op_name: str, *, validate: Callable[..., Any] | None = None) -> None:
        self.op: Operation = get_operation(op_name)
        self.validate = validate
        self.wants_principal = False

    def apply(self, field: StrawberryField) -> None:
        """Remove the resolver's ``principal`` parameter from the field's GraphQL arguments.

        Runs once per schema build (a test may build several schemas over the same types), so
        whether the resolver wants the principal is read from the resolver's own parameters,
        which this filter leaves untouched.
        """
        resolver = field.base_resolver
        self.wants_principal = resolver is not None and any(a.python_name == "principal" for a in resolver.arguments)
        field.arguments = [a for a in field.arguments if a.python_name != "principal"]

    async def resolve_async(self, next_: AsyncExtensionResolver, source: Any, info: Info, **kwargs: Any) -> Any:
        """Authorize, run the resolver, shape its errors and log the call once (module doc).

        Returns:
            The resolver's result; for an async-generator resolver, a generator that yields its
            items and logs the call when the stream ends.

        Raises:
            graphql.GraphQLError: with ``extensions.code``, for any refusal or failure.
        """
        ctx = info.context
        op = self.op
        record = CallRecord(op.name, op.coordinate, op.capability)
        ctx.envelope.calls.append(record)
        with use(start_call(ctx, record)):  # the call's trace span (no-op with tracing off)
            return await self._governed(record, next_, source, info, **kwargs)

    async def _governed(
        self, record: CallRecord, next_: AsyncExtensionResolver, source: Any, info: Info, **kwargs: Any
    ) -> Any:
        """Steps 2–5 of the module doc for one call, under its trace span."""
        ctx = info.context
        op = self.op
        try:
            principal, boundary = await authorize(ctx, op, {"info": info, **kwargs}, self.validate)
        except Exception as exc:  # noqa: BLE001 - every failure becomes a coded GraphQL error
            mark_failed(record, exc)
            if isinstance(exc, CairnError) and "boundary" in exc.extra:
                record.boundary = exc.extra["boundary"]
            log_call(ctx, record)
            raise to_graphql_error(ctx, exc) from None
        record.boundary = boundary
        if self.wants_principal:
            kwargs["principal"] = principal
        streaming = False
        try:
            result = next_(source, info, **kwargs)
            if inspect.isasyncgen(result):  # a subscription: its stream logs the call when it ends
                streaming = True
                return self._stream(ctx, record, result)
            return await result if inspect.isawaitable(result) else result
        except Exception as exc:  # noqa: BLE001 - every failure becomes a coded GraphQL error
            mark_failed(record, exc)
            raise to_graphql_error(ctx, exc) from None
        finally:
            if not streaming:
                log_call(ctx, record)

    @staticmethod
    async def _stream(
        ctx: RequestContextPort, record: CallRecord, agen: AsyncGenerator[Any, None]
    ) -> AsyncIterator[Any]:
        """Yield the subscription's items; shape its errors; close it and log the call once.

        The items are produced under the call's trace span (the stream outlives ``resolve_async``)."""
        try:
            with use(record.span):
                async for item in agen:
                    yield item
        except Exception as exc:  # noqa: BLE001 - every failure becomes a coded GraphQL error
            mark_failed(record, exc)
            raise to_graphql_error(ctx, exc) from None
        finally:
            try:
                await agen.aclose()
            finally:
                log_call(ctx, record)
