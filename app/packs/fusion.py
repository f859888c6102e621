"""Fusion of a pack's legs: scores or ranks, the dense similarity floor, and the notes on both.

Split from :mod:`app.packs.service` (the pipeline). :func:`fuse_legs` fuses the legs that
finished by the pack's method (:func:`app.packs.types.fusion_method`: score fusion for a
current pack, RRF for a pack read as of a given time), drops dense-only passages under their
model's cosine floor and notes weak evidence (:mod:`app.packs.evidence`) and which dense
models served the task.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cairn.app.packs.evidence import apply_floor, dense_evidence, evidence_notes, similarity_floor
from cairn.app.packs.pipeline_types import DenseServed, LegResults
from cairn.app.packs.types import RRF_K
from cairn.retrieval.dense import DenseModels
from cairn.retrieval.fusion import Fused, hybrid_fusion, rrf
from cairn.retrieval.pipeline import RetrievalConfig


@dataclass(frozen=True, slots=True)
class Fusion:
    """The fused legs (:func:`fuse_legs`): passages in fused rank order, and the notes on them."""

    fused: list[Fused]
    notes: tuple[str, ...]


def fuse_legs(
    legs: LegResults,
    config: RetrievalConfig,
    dense: DenseModels | None,
    served: DenseServed,
    method: str,
) -> Fusion:
    """Fuse the legs that finished, apply the dense similarity floor (each passage's by the model
    of its space), and note the evidence and which dense models served the task.

    ``method`` (:func:`app.packs.types.fusion_method`): ``SCORE`` =
    :func:`retrieval.fusion.hybrid_fusion` (``legs.weights`` its static priors; a dense leg
    enters as :func:`app.packs.evidence.dense_evidence`: each model's cosines rescaled from
    that model's unrelated-text baseline to its top one, so cosines of two models are never
    compared); ``RANK`` =
    RRF (Cormack et al. 2009, k = 60, ranks from 1, ``legs.weights`` per leg), for packs read as
    of a given time, so they are reproducible byte for byte.
    """
    results = legs.ids()
    cosine = legs.cosine()
    weights = legs.weights
    notes: list[str] = []
    if not results:
        fused: list[Fused] = []
    elif method == "RANK":
        fused = rrf(results, k=RRF_K, weights=weights)
        if len(results) > 1:
            notes.append("legs fused by rank (RRF): the pack reads as of a given time, so it is reproducible")
    else:
        scored = legs.ranked
        if "dense" in scored and dense is not None:
            scored = {**scored, "dense": dense_evidence(scored["dense"], served.space_of, dense.by_space)}
        fused = hybrid_fusion(scored, weights)
    ran = {k: v for k, v in results.items() if weights.get(k, 1.0) > 0}
    by_space = dense.by_space if dense is not None else {}
    multi = dense.multilingual_space if dense is not None else None
    floor_of = {
        name: similarity_floor(model, cross_lingual=name == multi and not served.non_latin)
        for name, model in by_space.items()
    }
    if "dense" in ran:
        fused = apply_floor(fused, cosine, {pid: floor_of.get(space) for pid, space in served.space_of.items()})
    model_names = list(served.models) or [getattr(dense.primary if dense else None, "name", "none")]
    searched = [(name, m) for name, m in by_space.items() if m.name in model_names]
    floors = [floor_of[name] for name, _ in searched]
    notes.extend(
        evidence_notes(
            config.name,
            ran,
            cosine,
            floors[0] if len(floors) == 1 else None,
            sum(1 for f in fused if "lexical" not in f.ranks),
            " + ".join(model_names),
            best_text=_best_by_model(searched, floor_of, cosine, served.space_of) if len(searched) > 1 else None,
        )
    )
    if "dense" in ran and dense is not None and dense.multilingual is not None and served.models:
        if served.non_latin:
            notes.append(
                f"dense leg: {served.models[0]} (the task is written in a script other than Latin, "
                "which the English model cannot read)"
            )
        elif len(served.models) > 1:
            notes.append(
                f"dense leg: {served.models[0]} for this workspace's English passages + "
                f"{served.models[1]} for its passages in other languages or scripts (cross-lingual), merged by rank"
            )
    if 0.0 < weights.get("dense", 1.0) < 1.0 and "dense" in results:
        notes.append(
            f"dense leg weighted {weights['dense']:.2f} (the embedding model reads part of the task as unknown words)"
        )
    return Fusion(fused, tuple(notes))


def _best_by_model(
    searched: Sequence[tuple[str, Any]],
    floor_of: Mapping[str, float | None],
    cosine: Mapping[str, float],
    space_of: Mapping[str, str],
) -> str:
    """``best cosine similarity 0.82 for <model> against its floor 0.83; 0.12 for <model> …``: each
    searched space's best cosine with the floor applied to it (a cross-lingual floor where the
    task's script differs), for a pack's weak-evidence notes."""
    parts = []
    for name, model in searched:
        best = max((c for pid, c in cosine.items() if space_of.get(pid) == name), default=None)
        floor = floor_of.get(name)
        against = f"against its floor {floor:.2f}" if floor is not None else "no floor"
        parts.append(f"{best:.2f} for {model.name} {against}" if best is not None else f"none for {model.name}")
    return "best cosine similarity " + "; ".join(parts)
