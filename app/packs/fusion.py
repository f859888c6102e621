"""Fusion of a pack's legs: scores or ranks, the dense similarity floor, and the notes on both.

Split from :mod:`app.packs.service` (the pipeline). :func:`fuse_legs` fuses the legs that
finished by the pack's method (:func:`app.packs.types.fusion_method`: score fusion for a
current pack, RRF for a pack read as of a given time), drops dense-only passages under their
model's cosine floor and notes weak evidence (:mod:`app.packs.evidence`) and which dense
models served the task.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cairn.app.packs.evidence import (
    apply_floor,
    cosine_baseline,
    dense_evidence,
    dense_head_kept,
    evidence_notes,
    similarity_floor,
)
from cairn.app.packs.pipeline_types import DenseServed, LegResults
from cairn.app.packs.types import RRF_K
from cairn.retrieval.dense import STAND_OUT_MIN, DenseModels
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
    """Fuse the legs that finished, apply the dense similarity floor (the floor of the model whose
    cosines the dense leg is scored in, :attr:`DenseServed.scale`; its head kept where
    :func:`app.packs.evidence.dense_head_kept` says), and note the evidence and which dense models
    served the task.

    ``method`` (:func:`app.packs.types.fusion_method`): ``SCORE`` =
    :func:`retrieval.fusion.hybrid_fusion` (``legs.weights`` its static priors; a dense leg
    enters as :func:`app.packs.evidence.dense_evidence`: its lead model's cosines rescaled from
    that model's unrelated-text baseline to the top one; a passage of another space joined the
    lead's list on the lead's scale, :func:`retrieval.dense.merge_spaces`); ``RANK`` =
    RRF (Cormack et al. 2009, k = 60, ranks from 1, ``legs.weights`` per leg), for packs read as
    of a given time, so they are reproducible byte for byte.
    """
    results = legs.ids()
    cosine = legs.cosine()
    weights = legs.weights
    notes: list[str] = []
    by_space = dense.by_space if dense is not None else {}
    scale_model: Any = by_space.get(served.scale) if served.scale is not None else None
    if scale_model is None and dense is not None:  # no dense result: the task's own model
        scale_model = dense.multilingual if served.non_latin else dense.primary
    # scored in the multilingual space for a Latin-script task: matches across scripts
    cross = dense is not None and served.scale == dense.multilingual_space and not served.non_latin
    floor = similarity_floor(scale_model, cross_lingual=cross) if scale_model is not None else None
    if not results:
        fused: list[Fused] = []
    elif method == "RANK":
        fused = rrf(results, k=RRF_K, weights=weights)
        if len(results) > 1:
            notes.append("legs fused by rank (RRF): the pack reads as of a given time, so it is reproducible")
    else:
        scored = legs.ranked
        if "dense" in scored and dense is not None:
            scored = {**scored, "dense": dense_evidence(scored["dense"], scale_model, cross_lingual=cross)}
        fused = hybrid_fusion(scored, weights)
    ran = {k: v for k, v in results.items() if weights.get(k, 1.0) > 0}
    if "dense" in ran:
        keep = dense_head_kept(
            legs.ranked["dense"],
            floor,
            dense_only=config.dense_only,
            cross_lingual=cross,
            baseline=cosine_baseline(scale_model, cross_lingual=cross),
        )
        fused = apply_floor(fused, cosine, floor, keep)
    model_names = list(served.models) or [getattr(dense.primary if dense else None, "name", "none")]
    searched = [(name, m) for name, m in by_space.items() if m.name in model_names]
    notes.extend(
        evidence_notes(
            config.name,
            ran,
            cosine,
            floor if len(searched) == 1 else None,
            sum(1 for f in fused if "lexical" not in f.ranks),
            " + ".join(model_names),
            best_text=_best_by_model(searched, served, floor, cross) if len(searched) > 1 else None,
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
                f"{served.models[1]} for its passages in other languages or scripts (cross-lingual); "
                f"a passage of another language joins where it stands out of its own list as much as "
                f"an English one (at least {STAND_OUT_MIN:g} standard deviations)"
            )
    if 0.0 < weights.get("dense", 1.0) < 1.0 and "dense" in results:
        notes.append(
            f"dense leg weighted {weights['dense']:.2f} (the embedding model reads part of the task as unknown words)"
        )
    return Fusion(fused, tuple(notes))


def _best_by_model(searched: Sequence[tuple[str, Any]], served: DenseServed, floor: float | None, cross: bool) -> str:
    """``best cosine similarity 0.12 for <model> against its floor 0.30; 0.80 for <model> …``: each
    searched space's best cosine; the lead space's (:attr:`DenseServed.scale`) with the floor
    applied to the leg, another space's with the rule by which its passages join the lead's
    (:func:`retrieval.dense.merge_spaces`), for a pack's weak-evidence notes."""
    parts = []
    for name, model in searched:
        best = served.best.get(name)
        if best is None:
            parts.append(f"none for {model.name}")
        elif name == served.scale:
            against = f"against its floor {floor:.2f}" if floor is not None else "no floor"
            parts.append(f"{best:.2f} for {model.name} {against}" + (" (across scripts)" if cross else ""))
        else:
            parts.append(
                f"{best:.2f} for {model.name} (another language: joins at {STAND_OUT_MIN:g} standard "
                "deviations above its own list's mean)"
            )
    return "best cosine similarity " + "; ".join(parts)
