"""What every MCP tool is made of: :class:`ToolSpec` (schema, validation, handler) and the
schema pieces and argument parsers the tool modules share.

Argument checks happen in two steps, in the order GraphQL applies them: the schema's
structural rules (types, required and unknown fields, enums) before authentication; the
operation's own validation (lengths, ranges, identifiers) after the scope check, so a
refusal for scope comes first and limits carry the GraphQL operation's ``field``/``limit``.
Range keywords of the schema (``minimum``, ``maxLength``, …) are checked last as a net.
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

_STRUCTURAL = {"type", "required", "additionalProperties", "enum", "const", "oneOf", "anyOf", "format"}


@dataclass(frozen=True)
class ToolSpec:
    """One MCP tool, governed as the registry operation ``mcp.<name>``.

    Attributes:
        name: The tool name clients call.
        description: What it does, its scope, and how to read its result.
        input_schema: JSON Schema of the arguments (descriptions, units, limits).
        prepare: The GraphQL operation's validation over the arguments (raises its coded
            errors); returns the request handed to ``run``.
        run: ``(ctx, principal, request) -> JSON`` (one service call).
        field_prefix: The GraphQL input path the operation's errors name (``input.``).
        read_only: False for tools with side effects (the MCP ``readOnlyHint``).
    """

    name: str
    description: str
    input_schema: dict[str, Any]
    prepare: Callable[[dict[str, Any]], Any]
    run: Callable[[RequestContext, Principal, Any], Awaitable[dict[str, Any]]]
    field_prefix: str = ""
    read_only: bool = True

    @property
    def op_name(self) -> str:
        """The registry name of the tool's operation."""
        return f"mcp.{self.name}"

    def _field(self, error: ValidationError) -> str:
        path = ""
        for part in error.absolute_path:
            path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
        if error.validator == "required":
            missing = error.message.split("'")[1] if "'" in error.message else ""
            path = f"{path}.{missing}" if path else missing
        full = f"{self.field_prefix}{path}" if path else self.field_prefix.rstrip(".") or "arguments"
        return full

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


def string(description: str, *, min_len: int = 1, max_len: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "string", "description": description, "minLength": min_len}
    if max_len is not None:
        out["maxLength"] = max_len
    return out


ID = {"type": "string", "minLength": 1, "maxLength": 200}

AS_OF = {
    "type": "object",
    "additionalProperties": False,
    "description": "Bitemporal read point; both default to now.",
    "properties": {
        "validTime": {
            "type": "string",
            "description": "When the content must be true in the world (ISO-8601 with zone, e.g. 2025-01-01T00:00:00Z).",
        },
        "systemTime": {
            "type": "string",
            "description": "What Cairn had recorded by then (ISO-8601 with zone).",
        },
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
