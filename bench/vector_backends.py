"""Benchmark the vector backends of ``retrieval.vectors`` on this machine.

Random unit vectors (384-d, float32, seeded) with payloads spread over 4 workspaces,
16 collections and 2,000 documents are upserted into each backend, then filtered
queries (workspace + 2 of the workspace's collections, limit 100) are timed. Also
reported: how many queries returned exactly the same ids in the same order on both
backends (exact search on both, so this should be all of them).

Backends:
    edge          qdrant-edge-py shard on disk (exact search, no HNSW built)
    edge+hnsw     the same shard after ``optimize()`` (HNSW; approximate)
    client-local  qdrant-client local mode on disk (pure Python, exact)

Usage::

    python bench/vector_backends.py [--points 20000] [--queries 200] [--client-queries 20]

Runs in about 1 minute on an idle 2-core machine. client-local dominates: it commits one
SQLite transaction per point, so its upsert time is bound by disk syncs (31 s idle, 4 min
while other jobs used the disk); ``--tmp-dir /dev/shm`` takes the disk out of it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cairn.retrieval.vectors import ClientVectorIndex, EdgeVectorIndex, VectorIndex, VectorPoint

DIM = 384
WORKSPACES = 4
COLLECTIONS_PER_WORKSPACE = 4
DOCUMENTS = 2_000


def make_points(n: int, rng: np.random.Generator) -> list[VectorPoint]:
    """Build ``n`` random unit vectors with deterministic payloads."""
    vectors = rng.standard_normal((n, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    points = []
    for i in range(n):
        workspace = i % WORKSPACES
        collection = (i // WORKSPACES) % COLLECTIONS_PER_WORKSPACE
        points.append(
            VectorPoint(
                passage_id=f"p{i:07d}",
                vector=vectors[i],
                workspace_id=f"w{workspace}",
                collection_id=f"w{workspace}c{collection}",
                document_id=f"d{i % DOCUMENTS:05d}",
            )
        )
    return points


def make_queries(n: int, rng: np.random.Generator) -> list[tuple[np.ndarray, str, list[str]]]:
    """Build ``n`` (vector, workspace, collections) filtered queries."""
    queries = []
    for i in range(n):
        vector = rng.standard_normal(DIM).astype(np.float32)
        vector /= np.linalg.norm(vector)
        workspace = i % WORKSPACES
        collections = [f"w{workspace}c{(i + k) % COLLECTIONS_PER_WORKSPACE}" for k in (0, 1)]
        queries.append((vector, f"w{workspace}", collections))
    return queries


def upsert(index: VectorIndex, points: list[VectorPoint]) -> float:
    """Upsert in batches of 1,000; return seconds."""
    start = time.perf_counter()
    for i in range(0, len(points), 1_000):
        index.upsert(points[i : i + 1_000])
    return time.perf_counter() - start


def run_queries(
    index: VectorIndex, queries: list[tuple[np.ndarray, str, list[str]]]
) -> tuple[list[float], list[list[str]]]:
    """Run the queries; return per-query milliseconds and result ids."""
    index.search(queries[0][0], workspace_id=queries[0][1], collection_ids=queries[0][2], limit=100)  # warm-up
    times, results = [], []
    for vector, workspace, collections in queries:
        start = time.perf_counter()
        hits = index.search(vector, workspace_id=workspace, collection_ids=collections, limit=100)
        times.append((time.perf_counter() - start) * 1_000)
        results.append([pid for pid, _ in hits])
    return times, results


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered)) - 1))]


def main() -> None:
    """Run the benchmark and print a table."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--points", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--client-queries", type=int, default=20)
    parser.add_argument("--tmp-dir", default=None, help="where to put the stores (default: system temp)")
    args = parser.parse_args()

    rng = np.random.default_rng(20240601)
    points = make_points(args.points, rng)
    queries = make_queries(args.queries, rng)
    rows: list[tuple[str, float, float, float, int, str]] = []
    with tempfile.TemporaryDirectory(prefix="cairn-vbench-", dir=args.tmp_dir) as tmp:
        edge = EdgeVectorIndex(Path(tmp) / "edge", dim=DIM)
        edge_upsert = upsert(edge, points)
        edge_times, edge_results = run_queries(edge, queries)
        edge.close()
        start = time.perf_counter()
        edge = EdgeVectorIndex(Path(tmp) / "edge", dim=DIM)
        reopen = time.perf_counter() - start
        rows.append(
            (
                "edge",
                edge_upsert,
                percentile(edge_times, 50),
                percentile(edge_times, 95),
                len(queries),
                f"reopen {reopen:.2f} s",
            )
        )

        start = time.perf_counter()
        edge.optimize()
        optimize = time.perf_counter() - start
        hnsw_times, hnsw_results = run_queries(edge, queries)
        overlap = statistics.mean(
            len(set(a) & set(b)) / max(1, len(a)) for a, b in zip(hnsw_results, edge_results, strict=True)
        )
        rows.append(
            (
                "edge+hnsw",
                optimize,
                percentile(hnsw_times, 50),
                percentile(hnsw_times, 95),
                len(queries),
                f"write s = optimize(); overlap@100 with exact {overlap:.3f}",
            )
        )
        edge.close()

        client = ClientVectorIndex(path=Path(tmp) / "client", dim=DIM)
        client_upsert = upsert(client, points)
        client_queries = queries[: args.client_queries]
        client_times, client_results = run_queries(client, client_queries)
        same = sum(a == b for a, b in zip(client_results, edge_results, strict=False))
        rows.append(
            (
                "client-local",
                client_upsert,
                percentile(client_times, 50),
                percentile(client_times, 95),
                len(client_queries),
                f"same ids+order as edge: {same}/{len(client_queries)}",
            )
        )
        client.close()

    print(f"{args.points} points x {DIM}-d, filtered queries (workspace + 2 collections), limit 100")
    print(f"{'backend':<13} {'write s':>9} {'p50 ms':>9} {'p95 ms':>9} {'queries':>8}  note")
    for name, up, p50, p95, n, note in rows:
        print(f"{name:<13} {up:>9.2f} {p50:>9.2f} {p95:>9.2f} {n:>8}  {note}")


if __name__ == "__main__":
    main()
