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
* Repeated paragraphs (Broder's *containment*, measured line by line): chunking puts the
  same paragraph into different passages when different short paragraphs surround it, and
  the passages' Jaccard then falls to 0.4–0.75. So each text is also read as *lines* (the
  text between line breaks: paragraphs, and the lines of line-broken text). A line of an
  item is *matched* in a kept item when some line of the kept item resembles it (line
  shingle Jaccard >= ``threshold``, the test used for whole passages); lines of fewer than
  ``min_line_units`` units (default 8) never match — signature blocks ("Date:", "Name:"),
  headings and OCR debris. The *coverage* of the item by the kept item is the share of the
  item's units in matched lines, and an item also joins a kept item when coverage >=
  ``cover`` (default 0.7): most of the item is text the kept item already has, and what it
  adds stays reachable as an alternate citation. Passages sharing only a boilerplate line
  stay apart (coverage well below 0.7); so do passages that share many common phrases but
  no line — templated text such as the JSQuAD paragraphs on 梅雨入り/梅雨明け or on the
  都道府県 and 地区 committees, whose character 3-grams overlap at 0.8 containment while no
  sentence resembles another. Between two one-line texts the rule is the Jaccard rule.

  Measured with ``bench/dedup_quality.py``: a real paragraph (SciFact, JSQuAD) between
  different real intro and outro sentences, every passage pair with Jaccard 0.65–0.8
  collapses (1,349 pairs; least coverage 0.744 in SciFact, 0.710 in JSQuAD), and so do
  75 % (SciFact) and 71 % (JSQuAD) of those with Jaccard 0.5–0.65. Over all passage pairs
  of JSQuAD articles, TimeQA pages, Kleister-NDA contracts and SciFact/JSQuAD texts one
  sentence per line (~136 M pairs) the rule adds 143 directed merges, read one by one: the
  same contract clauses in two filings (wrapped or cut differently), a Wikipedia paragraph
  repeated in two articles, a line-sized passage found verbatim in a longer one. 0.7
  rather than 2/3 keeps apart TimeQA's U-38/U-66 passages (the same template paragraph, one
  name changed, then a different patrol history: coverage 0.67); 0.75 would leave a case
  of the Jaccard 0.65–0.75 band apart.

Grouping is leader clustering in rank order: an item that resembles kept items (Jaccard >=
threshold; exact-hash matches join at 1.0) joins the most similar one — exactly as without
the line rule; otherwise it joins the kept item that covers it most (ties: higher Jaccard,
then the better-ranked group); otherwise it starts a new group and is kept. Candidates come
from prefix filtering (Bayardo, Ma & Srikant 2007, "Scaling up all pairs similarity
search"), for whole texts and for lines alike: only each kept set's first
``|A| − ⌈t·|A|⌉ + 1`` shingles (in one fixed total order) are indexed and probed, so most
shared-but-common shingles never produce candidates; the size-ratio bound
``J(A, B) <= min(|A|,|B|) / max(|A|,|B|)`` skips more, and candidates are verified with the
exact Jaccard. The result is exactly that of comparing every item (and each of its lines)
with every kept item (and each of its lines).

This module holds the grouping (:class:`DedupGroup`, :func:`prepare`, :func:`dedup`); units,
shingle sets, Jaccard, line coverage and prefixes are in :mod:`retrieval.dedup_shingles`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import Generic, TypeVar

from cairn.retrieval.dedup_shingles import (
    DEFAULT_MIN_LINE_UNITS,
    DEFAULT_THRESHOLD,
    _covered,
    _prefix,
    _profile,
    _resembles,
    jaccard,
    line_keys,
    shingle_keys,
)

T = TypeVar("T")

DEFAULT_COVER = 0.7


@dataclass(frozen=True)
class DedupGroup(Generic[T]):
    """A kept item and the items collapsed onto it.

    Attributes:
        kept: The best-ranked item of the group.
        duplicates: The other members, in rank order (alternate citations).
        similarities: Jaccard resemblance of each duplicate to ``kept`` (1.0 for an
            exact hash match), parallel to ``duplicates``.
        coverages: Share of each duplicate's units in lines matched by ``kept``'s lines
            (module doc; 1.0 for an exact hash match), parallel to ``duplicates``.
    """

    kept: T
    duplicates: list[T] = field(default_factory=list)
    similarities: list[float] = field(default_factory=list)
    coverages: list[float] = field(default_factory=list)


def prepare(text: str, threshold: float = DEFAULT_THRESHOLD, min_line_units: int = DEFAULT_MIN_LINE_UNITS) -> None:
    """Compute and cache what :func:`dedup` will need of ``text`` (its shingle sets, and the
    prefixes of the whole text and of each line that can match), so a later :func:`dedup` of
    it only looks them up. Packs call it for likely candidates while they wait for the query
    embedding. Same caches as :func:`dedup`; nothing else changes."""
    keys, lines = _profile(text)
    if keys:
        _prefix(keys, threshold)
    if len(lines) > 1:
        for line, n in lines:
            if n >= min_line_units:
                _prefix(line, threshold)


class _KeptIndex:
    """Prefix-filter postings of the kept items' whole texts and lines (module doc).

    Lines are indexed for multi-line kept items only: a one-line kept item's line is its
    whole text, found through the text postings (same sets, same threshold).
    """

    def __init__(self, threshold: float, min_line_units: int) -> None:
        self.threshold = threshold
        self.texts: list[frozenset] = []
        self.lines: list[tuple[tuple[frozenset, int], ...]] = []
        self.min_line_units = min_line_units
        self.text_postings: dict[tuple, list[int]] = {}
        self.line_postings: dict[tuple, list[tuple[int, int, int]]] = {}  # (kept, line, size)

    def add(
        self,
        keys: frozenset,
        lines: tuple[tuple[frozenset, int], ...],
        prefix: Sequence[tuple],
        line_prefixes: list[Sequence[tuple] | None],
    ) -> None:
        """Index a new kept item (its index is the number of items added before it).

        ``line_prefixes``: each line's prefix where already computed, else None.
        """
        index = len(self.texts)
        self.texts.append(keys)
        self.lines.append(lines)
        for shingle in prefix:
            self.text_postings.setdefault(shingle, []).append(index)
        if len(lines) < 2:
            return
        for li, (line, n) in enumerate(lines):
            if n < self.min_line_units:
                continue
            entry = (index, li, len(line))
            given = line_prefixes[li]
            for shingle in given if given is not None else _prefix(line, self.threshold):
                self.line_postings.setdefault(shingle, []).append(entry)

    def resembling(self, keys: frozenset, prefix: Sequence[tuple]) -> dict[int, float]:
        """Kept items whose Jaccard with ``keys`` (prefix ``prefix``) reaches the threshold → that Jaccard."""
        t = self.threshold
        found = {}
        candidates = set(chain.from_iterable(self.text_postings.get(sh, ()) for sh in prefix))
        for k in candidates:
            sim = _resembles(keys, self.texts[k], t)
            if sim:
                found[k] = sim
        return found

    def covered_units(
        self,
        lines: tuple[tuple[frozenset, int], ...],
        text_prefix: Sequence[tuple],
        cover: float,
        line_prefixes: list[Sequence[tuple] | None],
    ) -> dict[int, int]:
        """Kept item → units of ``lines`` matched by one of its lines, exact for every kept
        item whose coverage can reach ``cover`` (lines of fewer than ``min_line_units``
        units neither match nor are matched).

        Lines are probed longest first, and probing stops once no kept item can reach
        ``cover`` even if every remaining line matched it (then the result has no item
        at ``cover``). For a one-line item, one-line kept items are not searched: there the
        line rule is the Jaccard rule, which :meth:`resembling` has already applied; and
        its line's prefix is ``text_prefix``. Fills ``line_prefixes`` as it goes.
        """
        t, least = self.threshold, self.min_line_units
        covered: dict[int, int] = {}
        if len(lines) == 1 and not self.line_postings:
            return covered
        total = sum(n for _, n in lines)
        remaining = sum(n for _, n in lines if n >= least)
        for li in sorted(range(len(lines)), key=lambda i: -lines[i][1]):
            line, n = lines[li]
            if n < least or (max(covered.values(), default=0) + remaining) / total < cover:
                break
            remaining -= n
            if len(lines) == 1:
                prefix = text_prefix
            else:
                prefix = line_prefixes[li] = _prefix(line, t)
            size = len(line)
            pairs = set(chain.from_iterable(self.line_postings.get(sh, ()) for sh in prefix))
            matched: set[int] = set()
            for k, lj, other in pairs:
                if (
                    k not in matched
                    and t * max(size, other) <= min(size, other)
                    and _resembles(line, self.lines[k][lj][0], t)
                ):
                    matched.add(k)
            if len(lines) > 1:
                for k in set(chain.from_iterable(self.text_postings.get(sh, ()) for sh in prefix)):
                    if len(self.lines[k]) == 1 and self.lines[k][0][1] >= least and _resembles(line, self.texts[k], t):
                        matched.add(k)
            for k in matched:
                covered[k] = covered.get(k, 0) + n
        return covered


def dedup(
    items: Sequence[T],
    *,
    key: Callable[[T], str],
    text: Callable[[T], str],
    sha256: Callable[[T], str],
    threshold: float = DEFAULT_THRESHOLD,
    cover: float = DEFAULT_COVER,
    min_line_units: int = DEFAULT_MIN_LINE_UNITS,
) -> list[DedupGroup[T]]:
    """Group exact and near duplicates under their best-ranked member (module doc).

    Args:
        items: Items in rank order, best first.
        key: Unique, stable id of an item.
        text: The item's text (shingled for near-duplicate detection).
        sha256: The item's content hash (equal hashes are exact duplicates).
        threshold: Jaccard threshold in (0, 1], for whole texts and for lines.
        cover: Coverage (share of an item's units in matched lines) in (0, 1] that
            collapses an item whose Jaccard is below ``threshold``.
        min_line_units: Fewest units (words, CJK characters) a line needs to count as
            matched, >= 1; shorter lines (signature blocks, headings, OCR debris) only
            add to the item's size.

    Returns:
        One group per kept item, in input order; every input item appears exactly once
        (as ``kept`` or in ``duplicates``).

    Raises:
        ValueError: If ``threshold`` or ``cover`` is outside (0, 1],
            ``min_line_units`` < 1, or two items share a key.
    """
    if not 0 < threshold <= 1:
        raise ValueError(f"threshold must be in (0, 1], got {threshold}")
    if not 0 < cover <= 1:
        raise ValueError(f"cover must be in (0, 1], got {cover}")
    if min_line_units < 1:
        raise ValueError(f"min_line_units must be >= 1, got {min_line_units}")
    seen_keys: set[str] = set()
    kept: list[T] = []
    members: list[list[tuple[T, float, float]]] = []
    by_hash: dict[str, int] = {}
    index = _KeptIndex(threshold, min_line_units)
    for item in items:
        item_key = key(item)
        if item_key in seen_keys:
            raise ValueError(f"duplicate key {item_key!r} in dedup input")
        seen_keys.add(item_key)
        digest = sha256(item)
        group = by_hash.get(digest)
        if group is not None:
            members[group].append((item, 1.0, 1.0))
            continue
        item_text = text(item)
        keys, lines = shingle_keys(item_text), line_keys(item_text)
        best, best_sim, best_cover = -1, 0.0, 0.0
        prefix = _prefix(keys, threshold)
        line_prefixes: list[Sequence[tuple] | None] = [None] * len(lines)
        if keys:
            similar = index.resembling(keys, prefix)
            total = sum(n for _, n in lines)
            if similar:  # the Jaccard rule alone decides, as without the line rule
                best = min(similar, key=lambda k: (-similar[k], k))
                best_sim = similar[best]
                best_cover = _covered(lines, index.lines[best], threshold, min_line_units) / total
            else:
                covered = index.covered_units(lines, prefix, cover, line_prefixes)
                eligible = [k for k, n in covered.items() if n / total >= cover]
                if eligible:
                    best = min(eligible, key=lambda k: (-covered[k], -jaccard(keys, index.texts[k]), k))
                    best_sim, best_cover = jaccard(keys, index.texts[best]), covered[best] / total
        if best >= 0:
            members[best].append((item, best_sim, best_cover))
            by_hash.setdefault(digest, best)
            continue
        by_hash[digest] = len(kept)
        kept.append(item)
        members.append([])
        index.add(keys, lines, prefix, line_prefixes)
    return [
        DedupGroup(
            kept=k, duplicates=[d for d, _, _ in m], similarities=[s for _, s, _ in m], coverages=[c for _, _, c in m]
        )
        for k, m in zip(kept, members, strict=True)
    ]
