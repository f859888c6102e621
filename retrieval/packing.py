"""Fill a token budget with ranked items.

Method: greedy in rank order, not knapsack. Items are visited best first; each item that
still fits in the remaining budget is included, each that does not is skipped (and
reported), and the walk continues with the next items, which may be smaller and fit.
So a better-ranked item is never dropped to make room for worse-ranked ones: rank is
only ever traded for fit by skipping an item that cannot fit at that point. An optimal
knapsack could pack more tokens, but would reorder relevance for size.

With ``max_items`` the walk stops once that many items are included (a count limit, like
LangChain's ``k``): the rest are reported as ``over_count``, not as ``skipped``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class PackResult(Generic[T]):
    """Outcome of :func:`pack_greedy`.

    Attributes:
        included: Items that fit, in rank order.
        skipped: Items that did not fit when reached, in rank order.
        tokens_used: Sum of the included items' token counts (<= ``max_tokens``).
        over_count: Items not reached because ``max_items`` were already included, in rank order.
    """

    included: list[T] = field(default_factory=list)
    skipped: list[T] = field(default_factory=list)
    tokens_used: int = 0
    over_count: list[T] = field(default_factory=list)


def pack_greedy(
    items: Sequence[T], *, tokens: Callable[[T], int], max_tokens: int, max_items: int | None = None
) -> PackResult[T]:
    """Pack ranked items into ``max_tokens`` greedily in rank order (see module doc).

    Args:
        items: Items, best first.
        tokens: Token count of an item (``cl100k_base`` tokens in Cairn), >= 0.
        max_tokens: Budget in tokens, >= 0.
        max_items: At most this many included items, >= 1; None: no count limit.

    Returns:
        A :class:`PackResult`; ``included + skipped + over_count`` holds every item exactly once.

    Raises:
        ValueError: If ``max_tokens`` < 0, ``max_items`` < 1, or ``tokens`` returns a negative
            number or a non-integer.
    """
    if max_tokens < 0:
        raise ValueError(f"max_tokens must be >= 0, got {max_tokens}")
    if max_items is not None and max_items < 1:
        raise ValueError(f"max_items must be >= 1, got {max_items}")
    included: list[T] = []
    skipped: list[T] = []
    used = 0
    for n, item in enumerate(items):
        if max_items is not None and len(included) == max_items:
            return PackResult(included=included, skipped=skipped, tokens_used=used, over_count=list(items[n:]))
        cost = tokens(item)
        if isinstance(cost, bool) or not isinstance(cost, int) or cost < 0:
            raise ValueError(f"token count must be an int >= 0, got {cost!r}")
        if used + cost <= max_tokens:
            included.append(item)
            used += cost
        else:
            skipped.append(item)
    return PackResult(included=included, skipped=skipped, tokens_used=used)
