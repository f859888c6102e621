"""The dense leg over several embedding models: which model embeds a passage, which vector
spaces a task searches, and how their results become one ranking.

Models (:class:`DenseModels`): the primary model (all-MiniLM-L6-v2, or an OpenAI-compatible
endpoint) and optionally multilingual-e5-small (:class:`retrieval.embeddings.e5.LocalE5`). Each
model has its own Qdrant named vector (its ``space``); a passage is embedded by one model and
stored in that model's space only, and vectors of different models are never compared.

Routing (:mod:`retrieval.language`): a passage or task written mostly in a script other than
Latin (Chinese, Japanese, Korean, Cyrillic, Arabic, Devanagari, Thai, …) goes to the
multilingual model, and so does a Latin-script *passage* identified as another language than
English (French, Turkish, …); other Latin-script text goes to the primary model.

A task searches every space whose passages could match it (:meth:`DenseModels.task_spaces`):

* a non-Latin-script task → the multilingual space only (the English model cannot read it);
* any other task → the primary space, and the multilingual space too when the workspace has
  passages there, so that an English task finds Japanese passages (cross-lingual; measured
  in ``bench/multilingual.py``).

One ranking (:func:`merge_spaces`, issue 37): the lists are not interleaved by rank any more —
that gave the multilingual space's best passage the rank (and, after scaling to each space's top,
the score) of the best English one whatever its relevance: in an English medical corpus holding 6
French, Spanish or German abstracts, one of them was in the DENSE top 10 of 101 of 323 queries.
Each space's cosines are calibrated against their own distribution for this task instead: the
lead space (the first searched space with results: the task's own) keeps its cosines; a passage of
another space joins only if it stands at least :data:`STAND_OUT_MIN` standard deviations above the
mean cosine of its own list (z), and then scores the lead cosine as many of the lead list's
standard deviations above the lead list's mean (``mean_lead + z · std_lead``). Cosines of two
models are never compared; only how far a passage stands out of what its own model returned.
Measured (``python -m bench.crosslingual standout``: e5 lists of 200 over 443 JSQuAD passages):
the best passage of English questions stands out by 2.38–8.93 (p50 5.15), of random-letter and
kana strings by at most 5.17, of off-topic tasks by at most 4.77 — no threshold separates them,
so 6.0: no passage of another language joins an English list unless it stands out more than any
unrelated task's best (foreign passages in the English SciFact top 10: 8 of 150 claims → 0). A workspace
with passages in one space only (all English, all Japanese, or an English task over Japanese
passages) ranks that space's list as it is. The merged scores are the lead model's cosines, so
score fusion rescales the whole list by the lead model's baseline
(:func:`app.packs.evidence.dense_evidence`) and the lead model's floor applies.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from cairn.retrieval.embeddings import Embedder
from cairn.retrieval.language import is_non_latin, passage_is_multilingual
from cairn.retrieval.vectors import DEFAULT_SPACE

__all__ = [
    "DEFAULT_SPACE",
    "STAND_OUT_MIN",
    "DenseModels",
    "Profile",
    "lead_space",
    "merge_spaces",
    "profile",
    "scale_by_space",
]


Ranked = list[tuple[str, float]]

STAND_OUT_MIN = 6.0
"""Least stand-out (standard deviations above its own list's mean cosine) for a passage of another
space to join the lead space's ranking (:func:`merge_spaces`; measured in the module doc)."""


class DenseModels:
    """The dense leg's embedding models and the routing between them (module doc).

    Args:
        primary: The primary model (MiniLM or an OpenAI-compatible endpoint).
        multilingual: multilingual-e5-small, or None (every text then goes to ``primary``).

    Raises:
        ValueError: If both models claim the same space.
    """

    def __init__(self, primary: Embedder, multilingual: Embedder | None = None) -> None:
        self.primary = primary
        self.multilingual = multilingual
        self.by_space: dict[str, Embedder] = {primary.space: primary}
        if multilingual is not None:
            if multilingual.space in self.by_space:
                raise ValueError(f"both models use the named vector {multilingual.space!r}")
            self.by_space[multilingual.space] = multilingual

    @property
    def spaces(self) -> dict[str, int]:
        """Named vector → dimension, for the vector index."""
        return {name: model.dim for name, model in self.by_space.items()}

    @property
    def primary_space(self) -> str:
        """The primary model's named vector."""
        return self.primary.space

    @property
    def multilingual_space(self) -> str | None:
        """The multilingual model's named vector, or None without one."""
        return self.multilingual.space if self.multilingual is not None else None

    def passage_space(self, text: str) -> str:
        """The space a passage is embedded in: multilingual for non-Latin script or another
        language than English (:func:`retrieval.language.passage_is_multilingual`), else primary."""
        if self.multilingual is not None and passage_is_multilingual(text):
            return self.multilingual.space
        return self.primary_space

    def encode_passages(
        self, texts: Sequence[str], spaces: Sequence[str] | None = None
    ) -> list[tuple[str, np.ndarray]]:
        """Embed passages, each with the model of its space (one batch per model).

        Args:
            texts: The passages' embedding inputs.
            spaces: Their spaces when the caller has routed them already
                (:meth:`passage_space`: language identification is not run twice); else routed here.

        Returns:
            ``(space, vector)`` per text, in input order.

        Raises:
            ValueError: If ``spaces`` is given with another length than ``texts``.
        """
        if spaces is None:
            spaces = [self.passage_space(t) for t in texts]
        elif len(spaces) != len(texts):
            raise ValueError(f"spaces has {len(spaces)} entries for {len(texts)} texts")
        out: list[tuple[str, np.ndarray] | None] = [None] * len(texts)
        for name, model in self.by_space.items():
            positions = [i for i, s in enumerate(spaces) if s == name]
            if not positions:
                continue
            vectors = model.encode([texts[i] for i in positions])
            for row, i in enumerate(positions):
                out[i] = (name, vectors[row])
        return [item for item in out if item is not None]

    def task_spaces(self, task: str, *, multilingual_has_passages: Callable[[], bool]) -> tuple[str, ...]:
        """The spaces a task searches (module doc), primary first.

        Args:
            task: The task text.
            multilingual_has_passages: Whether the workspace has passages in the
                multilingual space (asked only for Latin-script tasks: an English task skips the
                multilingual query embedding when there is nothing to find there).
        """
        multi = self.multilingual_space
        if multi is None:
            return (self.primary_space,)
        if is_non_latin(task):
            return (multi,)
        if multilingual_has_passages():
            return (self.primary_space, multi)
        return (self.primary_space,)

    def encode_task(self, task: str, spaces: Sequence[str]) -> dict[str, np.ndarray]:
        """The task's query vector in each space (by that space's model)."""
        return {name: self.by_space[name].encode_query(task) for name in spaces}


def lead_space(lists: Mapping[str, Ranked]) -> str | None:
    """The space whose cosines a merged dense ranking is scored in: the first space in search order
    that returned anything (:meth:`DenseModels.task_spaces` puts the task's own space first), or
    None when none did."""
    return next((name for name, ranked in lists.items() if ranked), None)


@dataclass(frozen=True, slots=True)
class Profile:
    """One space's cosines for one task: their mean and standard deviation over the list the
    space returned (:func:`profile`)."""

    mean: float
    std: float

    def stand_out(self, cosine: float) -> float:
        """How many standard deviations ``cosine`` lies above the list's mean (0.0 when the list is flat)."""
        return (cosine - self.mean) / self.std if self.std > 0 else 0.0


def profile(ranked: Sequence[tuple[str, float]]) -> Profile:
    """The mean and (population) standard deviation of a list's cosines; ``Profile(0, 0)`` for an empty list."""
    if not ranked:
        return Profile(0.0, 0.0)
    values = np.fromiter((c for _, c in ranked), dtype=np.float64, count=len(ranked))
    return Profile(float(values.mean()), float(values.std()))


def merge_spaces(lists: Mapping[str, Ranked], limit: int, *, min_stand_out: float = STAND_OUT_MIN) -> Ranked:
    """One dense ranking from per-space results (module doc), scored in the lead space's cosines.

    Args:
        lists: Space → ``(passage id, cosine)`` best first, spaces in search order (the task's
            own space first: :meth:`DenseModels.task_spaces`).
        limit: Most items returned.
        min_stand_out: Least :meth:`Profile.stand_out` in its own list for a passage of another
            space than the lead one (:func:`lead_space`) to join the ranking.

    Returns:
        ``(passage id, score)`` best first: the lead space's passages with their cosines; a passage
        of another space that stands out of its own list by ``z >= min_stand_out`` standard
        deviations with the lead cosine that stands out of the lead list as much,
        ``mean_lead + z · std_lead`` (the passage of another space counts as much as a lead passage
        as far above its own list; cosines of two models are never compared), the others dropped.
        Ties: the lead space first, then search order, then passage id. One list returned as given;
        a passage listed twice kept at its best place.
    """
    lead = lead_space(lists)
    if lead is None:
        return []
    if sum(1 for ranked in lists.values() if ranked) == 1:
        return list(lists[lead])[:limit]
    base = profile(lists[lead])
    order = {name: i for i, name in enumerate(lists)}
    scored: list[tuple[float, int, str]] = [(cos, order[lead], pid) for pid, cos in lists[lead]]
    for name, ranked in lists.items():
        if name == lead or not ranked:
            continue
        own = profile(ranked)
        for pid, cos in ranked:
            z = own.stand_out(cos)
            if z >= min_stand_out:
                scored.append((base.mean + z * base.std, order[name], pid))
    scored.sort(key=lambda t: (-t[0], t[1], t[2]))
    out: Ranked = []
    seen: set[str] = set()
    for score, _, pid in scored:
        if pid not in seen:
            seen.add(pid)
            out.append((pid, score))
            if len(out) == limit:
                break
    return out


def scale_by_space(
    ranked: Sequence[tuple[str, float]], space_of: Mapping[str, str], baselines: Mapping[str, float] | None = None
) -> Ranked:
    """A merged dense ranking with each passage's cosine rescaled within its own space:
    ``max(cos − b, 0) / (top − b)``, ``top`` the best cosine of that space in the list and ``b``
    that space's model's *unrelated-text baseline* (the caller's ``baselines``; packs:
    :data:`app.packs.evidence.COSINE_BASELINE`), 0 when not given.

    The per-model form of :func:`retrieval.fusion.scale_to_top` ("theoretical min-max", Bruch,
    Gai & Ingber 2023) with the model's theoretical minimum: a cosine at the level unrelated
    texts reach carries no evidence. multilingual-e5-small's cosines sit high (~0.8 for
    unrelated text) and MiniLM's near 0, so raw cosines of two models must not meet in one
    score scale, and e5's cosines divided by their top alone would be a flat plateau
    (0.93–1.0) that cannot tell a match from a miss.

    Args:
        ranked: ``(passage id, cosine in its own space)`` in merged order (:func:`merge_spaces`).
        space_of: Passage id → its space (passages missing here form one group).
        baselines: Space → its model's unrelated-text cosine (missing: 0).

    Returns:
        The same ids in the same order, scores in [0, 1] (each space's best → 1.0; every
        passage of a space whose top cosine is <= its baseline → 0.0: no evidence).
    """
    baselines = baselines or {}
    tops: dict[str, float] = {}
    for pid, score in ranked:
        name = space_of.get(pid, "")
        tops[name] = max(tops.get(name, score), score)
    out: Ranked = []
    for pid, score in ranked:
        name = space_of.get(pid, "")
        base = float(baselines.get(name, 0.0))
        top = tops[name]
        out.append((pid, max(score - base, 0.0) / (top - base) if top > base else 0.0))
    return out
