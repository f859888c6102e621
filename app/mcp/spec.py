"""What every MCP tool is made of: :class:`ToolSpec` (schema, validation, handler) and the
schema pieces and argument parsers the tool modules share.

Argument checks happen in two steps, in the order GraphQL applies them: the schema's
structural rules (types, required and unknown fields, enums) before authentication; the
operation's own validation (lengths, ranges, identifiers) after the scope check, so a
refusal for scope comes first and limits carry the GraphQL operation's ``field``/``limit``.
Range keywords of the schema (``minimum``, ``maxLength``, …) are checked last as a net.

A refusal's ``field`` is a path in the tool's own arguments (``budget.maxTokens``,
``filters[0].op``): the GraphQL operation's validation names its input object
(``input.budget.maxTokens``, ``plan.fields``), which a tool's arguments do not have, so
:meth:`ToolSpec.own_field` drops that prefix (the tool's ``field_prefix``) from every refusal
of the call, the operation's and the service's (:func:`app.mcp.governed.governed_call`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from cairn.app.context import RequestContext
from cairn.app.core.errors import BadInput
from cairn.app.governance import Principal
from cairn.app.interactions import TracedCall

_STRUCTURAL = {"type", "required", "additionalProperties", "enum", "const", "oneOf", "anyOf", "format"}


@dataclass(frozen=True)
class ToolSpec:
    """One MCP tool, governed as the registry operation ``mcp.<name>``.

    Attributes:
        name: The tool name clients call.
        description: For a model: what it returns, when to use it, one short example.
        input_schema: JSON Schema of the arguments (descriptions, units, limits).
        prepare: The GraphQL operation's validation over the arguments (raises its coded
            errors); returns the request handed to ``run``.
        run: ``(ctx, principal, request) -> JSON`` (one service call).
        output_schema: JSON Schema of a successful result's ``structuredContent`` (MCP
            ``outputSchema``; the SDK client checks results against it). Shallow on purpose:
            the keys a model reads, not every nested field, to keep ``tools/list`` small.
        field_prefix: The input path the GraphQL operation's errors name (``input.``,
            ``plan.``), dropped from refusals (:meth:`own_field`).
        read_only: False for tools with side effects (the MCP ``readOnlyHint``).
    """

    name: str
    description: str
    input_schema: dict[str, Any]
    prepare: Callable[[dict[str, Any]], Any]
    run: Callable[[RequestContext, Principal, Any], Awaitable[dict[str, Any]]]
    output_schema: dict[str, Any] | None = None
    field_prefix: str = ""
    read_only: bool = True

    @property
    def op_name(self) -> str:
        """The registry name of the tool's operation."""
        return f"mcp.{self.name}"

    def own_field(self, field: str) -> str:
        """A field path of the GraphQL operation's validation (``input.budget.maxTokens``) as a
        path in this tool's arguments (``budget.maxTokens``); other paths unchanged."""
        if self.field_prefix and field.startswith(self.field_prefix):
            return field[len(self.field_prefix) :]
        return field

    def _field(self, error: ValidationError) -> str:
        path = ""
        for part in error.absolute_path:
            path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
        name = ""
        if error.validator == "required":
            name = error.message.split("'")[1] if "'" in error.message else ""
        elif error.validator == "additionalProperties" and isinstance(error.instance, dict):
            known = set((error.schema or {}).get("properties", {})) if isinstance(error.schema, dict) else set()
            name = next((str(k) for k in error.instance if k not in known), "")
        if name:
            path = f"{path}.{name}" if path else name
        return path or "arguments"

    def _errors(self, arguments: dict[str, Any]) -> list[ValidationError]:
        validator = Draft202012Validator(self.input_schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
        return sorted(validator.iter_errors(arguments), key=lambda e: [str(p) for p in e.absolute_path])

    def check(self, arguments: dict[str, Any]) -> None:
        """Structural schema rules (before authentication).

        Raises:
            BadInput: the first violation, ``field`` naming its path.
        """
        for e in self._errors(arguments):
            if e.validator in _STRUCTURAL:
                raise BadInput(f"{self._field(e)}: {e.message}", field=self._field(e))

    def validate(self, arguments: dict[str, Any]) -> Any:
        """The operation's validation, then the schema's range rules; returns the request.

        Raises:
            BadInput (or the operation's own coded error): naming the field and the limit.
        """
        request = self.prepare(arguments)
        for e in self._errors(arguments):
            field = self._field(e)
            raise BadInput(f"{field}: {e.message}", field=field, limit=e.validator_value)
        return request


def string(description: str, *, max_len: int | None = None) -> dict[str, Any]:
    """A string argument; lengths are the operation's to check (its coded error names the limit)."""
    out: dict[str, Any] = {"type": "string", "description": description}
    if max_len is not None:
        out["maxLength"] = max_len
    return out


ID = {"type": "string"}

AS_OF = {
    "type": "object",
    "additionalProperties": False,
    "description": "Read as of a past time (ISO-8601 with zone; default now).",
    "properties": {
        "validTime": {"type": "string", "description": "True in the world then."},
        "systemTime": {"type": "string", "description": "As recorded then."},
    },
}


def parse_time(value: Any, field: str) -> datetime | None:
    if value is None:
        return None
    try:
        out = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        raise BadInput(f"{field} is not ISO-8601 (e.g. 2025-01-01T00:00:00Z)", field=field) from None
    if out.tzinfo is None:
        raise BadInput(f"{field} needs a timezone (e.g. 2025-01-01T00:00:00Z)", field=field)
    return out


def as_of_times(args: dict[str, Any], prefix: str = "") -> tuple[datetime | None, datetime | None]:
    as_of = args.get("asOf") or {}
    return parse_time(as_of.get("validTime"), f"{prefix}asOf.validTime"), parse_time(
        as_of.get("systemTime"), f"{prefix}asOf.systemTime"
    )


def traced_call(ctx: RequestContext, operation: str, args: dict[str, Any]) -> TracedCall:
    """A tool call as an ad-hoc traced call (no ``trace`` input; an ``X-Client-Invocation-Id``
    header over HTTP makes it idempotent), identified by the tool's registry name and arguments."""
    return TracedCall(operation=operation, trace=None, headers=ctx.headers, normalized_input=dict(sorted(args.items())))


# --- output schemas (MCP ``outputSchema``): shallow, the keys a model reads ---------------

STR: dict[str, Any] = {"type": "string"}
INT: dict[str, Any] = {"type": "integer"}
NUM: dict[str, Any] = {"type": "number"}
BOOL: dict[str, Any] = {"type": "boolean"}
ANY: dict[str, Any] = {}
"""A value whose type varies (or may be null): no keyword, so the client checks nothing."""


def obj(properties: dict[str, Any], *, required: tuple[str, ...] = ()) -> dict[str, Any]:
    """An object schema with ``properties`` (others allowed); ``required`` only where the
    result always has the key."""
    out: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        out["required"] = list(required)
    return out


OBJ: dict[str, Any] = {"type": "object"}
ARR: dict[str, Any] = {"type": "array"}
"""An array whose items the tool's description explains (item shapes would double the listing)."""
