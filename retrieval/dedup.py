"""Collapse exact and near-duplicate passages onto the best-ranked one.

Method:

* Exact duplicates: equal content SHA-256 (as given by the caller).
* Near duplicates: Jaccard resemblance of shingle sets >= ``threshold`` (default 0.8;
  w-shingling, Broder 1997, "On the resemblance and containment of documents"). Text is
  NFKC-normalised and case-folded, then read as a sequence of *units*: each word of
  non-CJK text (``\\w+`` runs) and each single CJK character (Han, kana, Hangul; no
  spaces to split on). Shingles are runs of 3 consecutive units — word 3-grams for
  English, character 3-grams for Japanese/Chinese, both for mixed text. A text of fewer
  than 3 units has one shingle: all its units. Punctuation and spacing are ignored.
  Three, not five, because passages are short: one changed word in a 40-word paragraph
  leaves Jaccard ≈ 0.86 with 3-grams but ≈ 0.78 with 5-grams.

Grouping is leader clustering in rank order: each item joins the group whose *kept* item
it resembles most (Jaccard >= threshold; exact-hash matches join at 1.0; ties go to the
better-ranked group), else it starts a new group and is kept. Candidates come from prefix
filtering (Bayardo, Ma & Srikant 2007, "Scaling up all pairs similarity search"): only each
kept set's first ``|A| − ⌈t·|A|⌉ + 1`` shingles (in one fixed total order) are indexed and
probed, so most shared-but-common shingles never produce candidates; the size-ratio bound
``J(A, B) <= min(|A|,|B|) / max(|A|,|B|)`` skips more, and candidates are verified with the
exact Jaccard. The result is exactly that of comparing every item with every kept item.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
import math
from functools import lru_cache
from itertools import chain
from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T")

SHINGLE_SIZE = 3

_CJK_CLASS = (
    "\u1100-\u11ff\u3005-\u3007\u3040-\u309f\u30a0-\u30fa\u30fc-\u30ff\u3130-\u318f"
    "\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0003134f"
)
_UNIT = re.compile(rf"[{_CJK_CLASS}]|[^\W{_CJK_CLASS}]+")


@dataclass(frozen=True)
class DedupGroup(Generic[T]):
    """A kept item and the items collapsed onto it.

    Attributes:
        kept: The best-ranked item of the group.
        duplicates: The other members, in rank order (alternate citations).
        similarities: Jaccard resemblance of each duplicate to ``kept`` (1.0 for an
            exact hash match), parallel to ``duplicates``.
    """

    kept: T
    duplicates: list[T] = field(default_factory=list)
    similarities: list[float] = field(default_factory=list)


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


@lru_cache(maxsize=65_536)
def shingle_keys(text: str) -> frozenset:
    """:func:`shingles` as unit tuples (units hold no spaces, so joining is one-to-one),
    without building joined strings — about 3× faster. Cached by text: the same passages
    recur across packs (65,536 entries, ~100 MB worst case)."""
    return _ngrams(units(text), SHINGLE_SIZE)


def _prefix_length(size: int, threshold: float) -> int:
    """Prefix-filter length for a set of ``size`` shingles (Bayardo et al. 2007, All-Pairs).

    ``J(A, B) >= t`` implies ``|A ∩ B| >= ceil(t · |A|)``, so A's ``|A| − ceil(t·|A|) + 1``
    first shingles must include one of B's indexed prefix shingles, for any total order
    used by both. The order here is descending code point order of the unit tuples: C-speed
    sorting, and it puts Han-initial shingles (rarer than kana-initial ones) first in
    Japanese text.
    """
    return size - math.ceil(threshold * size - 1e-9) + 1


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


def dedup(
    items: Sequence[T],
    *,
    key: Callable[[T], str],
    text: Callable[[T], str],
    sha256: Callable[[T], str],
    threshold: float = 0.8,
) -> list[DedupGroup[T]]:
    """Group exact and near duplicates under their best-ranked member (module doc).

    Args:
        items: Items in rank order, best first.
        key: Unique, stable id of an item.
        text: The item's text (shingled for near-duplicate detection).
        sha256: The item's content hash (equal hashes are exact duplicates).
        threshold: Jaccard threshold in (0, 1].

    Returns:
        One group per kept item, in input order; every input item appears exactly once
        (as ``kept`` or in ``duplicates``).

    Raises:
        ValueError: If ``threshold`` is outside (0, 1] or two items share a key.
    """
    if not 0 < threshold <= 1:
        raise ValueError(f"threshold must be in (0, 1], got {threshold}")
    seen_keys: set[str] = set()
    kept: list[T] = []
    members: list[list[T]] = []
    sims: list[list[float]] = []
    kept_shingles: list[frozenset] = []
    by_hash: dict[str, int] = {}
    postings: dict[tuple, list[int]] = {}
    sets = [shingle_keys(text(item)) for item in items]
    for item, item_shingles in zip(items, sets):
        item_key = key(item)
        if item_key in seen_keys:
            raise ValueError(f"duplicate key {item_key!r} in dedup input")
        seen_keys.add(item_key)
        digest = sha256(item)
        group = by_hash.get(digest)
        if group is not None:
            members[group].append(item)
            sims[group].append(1.0)
            continue
        best, best_sim = -1, 0.0
        prefix: list[tuple] = []
        if item_shingles:
            size = len(item_shingles)
            prefix = sorted(item_shingles, reverse=True)[:_prefix_length(size, threshold)]
            candidates = set(chain.from_iterable(postings.get(sh, ()) for sh in prefix))
            for candidate in sorted(candidates):
                other_set = kept_shingles[candidate]
                other = len(other_set)
                if min(size, other) < threshold * max(size, other):
                    continue  # size-ratio bound: cannot reach the threshold
                inter = len(item_shingles & other_set)
                sim = inter / (size + other - inter)
                if sim >= threshold and sim > best_sim:
                    best, best_sim = candidate, sim
        if best >= 0:
            members[best].append(item)
            sims[best].append(best_sim)
            by_hash.setdefault(digest, best)
            continue
        index = len(kept)
        kept.append(item)
        members.append([])
        sims.append([])
        kept_shingles.append(item_shingles)
        by_hash[digest] = index
        for shingle in prefix:
            postings.setdefault(shingle, []).append(index)
    return [DedupGroup(kept=k, duplicates=m, similarities=s) for k, m, s in zip(kept, members, sims, strict=True)]
