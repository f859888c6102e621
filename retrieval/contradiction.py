"""Conservative contradiction flags between passages of one pack.

Two passages *contradict* when they state the same fact with different values: their
content words (lower-cased, numbers removed, stopwords removed) overlap strongly (Jaccard
≥ 0.6) while the numbers they state differ (both state at least one number and the sets
differ). This flags e.g. "Revenue in 2023 was 12 million" vs "Revenue in 2023 was 15
million", but not two passages that merely share a topic. It is a heuristic — precision
over recall — and never removes an item; it only sets the ``contradiction`` flag.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "has",
        "have",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "that",
        "the",
        "their",
        "this",
        "to",
        "was",
        "were",
        "which",
        "with",
    ]
)


@lru_cache(maxsize=16_384)
def _profile(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """Content words (lower-cased, stop words out) and numbers (thousands commas out) of ``text``;
    cached by text: packed passages recur from pack to pack."""
    words = frozenset(w.lower() for w in _WORD.findall(text) if w.lower() not in _STOP)
    numbers = frozenset(n.replace(",", "") for n in _NUMBER.findall(text))
    return words, numbers


def find_contradictions(items: Sequence[tuple[str, str]], *, min_overlap: float = 0.6) -> dict[str, set[str]]:
    """Pairs of items that state conflicting numbers about the same thing.

    Args:
        items: ``(id, text)`` in pack order.
        min_overlap: Jaccard threshold on content words.

    Returns:
        ``id -> {ids it contradicts}`` (symmetric); items without conflicts are absent.
    """
    profiles = [(i, *_profile(t)) for i, t in items]
    out: dict[str, set[str]] = {}
    for a in range(len(profiles)):
        ida, wa, na = profiles[a]
        if not na or len(wa) < 3:
            continue
        for b in range(a + 1, len(profiles)):
            idb, wb, nb = profiles[b]
            if not nb or na == nb or len(wb) < 3:
                continue
            small, large = sorted((len(wa), len(wb)))
            if small / large < min_overlap:
                continue
            if len(wa & wb) / len(wa | wb) >= min_overlap:
                out.setdefault(ida, set()).add(idb)
                out.setdefault(idb, set()).add(ida)
    return out
