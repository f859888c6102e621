"""Weak evidence in packs: the dense similarity floor and the notes that say a pack is weak.

The dense leg always returns its ``depth`` nearest passages, however far they are: for a
task like "zzzz qqqq" a HYBRID pack used to hold 31 unrelated dense-only items and no note.
So a passage that only the dense leg found (no BM25 rank) must reach a cosine similarity
floor, and a pack without lexical evidence says so in ``notes``.

Floor (:data:`DENSE_SIMILARITY_FLOOR`): per embedding model, because cosine scales differ
between models; none is applied for a model not listed (an OpenAI-compatible endpoint),
whose packs still get the notes. all-MiniLM-L6-v2: 0.30, measured with
``python -m bench.dense_floor`` on the ``bench.beir`` data dirs (SciFact: 300 test claims
over their judged abstracts + 1,200 others; JSQuAD: 349 of the first 500 questions whose
word pieces the model knows >= 90 %, over all 2,304 paragraphs), against 100 nonsense
queries (keyboard mash, random letters, "zzzz qqqq") and 35 everyday off-topic questions:

* top-1 cosine, real queries: SciFact min 0.306, p5 0.418; JSQuAD min 0.421, p5 0.638;
* top-1 cosine, nonsense: SciFact p50 0.231, p95 0.315, max 0.376; JSQuAD p50 0.259, p95
  0.365; at 0.30, 88 % (SciFact) and 68 % (JSQuAD) of nonsense tasks get no dense item
  (and the rest a note saying the items come from dense similarity alone);
* relevant passages found by the dense leg only: SciFact 63, cosine min 0.216, p50 0.423
  (8 under 0.30); JSQuAD 10, min 0.580.

Through the whole pipeline (``python -m bench.beir --dataset scifact --corpus-docs 1200
--no-peer``: 300 queries over 1,483 abstracts, maxTokens 32,000), before → after:
HYBRID nDCG@10 0.8067 → 0.8067, R@10 0.8963 → 0.8963, R@100 0.9933 → 0.9900; at the
default 4,000 tokens nDCG@10 0.8077 → 0.8077, R@100 0.9527 → 0.9493; DENSE nDCG@10 0.7780
→ 0.7766, R@100 0.9767 → 0.9500 (the price: relevant abstracts the dense leg finds only
at cosine < 0.30); LEXICAL unchanged. JSQuAD (``--dataset jsquad --limit 500``):
every mode unchanged (HYBRID 0.8937). A floor of 0.25 would keep DENSE R@100 at 0.963
(screen) but leave dense items for 36 % (SciFact) and 57 % (JSQuAD) of nonsense tasks.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from cairn.retrieval.dense import scale_by_space
from cairn.retrieval.fusion import Fused

DENSE_HEAD = 30
"""Dense ranks (passages) a floor never drops where the dense leg is the evidence a pack stands on
(:func:`dense_head_kept`): a DENSE pack whose best passage clears its model's floor, and a
Latin-script task's matches across scripts (issue 37). Measured (``python -m bench.crosslingual``):
JSQuAD's 0.84 floor dropped relevant passages at dense ranks 2–10 (Cairn DENSE nDCG@10 0.8975
against 0.9089 for the same model used plainly), and across scripts the cosines of real matches and
of off-topic tasks overlap (English questions over JSQuAD: top-1 0.743–0.854; nonsense and
off-topic tasks 0.736–0.861), so an absolute floor keeps ~10 % of the real matches. 30 passages, not
10, because ranking is by document: CMRC paragraphs are cut into ~4 passages each, and a head of 10
passages held 7.1 documents (English questions over CMRC: DENSE recall@10 0.7857 against 0.8393
for plain e5)."""

DENSE_SIMILARITY_FLOOR: dict[str, float] = {
    "sentence-transformers/all-MiniLM-L6-v2": 0.30,
    "intfloat/multilingual-e5-small": 0.84,
}
"""Embedding model name → least cosine similarity of a dense-only pack item (module doc).

multilingual-e5-small (``python -m bench.multilingual --floor-questions 200`` on the JSQuAD
data dir, e5 space): top-1 cosine of 200 JSQuAD questions min 0.845, p5 0.866, p50 0.916;
of 110 nonsense (random letters/kana) and off-topic tasks p50 0.816, p95 0.842, max 0.861.
0.84 keeps every measured real top-1 (and issue 18's one-sentence piano case, 0.847) and
drops ~95 % of nonsense tasks' items. E5's cosines are compressed high, hence the scale."""

COSINE_BASELINE: dict[str, float] = {"intfloat/multilingual-e5-small": 0.75}
"""Embedding model name → its median cosine between *unrelated* texts (missing: 0): the zero
of its dense evidence in score fusion (:func:`retrieval.dense.scale_by_space`). A property of
the model, measured on pairs that cannot be related, never tuned on judgements
(``python -m bench.cosine_baseline``, 2026-12-01): multilingual-e5-small 0.753 (the product's
Japanese/Chinese manual lines × JSQuAD Wikipedia paragraphs), 0.757 (SciFact claims × LoCoMo
dialogue turns), 0.733 (LoCoMo questions × SciFact abstracts); all-MiniLM-L6-v2 −0.005 on both
English pairs, i.e. 0 (absent here)."""

CROSS_LINGUAL_FLOOR: dict[str, float] = {"intfloat/multilingual-e5-small": 0.83}
"""Floor for passages a task finds in a model's space across scripts (a Latin-script task,
passages in other scripts: :mod:`retrieval.dense`) *below the dense leg's head*
(:data:`DENSE_HEAD`, always kept across scripts). Measured on the JSQuAD data dir: top-1 e5
cosine of our 63 English translations of JSQuAD questions min 0.761, p50 0.797 (13 % reach
0.83); of 30 random-letter strings max 0.825 and of 10 English off-topic tasks max 0.815. Real
cross-lingual matches and off-topic tasks are not separable by cosine here, so beyond the head
only the strongest cross-lingual matches stay."""


def similarity_floor(embedder: object, *, cross_lingual: bool = False) -> float | None:
    """The floor for ``embedder`` (by its ``name``), or None when none has been measured.

    Args:
        cross_lingual: The task is in another script than the passages of this model's space
            (:data:`CROSS_LINGUAL_FLOOR`; falls back to the model's own floor).
    """
    name = getattr(embedder, "name", None) or ""
    if cross_lingual and name in CROSS_LINGUAL_FLOOR:
        return CROSS_LINGUAL_FLOOR[name]
    return DENSE_SIMILARITY_FLOOR.get(name)


CROSS_LINGUAL_BASELINE: dict[str, float] = {"intfloat/multilingual-e5-small": 0.70}
"""Embedding model name → its median cosine between unrelated texts of *different* languages:
the zero of its dense evidence when a Latin-script task is scored in its space (issue 37).
``python -m bench.cosine_baseline``: SciFact claims × JSQuAD paragraphs 0.706 (p90 0.734). With the
same-language 0.75, every passage of an English question's e5 list under 0.75 scored 0 and fell
back to passage-id order (English questions over JSQuAD: DENSE nDCG@10 0.8550 against 0.8761 for
the same model used plainly); the lists' tenth cosine is >= 0.717 there, so 0.70 keeps the head in
cosine order."""


def cosine_baseline(embedder: object, *, cross_lingual: bool = False) -> float:
    """The unrelated-text cosine of ``embedder`` (:data:`COSINE_BASELINE` by its ``name``; 0
    when none is listed); across languages :data:`CROSS_LINGUAL_BASELINE` where listed."""
    name = getattr(embedder, "name", None) or ""
    if cross_lingual and name in CROSS_LINGUAL_BASELINE:
        return CROSS_LINGUAL_BASELINE[name]
    return COSINE_BASELINE.get(name, 0.0)


def dense_evidence(
    ranked: Sequence[tuple[str, float]], model: object, *, cross_lingual: bool = False
) -> list[tuple[str, float]]:
    """The dense leg as score fusion reads it (:func:`retrieval.fusion.hybrid_fusion`): its scores
    rescaled from ``model``'s :func:`cosine_baseline` to the leg's top score
    (:func:`retrieval.dense.scale_by_space` with one space), so e5's compressed cosines still
    separate a match from a miss. The merged dense leg is scored in one space's cosines, its lead's
    (:func:`retrieval.dense.merge_spaces`), so one model's baseline serves the whole list; for a
    model without a baseline this is the fusion's own scale-to-top: the same scores.

    Args:
        ranked: The dense leg, ``(passage id, score in the lead space's cosines)`` best first.
        model: The lead space's embedding model (by its ``name``), or None (baseline 0).
        cross_lingual: A Latin-script task scored in the multilingual space
            (:data:`CROSS_LINGUAL_BASELINE`).

    Returns:
        The same ids in the same order, scores in [0, 1].
    """
    return scale_by_space(ranked, {}, {"": cosine_baseline(model, cross_lingual=cross_lingual)})


def dense_head_kept(
    ranked: Sequence[tuple[str, float]],
    floor: float | None,
    *,
    dense_only: bool,
    cross_lingual: bool,
    baseline: float = 0.0,
) -> set[str]:
    """The dense leg's first :data:`DENSE_HEAD` passages that no floor drops (module doc of
    :data:`DENSE_HEAD`): across scripts always; in a DENSE pack when its best score clears
    ``floor`` (a pack whose best passage is under the floor still gets no items: "zzzz qqqq");
    none otherwise (a HYBRID pack's dense-only passages in the task's own language must each
    clear the floor). A head passage at or under the model's unrelated-text ``baseline`` carries no
    evidence (its fused score would be 0) and is not kept.

    Args:
        ranked: The dense leg, best first.
        floor: The floor of the leg's scores (its lead model's), or None.
        dense_only: The pack is DENSE.
        cross_lingual: The leg is scored in the multilingual space for a Latin-script task.
        baseline: The model's unrelated-text cosine (:func:`cosine_baseline`).
    """
    head = [pid for pid, cos in ranked[:DENSE_HEAD] if cos > baseline]
    if cross_lingual:
        return set(head)
    if dense_only and ranked and (floor is None or ranked[0][1] >= floor):
        return set(head)
    return set()


def apply_floor(
    fused: Sequence[Fused],
    cosine: Mapping[str, float],
    floor: float | Mapping[str, float | None] | None,
    keep: Collection[str] = (),
) -> list[Fused]:
    """Drop the fused items that only the dense leg found with cosine < ``floor``.

    Items with a lexical (or temporal ``graph``) rank always stay; the others keep their scores and ranks (the
    floor removes items, it does not re-rank), so a pack whose items all clear the floor
    is unchanged.

    Args:
        fused: The fused legs (:func:`app.packs.fusion.fuse_legs`), in rank order.
        cosine: Passage id → the dense leg's cosine similarity (for every dense result).
        floor: Least cosine of a dense-only item; None keeps everything; a mapping gives each
            passage the floor of the model whose space it was found in (None or absent: kept).
        keep: Passage ids kept whatever their cosine (:func:`dense_head_kept`).

    Returns:
        The kept items, in the same order.
    """
    if floor is None:
        return list(fused)

    def least(pid: str) -> float | None:
        return floor.get(pid) if isinstance(floor, Mapping) else floor

    return [
        f
        for f in fused
        if "lexical" in f.ranks
        or "graph" in f.ranks
        or f.id in keep
        or (bar := least(f.id)) is None
        or cosine.get(f.id, 0.0) >= bar
    ]


def evidence_notes(
    retrieval: str,
    results: Mapping[str, Sequence[str]],
    cosine: Mapping[str, float],
    floor: float | None,
    kept_dense_only: int,
    model: str,
    *,
    best_text: str | None = None,
) -> list[str]:
    """Notes for a pack with no lexical evidence and weak (or no) dense evidence.

    Args:
        retrieval: ``HYBRID``, ``LEXICAL`` or ``DENSE``.
        results: Leg name → passage ids the leg returned (a leg that did not run, was
            skipped or did not finish in time is absent).
        cosine: Passage id → the dense leg's cosine similarity.
        floor: The model's floor, or None.
        kept_dense_only: Fused items without a lexical rank that cleared the floor (or all
            of them, without a floor).
        model: The embedding model's name (named in notes).
        best_text: Replaces "best cosine similarity …, under the floor … for <model>" in notes
            when several models were searched: each model's best cosine and its floor.

    Returns:
        Zero or one note; none when BM25 found something (or, in DENSE mode, when a
        passage cleared the floor).
    """
    best = max(cosine.values(), default=None)
    floor_text = f"floor {floor:.2f} for {model}" if floor is not None else f"no floor is known for {model}"
    if best is None:
        weak = "the dense leg found no passage"
    elif best_text is not None:
        weak = f"no passage is similar enough to the task ({best_text})"
    else:
        weak = f"no passage is similar enough to the task (best cosine similarity {best:.2f}, under the {floor_text})"
    if retrieval == "DENSE":
        return [f"{weak}: no items"] if "dense" in results and not kept_dense_only else []
    if "lexical" not in results or results["lexical"]:
        return []  # BM25 found something, or did not finish in time (the pack says so)
    lexical = "no passage matched any query word"
    if retrieval == "LEXICAL" or "dense" not in results:
        return [f"{lexical} (BM25); try other words" + (" or HYBRID" if retrieval == "LEXICAL" else "")]
    if kept_dense_only:
        evidence = best_text or f"best cosine similarity {best:.2f}; {floor_text}"
        return [
            f"{lexical}: every item comes from dense similarity alone ({evidence}) — check that the items are relevant"
        ]
    return [f"{lexical}, and {weak}: no items"]
