"""Static contract check (SPEC §9): the registry, the adapter and input validation agree.

:func:`contract_violations` returns human-readable violations (empty = compliant):
- every GraphQL root field carries exactly one :class:`app.governance.extension.Governed`
  extension, under a registry name equal to the field name and of the same kind;
- every resolver that takes arguments has a ``validate`` hook;
- every HTTP/WebSocket route of the app is registered (``METHOD path``);
- every registry entry is used, has a parseable and unique coordinate, and a capability of
  the form ``area:action``;
- every operation an agent may call declares its context-set binding
  (:mod:`app.governance.binding`); a REFUSED or NOT_APPLICABLE one says why, and each path a
  GraphQL field's binding names starts at one of the field's arguments;
- every responsibility profile given has all five lists.

MCP tools (``kind="mcp"``) are checked against the tool table by ``tests/graphql/test_mcp.py``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from starlette.applications import Starlette
from starlette.routing import Mount, Route, WebSocketRoute
from strawberry import Schema
from strawberry.types.base import get_object_definition
from strawberry.types.field import StrawberryField

from cairn.app.governance.binding import BindingRule
from cairn.app.governance.extension import Governed
from cairn.app.governance.operation import COORDINATE_RE, RATE_CLASSES
from cairn.app.governance.registry import PROFILE_LISTS, REGISTRY

_CAPABILITY_RE = re.compile(r"^[a-z_]+:[a-z_*]+$")


def _root_fields(schema: Schema) -> Iterable[tuple[str, str, StrawberryField]]:
    for kind, type_def in (
        ("query", schema.query),
        ("mutation", schema.mutation),
        ("subscription", schema.subscription),
    ):
        if type_def is None:
            continue
        definition = get_object_definition(type_def, strict=True)
        for f in definition.fields:
            yield kind, schema.config.name_converter.get_graphql_name(f), f


def contract_violations(
    schema: Schema, app: Starlette | None = None, profiles: Iterable[dict[str, Any]] = ()
) -> list[str]:
    """Check the schema (and optionally the Starlette app and profiles) against the registry.

    Args:
        schema: A Strawberry schema.
        app: A Starlette app whose routes must all be registered.
        profiles: Responsibility profiles to check for the five lists.

    Returns:
        Violations, one sentence each; ``[]`` when compliant.
    """
    problems: list[str] = []
    used: set[str] = set()
    for kind, name, f in _root_fields(schema):
        governed = [e for e in f.extensions if isinstance(e, Governed)]
        if not governed:
            problems.append(f"{kind} field {name} does not go through the adapter (no Governed extension)")
            continue
        if len(governed) > 1:
            problems.append(f"{kind} field {name} has {len(governed)} Governed extensions; exactly one is allowed")
        ext = governed[0]
        op_name = ext.op.name
        if op_name != name:
            problems.append(f"{kind} field {name} is governed as {op_name!r}; names must match")
        op = REGISTRY.get(op_name)
        if op is None:
            problems.append(f"{kind} field {name} is not in the registry")
            continue
        used.add(op_name)
        if op.kind != kind:
            problems.append(f"{name} is registered as {op.kind} but served as {kind}")
        if f.arguments and ext.validate is None:
            problems.append(f"{kind} field {name} takes arguments but has no validate hook")
        arg_names = {schema.config.name_converter.get_graphql_name(a) for a in f.arguments}
        for path in op.binding.paths if op.binding is not None else ():
            if path.split(".")[0] not in arg_names:
                problems.append(f"{kind} field {name}: binding path {path!r} names no argument of the field")
    if app is not None:
        for route in app.routes:
            if isinstance(route, WebSocketRoute):
                names = [f"WS {route.path}"]
            elif isinstance(route, Mount):
                names = [f"GET {route.path}/{{path}}"]
            elif isinstance(route, Route):
                names = [f"{m} {route.path}" for m in sorted(route.methods or []) if m != "HEAD"]
            else:  # a route of no path (e.g. a Host): nothing to register
                names = []
            for n in names:
                if n not in REGISTRY:
                    problems.append(f"route {n} is not registered")
                used.add(n)
    seen: dict[str, str] = {}
    for name, op in REGISTRY.items():
        if not COORDINATE_RE.match(op.coordinate):
            problems.append(f"{name}: unparseable coordinate {op.coordinate!r}")
        if op.coordinate in seen:
            problems.append(f"{name}: coordinate {op.coordinate} duplicates {seen[op.coordinate]}")
        seen[op.coordinate] = name
        if not op.capability or not _CAPABILITY_RE.match(op.capability):
            problems.append(f"{name}: missing or malformed capability {op.capability!r}")
        if op.auth == "required" and op.rate_class not in RATE_CLASSES:
            problems.append(f"{name}: rate class {op.rate_class!r} is not one of {list(RATE_CLASSES)}")
        if op.auth == "none" and op.rate_class is not None:
            problems.append(f"{name}: takes no credential, so it cannot have rate class {op.rate_class!r}")
        if op.agent_callable and op.binding is None:
            problems.append(
                f"{name}: agents may call it but it declares no context-set binding "
                "(binding=scoped(...)/refused(...)/not_applicable(...), app.governance.binding)"
            )
        if op.binding is not None and op.binding.rule is not BindingRule.SCOPED and not op.binding.reason:
            problems.append(f"{name}: a {op.binding.rule.value} binding must say why (reason)")
        if op.kind not in ("http", "mcp") and name not in used:
            problems.append(f"{name} is registered but no GraphQL field serves it")
        if app is not None and op.kind == "http" and name not in used:
            problems.append(f"{name} is registered but no route serves it")
    for i, profile in enumerate(profiles):
        missing = [k for k in PROFILE_LISTS if not isinstance(profile.get(k), list)]
        if missing:
            problems.append(f"profile #{i} lacks the list(s) {missing}")
    return problems
