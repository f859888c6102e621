"""Fusion study (issue 18): cache each leg's ranking once, evaluate fusion methods offline.

Usage::

    python -m bench.fusion cache --dataset scifact|jsquad|locomo   # ingest (idempotent) + cache legs
    python -m bench.fusion eval [--depth 300]                      # every method, dev and test splits

``cache`` ingests the dataset into the same data dir as ``bench/beir.py``
(``bench/out/<dataset>``, gitignored, reused), then for every judged query of every split
runs the two legs exactly as a pack does — BM25 (:meth:`retrieval.lexical.whoosh_index.WhooshIndex.search`)
and the dense leg (the configured embedder, Qdrant Edge search) — to depth
:data:`CACHE_DEPTH`, with the model's vocabulary coverage of the query, and writes them to
``bench/out/fusion/<dataset>-legs.json``. ``eval`` reads the caches (no model, seconds) and
scores each fusion method of :mod:`bench.fusion_methods`: documents ranked by the first appearance of one of their
passages in the fused list (as ``bench/beir.py`` ranks pack items), nDCG@10 and recall@10
(:mod:`bench.common`), per split:

- SciFact: ``train`` qrels (809 claims) tune, ``test`` (300) is reported;
- JSQuAD (valid, 4,442 questions): articles with an even number tune (``dev``), odd ones are
  reported (``test``);
- LoCoMo turns (:mod:`bench.locomo_beir`): conversations 1–5 tune, 6–10 are reported.

A dense-only passage under the model's cosine floor (:mod:`app.packs.evidence`) is dropped
after fusion, as in a pack. Every method sees legs cut to the same ``--depth``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import time
from collections.abc import Mapping, Sequence
from types import SimpleNamespace

from bench import locomo_beir
from bench.beir import DATASETS, corpus_subset, open_bench
from bench.common import OUT, SHARED, load_qrels, load_queries, ndcg_at, recall_at
from bench.fusion_methods import FusionFn, methods

CACHE_DEPTH = 300
CACHE = OUT / "fusion"


def splits(dataset: str) -> dict[str, dict[str, dict[str, int]]]:
    """Split name (``dev``, ``test``) → qrels ``{query id: {doc id: grade}}`` (module doc)."""
    if dataset == "scifact":
        return {
            "dev": load_qrels(SHARED / "scifact/qrels/train.tsv"),
            "test": load_qrels(SHARED / "scifact/qrels/test.tsv"),
        }
    if dataset == "jsquad":
        qrels = load_qrels(SHARED / "jsquad/beir/qrels/valid.tsv")
        even = {q: r for q, r in qrels.items() if int(q[1:].split("p")[0]) % 2 == 0}
        return {"dev": even, "test": {q: r for q, r in qrels.items() if q not in even}}
    if dataset == "locomo":
        locomo_beir.build()
        return {s: load_qrels(p) for s, p in locomo_beir.QRELS.items()}
    raise ValueError(f"unknown dataset {dataset!r}")


def cache_name(dataset: str, corpus_docs: int | None) -> str:
    """Name of a dataset's data dir and cache: ``scifact`` or ``scifact-docs1000``."""
    return dataset if corpus_docs is None else f"{dataset}-docs{corpus_docs}"


async def cache(dataset: str, corpus_docs: int | None = None, e5_all: bool = False) -> None:
    """Ingest ``dataset`` (idempotent) and cache both legs for every judged query (module doc).

    ``corpus_docs``: ingest only the documents judged in any split plus the first this many
    others (``bench/beir.py --corpus-docs``; its own data dir and cache).
    ``e5_all``: also rank every passage (whatever its script) by multilingual-e5-small
    (:func:`_e5_everywhere`), to measure what a second dense model on English would add.
    """
    from sqlalchemy import select

    from cairn.app.core.models import Document, Passage

    if dataset == "locomo":
        locomo_beir.build()
    queries = load_queries(SHARED / DATASETS[dataset][1])
    qids = sorted({q for qrels in splits(dataset).values() for q in qrels})
    documents = None
    if corpus_docs is not None:
        judged = {d for qrels in splits(dataset).values() for rels in qrels.values() for d in rels}
        documents = corpus_subset(dataset, judged, corpus_docs)
    name = cache_name(dataset, corpus_docs)
    services, principal, close = await open_bench(OUT / name, dataset, documents)
    try:
        ws = principal.workspace_id
        async with services.db.session() as s:
            rows = (
                await s.execute(
                    select(Passage.id, Document.external_id)
                    .join(Document, Document.id == Passage.document_id)
                    .where(Passage.workspace_id == ws)
                )
            ).all()
        from cairn.retrieval.dense import merge_spaces

        idx = services.indexes
        dense, vectors = idx.dense, idx.vectors
        primary = dense.primary
        out: dict = {
            "dataset": dataset,
            "depth": CACHE_DEPTH,
            "model": getattr(primary, "name", None),
            "space_model": {name: model.name for name, model in dense.by_space.items()},
            "passage_doc": dict(rows),
            "queries": {},
        }
        has_multi = vectors.has_space(dense.multilingual_space or "", workspace_id=ws)
        t = time.perf_counter()
        for n, q in enumerate(qids, start=1):
            text = queries[q]
            spaces = dense.task_spaces(text, multilingual_has_passages=lambda: has_multi)
            query_vectors = dense.encode_task(text, spaces)
            lists = {
                name: vectors.search(vec, workspace_id=ws, limit=CACHE_DEPTH, space=name)
                for name, vec in query_vectors.items()
            }
            out["queries"][q] = {
                "coverage": float(primary.vocabulary_coverage(text)),
                "lexical": idx.lexical.search(text, workspace_id=ws, limit=CACHE_DEPTH),
                "dense": merge_spaces(lists, CACHE_DEPTH),  # what a pack's dense leg lists
                "dense_spaces": lists,
            }
            if n % 50 == 0 or n == len(qids):
                print(f"\rlegs {n}/{len(qids)} {time.perf_counter() - t:.0f}s", end="", flush=True)
        if e5_all:
            out["e5_all"] = await _e5_everywhere(services, ws, [queries[q] for q in qids], qids, name)
        CACHE.mkdir(parents=True, exist_ok=True)
        (CACHE / f"{name}-legs.json").write_text(json.dumps(out))
        print(f"\nsaved {CACHE / f'{name}-legs.json'}")
    finally:
        await close()


async def _e5_everywhere(services, ws: str, texts: list[str], qids: list[str], name: str) -> dict[str, list]:
    """Query id → ``(passage id, e5 cosine)`` best first over *all* the workspace's passages,
    embedded by multilingual-e5-small exactly as ingest embeds a passage (title, newline, text),
    searched by brute force (numpy). Vectors are cached in ``bench/out/fusion/<name>-e5.npz``."""
    import numpy as np
    from sqlalchemy import select

    from cairn.app.core.models import Document, Passage
    from cairn.retrieval.embeddings.e5 import LocalE5

    async with services.db.session() as s:
        rows = (
            await s.execute(
                select(Passage.id, Document.title, Passage.text)
                .join(Document, Document.id == Passage.document_id)
                .where(Passage.workspace_id == ws)
                .order_by(Passage.id)
            )
        ).all()
    ids = [r[0] for r in rows]
    model = LocalE5()
    store = CACHE / f"{name}-e5.npz"
    if store.exists() and list(np.load(store)["ids"]) == ids:
        matrix = np.load(store)["vectors"]
    else:
        t, parts = time.perf_counter(), []
        for i in range(0, len(rows), 32):
            parts.append(model.encode([services.indexes.embedding_input(r[1], r[2]) for r in rows[i : i + 32]]))
            print(
                f"\re5 passages {min(i + 32, len(rows))}/{len(rows)} {time.perf_counter() - t:.0f}s", end="", flush=True
            )
        matrix = np.vstack(parts).astype(np.float32)
        CACHE.mkdir(parents=True, exist_ok=True)
        np.savez(store, ids=np.array(ids), vectors=matrix)
    out: dict[str, list] = {}
    for q, text in zip(qids, texts):
        scores = matrix @ model.encode_query(text)
        top = np.argsort(-scores, kind="stable")[:CACHE_DEPTH]
        out[q] = [(ids[i], float(scores[i])) for i in top]
    print()
    return out


def load_cache(dataset: str) -> dict:
    """The cached legs of ``dataset`` (run ``cache`` first)."""
    return json.loads((CACHE / f"{dataset}-legs.json").read_text())


def doc_ranking(passages: Sequence[str], passage_doc: Mapping[str, str]) -> list[str]:
    """Documents in first-appearance order of their passages."""
    seen: dict[str, None] = {}
    for p in passages:
        seen.setdefault(passage_doc[p], None)
    return list(seen)


def evaluate(
    data: dict, qrels: Mapping[str, Mapping[str, int]], fuse: FusionFn, depth: int, floor: float | None = 0.30
) -> dict[str, float]:
    """nDCG@10 and recall@10 of ``fuse`` over the split's queries (legs cut to ``depth``)."""
    from cairn.app.packs.evidence import CROSS_LINGUAL_FLOOR, DENSE_SIMILARITY_FLOOR

    nd, r10 = [], []
    space_model = data.get("space_model", {"default": data.get("model")})
    models = {space: SimpleNamespace(name=model) for space, model in space_model.items()}
    for qid, rels in qrels.items():
        q = data["queries"][qid]
        legs = {name: [(p, float(s)) for p, s in q[name][:depth]] for name in ("lexical", "dense")}
        extra = {
            "spaces": {k: [(p, float(s)) for p, s in v[:depth]] for k, v in q.get("dense_spaces", {}).items()},
            "e5_all": [(p, float(s)) for p, s in data.get("e5_all", {}).get(qid, [])[:depth]],
            "models": models,
        }
        # a pack weighs the dense leg by MiniLM's vocabulary coverage only when MiniLM's space is
        # searched (app/packs/service.py); a CJK task searches e5's alone: full weight
        coverage = q["coverage"] if not extra["spaces"] or "minilm" in extra["spaces"] else 1.0
        ids = fuse(legs, coverage, extra)
        if floor is not None:
            keep = {p for p, _ in legs["lexical"]}
            if extra["spaces"]:  # each passage by the floor of the model of its space (as a pack)
                cross = len(extra["spaces"]) > 1
                for space, ranked in extra["spaces"].items():
                    model = space_model.get(space, "")
                    f = CROSS_LINGUAL_FLOOR.get(model) if cross and space != "minilm" else None
                    f = f if f is not None else DENSE_SIMILARITY_FLOOR.get(model, floor)
                    keep.update(p for p, s in ranked if s >= f)
            else:
                keep.update(p for p, s in legs["dense"] if s >= floor)
            e5_floor = DENSE_SIMILARITY_FLOOR.get("intfloat/multilingual-e5-small", 0.84)
            keep.update(p for p, s in extra["e5_all"] if s >= e5_floor)
            ids = [p for p in ids if p in keep]
        docs = doc_ranking(ids, data["passage_doc"])
        nd.append(ndcg_at(docs, dict(rels), 10))
        r10.append(recall_at(docs, dict(rels), 10))
    return {"ndcg@10": statistics.fmean(nd), "recall@10": statistics.fmean(r10), "queries": len(nd)}


def union_recall(data: dict, qrels: Mapping[str, Mapping[str, int]], k: int = 10, depth: int = CACHE_DEPTH) -> float:
    """Share of queries with a relevant document in the top ``k`` documents of *either* leg: the
    recall@k no fusion of the two legs can exceed by much (it may only reorder their top k)."""
    hits = 0
    for qid, rels in qrels.items():
        q = data["queries"][qid]
        found = set()
        for leg in ("lexical", "dense"):
            found |= set(doc_ranking([p for p, _ in q[leg][:depth]], data["passage_doc"])[:k])
        hits += bool(found & set(rels))
    return hits / len(qrels) if qrels else 0.0


def run_eval(datasets: Sequence[str], depth: int, only: str | None = None) -> dict:
    """Evaluate every method on every cached dataset's splits; prints a table, returns the figures."""
    results: dict = {}
    fns = methods()
    caches = {d: load_cache(d) for d in datasets if (CACHE / f"{d}-legs.json").exists()}
    split_qrels = {d: splits(d.split("-docs")[0]) for d in caches}
    for name, fn in fns.items():
        if only and not re.search(only, name) and name not in ("LEXICAL", "DENSE"):
            continue
        row = {}
        for d, data in caches.items():
            for split, qrels in split_qrels[d].items():
                row[f"{d}/{split}"] = evaluate(data, qrels, fn, depth)
        results[name] = row
    cols = [f"{d}/{s}" for d in caches for s in split_qrels[d]]
    print(f"nDCG@10 (recall@10), legs at depth {depth}")
    print(f"{'method':<58}" + "".join(f"{c:>20}" for c in cols))
    for name, row in results.items():
        print(f"{name:<58}" + "".join(f"{row[c]['ndcg@10']:>11.4f} ({row[c]['recall@10']:.3f})" for c in cols))
    union = {
        f"{d}/{split}": union_recall(data, qrels, 10, depth)
        for d, data in caches.items()
        for split, qrels in split_qrels[d].items()
    }
    print(f"{'recall@10 ceiling: gold in either leg top 10':<58}" + "".join(f"{'':>11} ({union[c]:.3f})" for c in cols))
    results["_union_recall@10"] = union
    return results


def main() -> None:
    """Parse arguments and run ``cache`` or ``eval``."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("cache")
    c.add_argument("--dataset", choices=sorted(DATASETS), required=True)
    c.add_argument("--corpus-docs", type=int, default=None, help="judged documents + this many others")
    c.add_argument("--e5-all", action="store_true", help="also rank every passage by multilingual-e5-small")
    e = sub.add_parser("eval")
    e.add_argument("--datasets", default="scifact,jsquad,locomo")
    e.add_argument("--depth", type=int, default=CACHE_DEPTH)
    e.add_argument("--only", default=None, help="only methods whose name matches this regex")
    args = ap.parse_args()
    if args.cmd == "cache":
        asyncio.run(cache(args.dataset, args.corpus_docs, args.e5_all))
    else:
        results = run_eval(args.datasets.split(","), args.depth, args.only)
        CACHE.mkdir(parents=True, exist_ok=True)
        (CACHE / f"eval-depth{args.depth}.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
