"""Packs and the BM25 leg in one process: first pass (cold caches) vs the same tasks again.

Usage: ``.venv/bin/python -m bench.warm_packs [--data-dir bench/out/scifact] [--dataset scifact]
[--queries 80] [--retrieval HYBRID]``

The server keeps what recurs between packs: query vectors (LRU), decoded BM25 posting lists
(:class:`retrieval.lexical.scoring.SegmentArrays`), passage ids per searcher, passage rows per
corpus generation (:mod:`app.packs.row_cache`) and shingle sets. :mod:`bench.latency` sends
distinct tasks once each (mostly cold); agents repeat tasks and share vocabulary. This runs
``--queries`` dataset tasks through :func:`app.packs.service.build_pack` (4,000-token budget)
twice in a fresh process and prints p50/mean ms and CPU ms per pack for each pass, then the
BM25 leg alone (``WhooshIndex.search``, limit 200) over the same tasks, twice. A data dir
built by :mod:`bench.beir` is required. Saves ``bench/out/results/warm-packs-<dataset>.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from pathlib import Path

from bench.beir import DATASETS, open_services, selected_queries
from bench.common import OUT, machine, save_results


def _summary(ms: list[float], cpu_ms: float) -> dict:
    return {"p50_ms": statistics.median(ms), "mean_ms": statistics.mean(ms), "cpu_ms_per_call": cpu_ms}


async def run(data_dir: Path, dataset: str, n: int, retrieval: str) -> dict:
    """Both passes of packs and of the BM25 leg; returns the figures."""
    from cairn.app.packs.service import build_pack
    from cairn.app.packs.types import PackRequest
    from cairn.retrieval.lexical.scoring import SegmentArrays

    services, principal, close = await open_services(data_dir)
    try:
        queries, _, qids = selected_queries(dataset, None)
        tasks = [queries[q] for q in qids][:n]
        await build_pack(services, principal, PackRequest(task="warm up the model", retrieval=retrieval))
        out: dict = {"dataset": dataset, "tasks": len(tasks), "retrieval": retrieval, "machine": machine()}
        for name in ("packs, first pass", "packs, again"):
            ms, cpu = [], time.process_time()
            for task in tasks:
                t = time.perf_counter()
                await build_pack(services, principal, PackRequest(task=task, max_tokens=4000, retrieval=retrieval))
                ms.append((time.perf_counter() - t) * 1000)
            out[name] = _summary(ms, (time.process_time() - cpu) * 1000 / len(tasks))
        lexical = services.indexes.lexical
        for name in ("BM25 leg, first pass", "BM25 leg, again"):
            if name.endswith("first pass"):  # empty caches: no decoded postings, no passage ids yet
                lexical._segment_arrays = SegmentArrays()
                lexical._passage_ids = {}
            ms, cpu = [], time.process_time()
            for task in tasks:
                t = time.perf_counter()
                lexical.search(task, workspace_id=principal.workspace_id, limit=200)
                ms.append((time.perf_counter() - t) * 1000)
            out[name] = _summary(ms, (time.process_time() - cpu) * 1000 / len(tasks))
        return out
    finally:
        await close()


def main() -> None:
    """Parse arguments, run, print and save."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--dataset", choices=sorted(DATASETS), default="scifact")
    ap.add_argument("--data-dir", type=Path, default=None, help="default bench/out/<dataset>")
    ap.add_argument("--queries", type=int, default=80)
    ap.add_argument("--retrieval", default="HYBRID")
    args = ap.parse_args()
    data_dir = args.data_dir or OUT / args.dataset
    res = asyncio.run(run(data_dir, args.dataset, args.queries, args.retrieval))
    for name, row in res.items():
        if isinstance(row, dict) and "p50_ms" in row:
            print(
                f"{name:22s} p50 {row['p50_ms']:6.1f} ms  mean {row['mean_ms']:6.1f}  CPU {row['cpu_ms_per_call']:6.1f} ms"
            )
    save_results(f"warm-packs-{args.dataset}", res)


if __name__ == "__main__":
    main()
