"""Document limits measured in one linear pass, fragments memoised.

A GraphQL document's *expanded* size (what execution would visit) can be exponential in its
text: ``fragment F1 on Query { ...F0 ...F0 }`` … ``query { ...F29 }`` is 2^30 selections in
a few hundred bytes. Limit checks that expand every spread (Strawberry's depth and alias
limiters) therefore cost exponential time themselves, before any resolver or credential
check runs. :func:`limit_errors` replaces them (run before graphql-core's rules, see
:mod:`resolvers.schema`): it computes, per fragment, the
expanded selection count, depth, alias count and ``contextPack`` field count once
(memoised), so the whole check is linear in the document size, and it reports every limit
that is exceeded with the limit's name and value.

Limits (per operation, after expanding fragments):
- selections ≤ :data:`MAX_SELECTIONS` (10,000; GraphiQL's full introspection query expands
  to a few hundred, the largest real query in the test suite to under 100);
- depth ≤ :data:`MAX_DEPTH` (12); aliases ≤ :data:`MAX_ALIASES` (30);
- ``contextPack``/``contextPackStream`` fields ≤ :data:`MAX_PACKS` (2: each may cost up to
  32,000 tokens of work).

Fragment cycles are left to graphql-core's ``NoFragmentCyclesRule`` (which reports them);
here a cycle only stops the expansion (it adds nothing).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    InlineFragmentNode,
    OperationDefinitionNode,
    SelectionSetNode,
)

MAX_SELECTIONS = 10_000
MAX_DEPTH = 12
MAX_ALIASES = 30
MAX_PACKS = 2
EXPENSIVE_FIELDS = frozenset({"contextPack", "contextPackStream"})


@dataclass(frozen=True)
class Cost:
    """Expanded measures of a selection set.

    Attributes:
        selections: Fields visited when every fragment spread is expanded.
        depth: Deepest field nesting as Strawberry's depth limiter measured it (a leaf field
            is 0, a field with a selection set is 1 + its deepest child; introspection
            ``__`` fields and what is under them are 0).
        aliases: Aliased fields after expansion.
        packs: ``contextPack``/``contextPackStream`` fields after expansion.
    """

    selections: int = 0
    depth: int = 0
    aliases: int = 0
    packs: int = 0

    def plus(self, other: Cost) -> Cost:
        """Sum of counts, max of depths (siblings)."""
        return Cost(
            self.selections + other.selections,
            max(self.depth, other.depth),
            self.aliases + other.aliases,
            self.packs + other.packs,
        )


T = TypeVar("T")

_CAP = MAX_SELECTIONS * 1000
"""Counts saturate here so that an exponential document never builds huge integers."""


def _saturate(cost: Cost) -> Cost:
    return Cost(min(cost.selections, _CAP), cost.depth, min(cost.aliases, _CAP), min(cost.packs, _CAP))


class FragmentFold(Generic[T]):
    """A per-document fold over selection sets with each fragment's value computed once.

    Subclasses give :meth:`fold` (the value of a selection set, calling :meth:`fragment` for
    spreads) and :meth:`empty` (the value of an unknown fragment or of a cycle: cycles add
    nothing here; graphql-core's ``NoFragmentCyclesRule`` reports them). Memoising per
    fragment keeps the work linear in the document size however often fragments are spread.

    Args:
        document: A parsed document.
    """

    def __init__(self, document: DocumentNode) -> None:
        self.fragments = {d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)}
        self._memo: dict[str, T] = {}
        self._active: set[str] = set()

    def empty(self) -> T:
        """The value of nothing (an unknown fragment, a cycle)."""
        raise NotImplementedError

    def fold(self, node: SelectionSetNode) -> T:
        """The value of one selection set."""
        raise NotImplementedError

    def fragment(self, name: str) -> T:
        """The value of fragment ``name`` (:meth:`empty` for an unknown name or a cycle)."""
        if name in self._memo:
            return self._memo[name]
        node = self.fragments.get(name)
        if node is None or name in self._active:
            return self.empty()
        self._active.add(name)
        try:
            value = self.fold(node.selection_set)
        finally:
            self._active.discard(name)
        self._memo[name] = value
        return value


class DocumentCost(FragmentFold[Cost]):
    """Memoised cost of the fragments of one document (linear in the document size)."""

    def empty(self) -> Cost:
        """No cost."""
        return Cost()

    def fold(self, node: SelectionSetNode) -> Cost:
        """The expanded cost of a selection set."""
        return self.selection_set(node)

    def selection_set(self, node: SelectionSetNode | None) -> Cost:
        """Expanded cost of a selection set."""
        total = Cost()
        if node is None:
            return total
        for sel in node.selections:
            if isinstance(sel, FieldNode):
                child = self.selection_set(sel.selection_set)
                # depth as Strawberry's limiter measured it: a leaf is 0, a field with a
                # selection set 1 + its deepest child, introspection (``__``) fields 0
                nested = sel.selection_set is not None and not sel.name.value.startswith("__")
                total = total.plus(
                    Cost(
                        1 + child.selections,
                        1 + child.depth if nested else 0,
                        child.aliases + (1 if sel.alias else 0),
                        child.packs + (1 if sel.name.value in EXPENSIVE_FIELDS else 0),
                    )
                )
            elif isinstance(sel, InlineFragmentNode):
                total = total.plus(self.selection_set(sel.selection_set))
            elif isinstance(sel, FragmentSpreadNode):
                total = total.plus(self.fragment(sel.name.value))
            total = _saturate(total)
        return total


def limit_errors(document: DocumentNode) -> list[str]:
    """Messages for every limit an operation of ``document`` exceeds (empty: within limits)."""
    cost = DocumentCost(document)
    errors: list[str] = []
    for op in document.definitions:
        if not isinstance(op, OperationDefinitionNode):
            continue
        c = cost.selection_set(op.selection_set)
        name = f"operation '{op.name.value}'" if op.name else "the operation"
        if c.selections > MAX_SELECTIONS:
            more = "over " if c.selections >= _CAP else ""
            errors.append(
                f"{name} selects {more}{c.selections:,} fields once fragments are expanded; the limit is "
                f"{MAX_SELECTIONS:,}: select fewer fields or spread fragments fewer times"
            )
        if c.depth > MAX_DEPTH:
            errors.append(f"{name} is {c.depth} fields deep; the depth limit is {MAX_DEPTH}")
        if c.aliases > MAX_ALIASES:
            errors.append(f"{name} uses {c.aliases} aliases; the limit is {MAX_ALIASES}")
        if c.packs > MAX_PACKS:
            errors.append(
                f"at most {MAX_PACKS} contextPack fields per request ({name} has {c.packs}); send separate requests"
            )
    return errors
