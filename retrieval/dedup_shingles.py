"""Shingle profiles of texts, for :mod:`retrieval.dedup`: units, the shingle sets of a whole
text and of each of its lines (cached by text), Jaccard resemblance, line coverage, and the
prefix-filter prefixes of shingle sets. The method and its measurements are in
:mod:`retrieval.dedup`'s module doc."""

from __future__ import annotations

import math
import re
import unicodedata
from functools import lru_cache

SHINGLE_SIZE = 3
DEFAULT_THRESHOLD = 0.8
DEFAULT_MIN_LINE_UNITS = 8

_CJK_CLASS = (
    "\u1100-\u11ff\u3005-\u3007\u3040-\u309f\u30a0-\u30fa\u30fc-\u30ff\u3130-\u318f"
    "\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0003134f"
)
_UNIT = re.compile(rf"[{_CJK_CLASS}]|[^\W{_CJK_CLASS}]+")


def units(text: str) -> list[str]:
    """Return the normalised units of ``text``: non-CJK words and single CJK characters.

    Args:
        text: Any string.

    Returns:
        Units in text order, NFKC-normalised and case-folded.
    """
    return _UNIT.findall(unicodedata.normalize("NFKC", text).casefold())


def _ngrams(seq: list[str], n: int) -> frozenset[tuple[str, ...]]:
    """Runs of ``n`` consecutive units; one run of all units if fewer than ``n``."""
    if not seq:
        return frozenset()
    if len(seq) < n:
        return frozenset({tuple(seq)})
    return frozenset(zip(*(seq[i:] for i in range(n))))


def shingles(text: str, n: int = SHINGLE_SIZE) -> frozenset[str]:
    """Return the shingle set of ``text``: runs of ``n`` consecutive units.

    Args:
        text: Any string.
        n: Units per shingle, >= 1.

    Returns:
        Shingles joined by ``" "``; one shingle of all units if fewer than ``n``;
        empty for text without word characters.

    Raises:
        ValueError: If ``n`` < 1.
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    return frozenset(" ".join(run) for run in _ngrams(units(text), n))


@lru_cache(maxsize=8_192)
def _profile(text: str) -> tuple[frozenset, tuple[tuple[frozenset, int], ...]]:
    """Shingle keys of the whole text and of each line, from one pass over its units.

    Units never span a line break, so the whole text's units are its lines' units in
    order. Cached by text: the same passages recur across packs (8,192 texts, ~100 packs of
    distinct candidates; ~27 KB a 200-word SciFact abstract with its prefixes: ~220 MB at most).
    """
    lines, seq = [], []
    for line in text.splitlines():
        line_units = units(line)
        if line_units:
            lines.append((_ngrams(line_units, SHINGLE_SIZE), len(line_units)))
            seq.extend(line_units)
    if len(lines) == 1:
        return lines[0][0], tuple(lines)
    return _ngrams(seq, SHINGLE_SIZE), tuple(lines)


def shingle_keys(text: str) -> frozenset:
    """:func:`shingles` as unit tuples (units hold no spaces, so joining is one-to-one),
    without building joined strings — about 3× faster. Cached by text (see :func:`_profile`)."""
    return _profile(text)[0]


def line_keys(text: str) -> tuple[tuple[frozenset, int], ...]:
    """The lines of ``text`` (split at line breaks, ``str.splitlines``) that hold units.

    Returns:
        One ``(shingle set as unit tuples, number of units)`` per such line, in text
        order. The unit counts sum to ``len(units(text))`` (no unit spans a line break).
        Cached by text (see :func:`_profile`).
    """
    return _profile(text)[1]


def coverage(
    item_text: str, kept_text: str, threshold: float = DEFAULT_THRESHOLD, min_line_units: int = DEFAULT_MIN_LINE_UNITS
) -> tuple[float, int]:
    """Coverage of ``item_text`` by ``kept_text``, computed directly (method: :mod:`retrieval.dedup`).

    Args:
        item_text: The text that might be collapsed.
        kept_text: The text that might keep it.
        threshold: Line Jaccard needed for a line to count as matched, in (0, 1].
        min_line_units: Fewest units of a line that can match (shorter lines of either
            text never match).

    Returns:
        ``(share of the item's units in matched lines, number of those units)``;
        ``(0.0, 0)`` for an item without units.
    """
    item_lines = line_keys(item_text)
    total = sum(n for _, n in item_lines)
    covered = _covered(item_lines, line_keys(kept_text), threshold, min_line_units)
    return (covered / total if total else 0.0), covered


def _covered(
    item_lines: tuple[tuple[frozenset, int], ...],
    kept_lines: tuple[tuple[frozenset, int], ...],
    threshold: float,
    min_line_units: int,
) -> int:
    """Units of ``item_lines`` in lines that resemble a line of ``kept_lines`` (pairwise)."""
    return sum(
        n
        for sh, n in item_lines
        if n >= min_line_units
        and any(jaccard(sh, other) >= threshold for other, m in kept_lines if m >= min_line_units)
    )


def _prefix_length(size: int, threshold: float) -> int:
    """Prefix-filter length for a set of ``size`` shingles (Bayardo et al. 2007, All-Pairs).

    ``J(A, B) >= t`` implies ``|A ∩ B| >= ceil(t · |A|)``, so A's ``|A| − ceil(t·|A|) + 1``
    first shingles must include one of B's indexed prefix shingles, for any total order
    used by both. The order here is descending code point order of the unit tuples: C-speed
    sorting, and it puts Han-initial shingles (rarer than kana-initial ones) first in
    Japanese text.
    """
    return size - math.ceil(threshold * size - 1e-9) + 1


@lru_cache(maxsize=16_384)
def _prefix(keys: frozenset, threshold: float) -> tuple[tuple, ...]:
    """The first :func:`_prefix_length` shingles of ``keys`` in the fixed total order.

    Cached by the set (its text's and lines' sets come from :func:`_profile`'s cache, so a
    recurring passage's lookup is by identity): sorting each candidate's ~200 shingles was
    the dedup pass's largest cost. Its keys keep sets alive after :func:`_profile` dropped
    them: 16,384 sets (a text's and its lines'), ~15 KB each at most."""
    return tuple(sorted(keys, reverse=True)[: _prefix_length(len(keys), threshold)]) if keys else ()


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """Return ``|a ∩ b| / |a ∪ b|`` (0.0 when both are empty).

    Args:
        a: A shingle set.
        b: Another shingle set.

    Returns:
        The Jaccard resemblance in [0, 1].
    """
    if not a and not b:
        return 0.0
    inter = len(a & b)
    return inter / (len(a) + len(b) - inter)


def _resembles(a: frozenset, b: frozenset, threshold: float) -> float:
    """``jaccard(a, b)`` if it reaches ``threshold``, else 0.0 (size-ratio bound first)."""
    la, lb = len(a), len(b)
    if min(la, lb) < threshold * max(la, lb):
        return 0.0
    inter = len(a & b)
    sim = inter / (la + lb - inter)
    return sim if sim >= threshold else 0.0
