"""How often one response name is selected in one selection set, fragments merged, in linear time.

graphql-core's ``OverlappingFieldsCanBeMergedRule`` compares every pair of fields that share
a response name in a selection set (spreads and inline fragments merged in), so its work
grows with the square of the repeats: ``{ viewer { kind } viewer { kind } … }`` with 300
repeats (3.9 KB, within every other limit) took 220 ms of validation on the event loop,
450 repeats 560 ms. Nothing a client writes repeats a field that often — fragments that
each ask for ``id`` or ``__typename`` repeat it once per fragment, and a document has at
most 2,000 tokens — so more than :data:`MAX_REPEATS` repeats is refused before the rule
runs, which bounds its pair comparisons to ``MAX_REPEATS`` per field.

:func:`repeat_errors` counts, for every selection set of every definition, the fields per
response name, merging inline fragments and fragment spreads (each fragment's counts are
computed once and reused; a cycle adds nothing — graphql-core reports cycles).
"""

from __future__ import annotations

from collections import Counter

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    InlineFragmentNode,
    OperationDefinitionNode,
    SelectionSetNode,
)

from cairn.resolvers.limits import FragmentFold

MAX_REPEATS = 50
_CAP = 1_000_000
"""Counts saturate here so that doubling spreads never build huge integers."""


class _Repeats(FragmentFold[Counter[str]]):
    def empty(self) -> Counter[str]:
        return Counter()

    def fold(self, node: SelectionSetNode) -> Counter[str]:
        return self.merged(node)

    def merged(self, node: SelectionSetNode) -> Counter[str]:
        """Fields per response name in ``node`` with its fragments merged in (saturated)."""
        counts: Counter[str] = Counter()
        for sel in node.selections:
            if isinstance(sel, FieldNode):
                counts[(sel.alias or sel.name).value] += 1
                continue
            if isinstance(sel, InlineFragmentNode):
                inner = self.merged(sel.selection_set)
            elif isinstance(sel, FragmentSpreadNode):
                inner = self.fragment(sel.name.value)
            else:  # pragma: no cover - graphql-core has no other selection kind
                continue
            for key, n in inner.items():
                counts[key] = min(counts[key] + n, _CAP)
        return counts


def repeat_errors(document: DocumentNode) -> list[str]:
    """One message naming the most repeated response name over :data:`MAX_REPEATS` (or none).

    Raises:
        RecursionError: fragments or inline fragments nested beyond the interpreter's stack
            (the caller refuses such a document).
    """
    repeats = _Repeats(document)
    worst: tuple[int, str] = (0, "")
    for definition in document.definitions:
        if not isinstance(definition, (OperationDefinitionNode, FragmentDefinitionNode)):
            continue
        stack = [definition.selection_set]
        while stack:
            node = stack.pop()
            counts = repeats.merged(node)
            if counts:
                key, n = max(counts.items(), key=lambda kv: kv[1])
                worst = max(worst, (n, key))
            for sel in node.selections:
                if isinstance(sel, (FieldNode, InlineFragmentNode)) and sel.selection_set is not None:
                    stack.append(sel.selection_set)
    n, key = worst
    if n <= MAX_REPEATS:
        return []
    more = "over " if n >= _CAP else ""
    return [
        f"'{key}' is selected {more}{n:,} times in one selection set once fragments are merged; "
        f"the limit is {MAX_REPEATS}: select each field once"
    ]
