"""Context-set bindings (SPEC §1): how a credential bound to one context set is limited, per operation.

Every registered operation an agent may call declares a :class:`Binding` (the contract check
fails on one without); :func:`enforce_binding` applies it inside
:func:`~app.governance.adapter.authorize`, the one step every GraphQL field (HTTP and
WebSocket), HTTP route and MCP tool (HTTP and stdio) goes through. For a bound credential:

- ``REFUSED``: the whole operation is refused (403 ``AGENT_CONTEXT_SET_SCOPE_REFUSED``) — the
  ontology (knowledge networks are not part of any context set, so a set cannot name them);
- ``SCOPED``: each id the operation's arguments name at the declared paths must lie in the
  set's scope — a context set must be the bound one, a document or passage must be in the set
  (its collection whole, or the document itself), a collection must hold something of the set
  (``collections``; the handler then lists only the set's documents) or be wholly in it
  (``whole_collections``: learned fields, memories); anything else is refused before the
  handler runs. What the handler lists without an id (collections, context sets, facts,
  pack evidence) it limits to the set itself (``limited_by`` says how);
- ``NOT_APPLICABLE``: the operation reads no corpus content (identity, the registry, the
  caller's own decisions, sessions and gap reports) or is for members only.

An id that does not exist in the caller's workspace is left to the handler (its ``NOT_FOUND``),
so a bound credential learns nothing more than an unbound one.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlmodel import col

from cairn.app.core.errors import ContextSetScopeRefused
from cairn.app.core.models import Document, Passage
from cairn.app.governance.auth import Principal


class BindingRule(enum.Enum):
    """How a context-set binding applies to one operation (module doc)."""

    SCOPED = "scoped"
    REFUSED = "refused"
    NOT_APPLICABLE = "not_applicable"


@dataclass(frozen=True)
class Binding:
    """An operation's context-set binding policy (module doc).

    Paths are dotted keys into the call's arguments as :func:`authorize` receives them
    (GraphQL: the camelCase arguments, ``input.…`` inside input objects; HTTP routes:
    ``input.…`` over the JSON body; MCP tools: the tool's own argument names); a list value is
    checked item by item, and the refusal's ``field`` is the path with its indices.

    Attributes:
        rule: SCOPED, REFUSED or NOT_APPLICABLE.
        sets: Paths of context-set ids (must be the bound set).
        collections: Paths of collection ids that must hold something of the set.
        whole_collections: Paths of collection ids the set must hold whole.
        documents: Paths of document ids that must be in the set.
        passages: Paths of passage ids whose document must be in the set.
        limited_by: For SCOPED, how the handler limits what it returns without an id argument.
        reason: For REFUSED and NOT_APPLICABLE, why (shown in refusals and the registry).
    """

    rule: BindingRule
    sets: tuple[str, ...] = ()
    collections: tuple[str, ...] = ()
    whole_collections: tuple[str, ...] = ()
    documents: tuple[str, ...] = ()
    passages: tuple[str, ...] = ()
    limited_by: str = ""
    reason: str = ""

    @property
    def paths(self) -> tuple[str, ...]:
        """Every declared argument path."""
        return self.sets + self.collections + self.whole_collections + self.documents + self.passages


def scoped(
    *,
    sets: tuple[str, ...] = (),
    collections: tuple[str, ...] = (),
    whole_collections: tuple[str, ...] = (),
    documents: tuple[str, ...] = (),
    passages: tuple[str, ...] = (),
    limited_by: str = "",
) -> Binding:
    """A SCOPED binding (see :class:`Binding` for the arguments)."""
    return Binding(BindingRule.SCOPED, sets, collections, whole_collections, documents, passages, limited_by)


def refused(reason: str) -> Binding:
    """A REFUSED binding: bound credentials are refused the operation, for ``reason``."""
    return Binding(BindingRule.REFUSED, reason=reason)


def not_applicable(reason: str) -> Binding:
    """A NOT_APPLICABLE binding: the operation reads no corpus content, for ``reason``."""
    return Binding(BindingRule.NOT_APPLICABLE, reason=reason)


def _values(value: Any, parts: list[str], field: str) -> Iterator[tuple[str, str]]:
    """``(field, id)`` for every string at ``parts`` under ``value`` (lists item by item)."""
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from _values(item, parts, f"{field}[{i}]")
        return
    if not parts:
        if isinstance(value, str):
            yield field, value
        return
    if isinstance(value, dict) and value.get(parts[0]) is not None:
        yield from _values(value[parts[0]], parts[1:], f"{field}.{parts[0]}" if field else parts[0])


def _ids(arguments: dict[str, Any], paths: tuple[str, ...], mcp: bool) -> list[tuple[str, str]]:
    """``(field, id)`` pairs at ``paths``. An MCP tool's arguments arrive as ``{"input": …}``
    and its paths (and fields) are the tool's own argument names."""
    root = (arguments.get("input") or {}) if mcp else arguments
    return [pair for path in paths for pair in _values(root, path.split("."), "")]


def _refuse(principal: Principal, what: str, field: str, how: str = "outside its scope") -> ContextSetScopeRefused:
    return ContextSetScopeRefused(
        f"this credential is bound to context set {principal.context_set_id}; {what} (argument {field}) is {how}",
        field=field,
    )


def refused_outright(principal: Principal, op_name: str, binding: Binding | None) -> ContextSetScopeRefused | None:
    """The refusal a bound ``principal`` gets for ``op_name`` whatever its arguments, else None:
    an operation that declares no binding (fail closed) or a ``REFUSED`` one. The part of
    :func:`enforce_binding` that needs no arguments, so ``tools/list`` hides what every call
    would refuse (:func:`~app.governance.adapter.may_call`)."""
    if not principal.bound:
        return None
    if binding is None:
        return ContextSetScopeRefused(
            f"{op_name} declares no context-set binding, so a credential bound to context set "
            f"{principal.context_set_id} is refused it"
        )
    if binding.rule is BindingRule.REFUSED:
        return ContextSetScopeRefused(
            f"{op_name} is refused to a credential bound to context set {principal.context_set_id}: {binding.reason}"
        )
    return None


async def enforce_binding(
    db: Any, principal: Principal, op_name: str, op_kind: str, binding: Binding | None, arguments: dict[str, Any]
) -> None:
    """Apply ``binding`` to one call of ``op_name`` by ``principal`` (module doc).

    Unbound principals and members pass untouched. A bound credential calling an operation
    that declares no binding is refused (fail closed; the contract check reports it).

    Args:
        db: The :class:`~app.core.db.Database` (documents and passages are looked up, one
            query each, only when the call names some).
        arguments: The call's arguments as :func:`authorize` received them, normalised
            (:func:`~app.governance.adapter.normalized_arguments`: camelCase, inputs as dicts).

    Raises:
        ContextSetScopeRefused: 403 ``AGENT_CONTEXT_SET_SCOPE_REFUSED`` naming the field.
    """
    if not principal.bound:
        return
    outright = refused_outright(principal, op_name, binding)
    if outright is not None:
        raise outright
    if binding is None or binding.rule is BindingRule.NOT_APPLICABLE:
        return
    args, mcp = arguments, op_kind == "mcp"
    scope = principal.context_scope
    whole = scope.collection_ids if scope is not None else frozenset()
    visible = scope.visible_collection_ids if scope is not None else frozenset()
    for field, set_id in _ids(args, binding.sets, mcp):
        if set_id != principal.context_set_id:
            raise _refuse(principal, f"context set {set_id!r}", field)
    for field, cid in _ids(args, binding.collections, mcp):
        if cid not in visible:
            raise _refuse(principal, f"collection {cid!r}", field)
    for field, cid in _ids(args, binding.whole_collections, mcp):
        if cid not in whole:
            raise _refuse(principal, f"collection {cid!r}", field, "not wholly in its scope")
    docs = _ids(args, binding.documents, mcp)
    passages = _ids(args, binding.passages, mcp)
    if not docs and not passages:
        return
    async with db.session() as s:
        owner: dict[str, str] = {}
        if docs:
            rows = await s.execute(
                select(col(Document.id), col(Document.collection_id)).where(
                    Document.id.in_({d for _, d in docs}),  # type: ignore[attr-defined]
                    col(Document.workspace_id) == principal.workspace_id,
                )
            )
            owner = {r[0]: r[1] for r in rows.all()}
        located: dict[str, tuple[str, str]] = {}
        if passages:
            rows = await s.execute(
                select(col(Passage.id), col(Passage.document_id), col(Passage.collection_id)).where(
                    Passage.id.in_({p for _, p in passages}),  # type: ignore[attr-defined]
                    col(Passage.workspace_id) == principal.workspace_id,
                )
            )
            located = {r[0]: (r[1], r[2]) for r in rows.all()}
    for field, did in docs:
        if did in owner and not principal.may_read(owner[did], did):
            raise _refuse(principal, f"document {did!r}", field)
    for field, pid in passages:
        if pid in located and not principal.may_read(located[pid][1], located[pid][0]):
            raise _refuse(principal, f"passage {pid!r}", field)
