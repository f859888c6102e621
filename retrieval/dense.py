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

One ranking (:func:`merge_spaces`): the per-space lists are fused by reciprocal rank (equal
weights; Cormack et al. 2009). Their passages are disjoint (one space per passage), so this
interleaves them rank by rank, the task's own space first at each rank; cosines of different
models are never compared. Each item keeps the cosine from its own space (for the per-model
similarity floor). Score fusion (:func:`retrieval.fusion.hybrid_fusion`) reads scores, so a
merged list enters it through :func:`scale_by_space`: each model's cosines divided by that
model's top cosine in the list (the fusion's own scale-to-top, per model), never compared raw.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from cairn.retrieval.embeddings import Embedder
from cairn.retrieval.language import is_non_latin, passage_is_multilingual
from cairn.retrieval.vectors import DEFAULT_SPACE

__all__ = ["DEFAULT_SPACE", "DenseModels", "merge_spaces", "scale_by_space"]


Ranked = list[tuple[str, float]]


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


def merge_spaces(lists: Mapping[str, Ranked], limit: int) -> Ranked:
    """One dense ranking from per-space results (module doc).

    Args:
        lists: Space → ``(passage id, cosine)`` best first, spaces in search order (the
            task's own space first: :meth:`DenseModels.task_spaces`).
        limit: Most items returned.

    Returns:
        ``(passage id, cosine in its own space)``: a single list as given; several lists
        interleaved rank by rank (RRF with equal weights, k = 60, over disjoint lists; equal
        ranks ordered by search order, so the task's own space leads), a passage listed
        twice kept at its best place.
    """
    if len(lists) == 1:
        return list(next(iter(lists.values())))[:limit]
    out: Ranked = []
    seen: set[str] = set()
    depth = max((len(ranked) for ranked in lists.values()), default=0)
    for rank in range(depth):
        for ranked in lists.values():
            if rank < len(ranked) and ranked[rank][0] not in seen:
                seen.add(ranked[rank][0])
                out.append(ranked[rank])
                if len(out) == limit:
                    return out
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
