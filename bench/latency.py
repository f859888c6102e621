"""contextPack latency and throughput through HTTP on loopback, with a real server process.

Usage: ``.venv/bin/python -m bench.latency [--data-dir bench/out/scifact] [--dataset scifact]
[--queries 100] [--max-tokens 4000] [--retrieval HYBRID] [--workers 1] [--label 10k]``

1. Starts ``cairn serve`` on the data dir (a separate process, like production), creates a
   member and an agent credential with the CLI, and warms the server up (model load).
2. Concurrency 1: ``--queries`` dataset queries in sequence through ``POST /graphql``
   (httpx, keep-alive). Concurrency 8: 8 clients over ``2 × --queries`` queries. Reports
   client-side p50/p95/p99 and packs per second.
3. The server's own breakdown per pack (from the ``timings`` it returns, medians):
   query embedding, BM25, vector search, fusion, as-of resolution, dedup + packing, and the
   legs' wall time, re-check, contradiction flags, replay write, and the rest of the
   server time (``latencyMs`` minus the sequential stages: event-loop and thread hand-offs,
   item building, waiting for the replay write); HTTP + GraphQL serialization = client
   time minus ``latencyMs``.
4. Time to first streamed item over ``POST /v1/context-packs/stream`` (NDJSON): header and
   first item, p50/p95.
5. Peak RSS of the server process (``VmHWM`` from /proc; summed over its processes).

``--workers N`` serves with ``cairn serve --workers N`` (N processes on one port, each with its
own indexes under ``<data dir>/workers/<k>``); the bench waits until all N are ready, and CPU
time and RSS cover the whole process tree. Concurrency 1 is one keep-alive connection, so one
process; concurrency 8's connections spread over the processes as the kernel hands them out.

Results are printed and saved to ``bench/out/results/latency-<label>.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

from bench.beir import DATASETS
from bench.common import OUT, ROOT, SHARED, load_qrels, load_queries, machine, percentiles, save_results

QUERY = """query($i: ContextPackInput!) { contextPack(input: $i) {
  latencyMs tokensUsed items { rank }
  timings { embedMs lexicalMs vectorMs legsMs fusionMs resolveMs dedupPackMs recheckMs contradictionMs replayMs } } }"""
STAGES = (
    "embedMs",
    "lexicalMs",
    "vectorMs",
    "legsMs",
    "fusionMs",
    "resolveMs",
    "dedupPackMs",
    "recheckMs",
    "contradictionMs",
    "replayMs",
)


def _cairn(*args: str, data_dir: Path) -> dict:
    out = subprocess.run(
        [sys.executable, "-m", "cairn.app.cli", *args, "--data-dir", str(data_dir)],
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stat(pid: int) -> list[str]:
    """The fields of ``/proc/<pid>/stat`` after the command name (field 3 on is index 0 on)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def process_tree(pid: int) -> list[int]:
    """``pid`` and its living descendants (``cairn serve --workers N``: uvicorn's worker processes)."""
    parent: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent[int(entry.name)] = int(_stat(int(entry.name))[1])
            except (OSError, IndexError, ValueError):
                continue
    tree, frontier = [pid], [pid]
    while frontier:
        frontier = [child for child, up in parent.items() if up in frontier]
        tree += frontier
    return tree


def cpu_seconds(pid: int) -> float:
    """User + system CPU time so far of a process and its descendants, in seconds (``/proc/<pid>/stat``)."""
    total = 0
    for p in process_tree(pid):
        try:
            fields = _stat(p)
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def _measured(pid: int, level) -> dict:
    """Run one level and add the server's CPU time per pack and the cores it used."""
    cpu = cpu_seconds(pid)
    t = time.perf_counter()
    out = level()
    wall = time.perf_counter() - t
    used = cpu_seconds(pid) - cpu
    out["server_cpu_ms_per_pack"] = used * 1000 / out["packs"]
    out["server_cores_used"] = used / wall
    return out


def peak_rss_mb(pid: int) -> float:
    """Peak resident set size (VmHWM) of a process, summed over it and its descendants, in MiB."""
    total = 0.0
    for p in process_tree(pid):
        try:
            lines = Path(f"/proc/{p}/status").read_text().splitlines()
        except OSError:
            continue
        total += sum(int(line.split()[1]) / 1024 for line in lines if line.startswith("VmHWM:"))
    return total or float("nan")


async def _one(client: httpx.AsyncClient, task: str, args) -> tuple[float, dict]:
    t = time.perf_counter()
    r = await client.post(
        "/graphql",
        json={
            "query": QUERY,
            "variables": {"i": {"task": task, "budget": {"maxTokens": args.max_tokens}, "retrieval": args.retrieval}},
        },
    )
    elapsed = (time.perf_counter() - t) * 1000
    body = r.json()
    if body.get("errors"):
        raise RuntimeError(body["errors"])
    return elapsed, body["data"]["contextPack"]


async def _run_level(base: str, token: str, tasks: list[str], concurrency: int, args) -> dict:
    headers = {"Authorization": f"Bearer {token}"}
    keep = 0 if args.new_connections else concurrency  # 0: a new connection per pack (balanced per pack)
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=keep)
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=120, limits=limits) as client:
        queue = list(tasks)
        samples: list[tuple[float, dict]] = []

        async def worker() -> None:
            while queue:
                samples.append(await _one(client, queue.pop(), args))

        t = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        wall = time.perf_counter() - t
    client_ms = [s[0] for s in samples]
    server_ms = [s[1]["latencyMs"] for s in samples]
    stage = {k: statistics.median([s[1]["timings"][k] or 0.0 for s in samples]) for k in STAGES}
    legs = [
        (s[1]["timings"]["lexicalMs"] or 0) + (s[1]["timings"]["embedMs"] or 0) + (s[1]["timings"]["vectorMs"] or 0)
        for s in samples
    ]

    def staged(t: dict) -> float:  # legsMs: the legs' wall time (they run concurrently)
        return sum(
            t[k] or 0.0 for k in ("legsMs", "fusionMs", "resolveMs", "dedupPackMs", "recheckMs", "contradictionMs")
        )

    return {
        "concurrency": concurrency,
        "packs": len(samples),
        "packs_per_s": len(samples) / wall,
        "client_ms": percentiles(client_ms),
        "server_ms": percentiles(server_ms),
        "stages_median_ms": stage,
        "legs_sum_median_ms": statistics.median(legs),
        "other_server_median_ms": statistics.median(
            [sv - staged(s[1]["timings"]) for sv, s in zip(server_ms, samples)]
        ),
        "http_graphql_median_ms": statistics.median([c - sv for c, sv in zip(client_ms, server_ms)]),
    }


async def _first_item(base: str, token: str, tasks: list[str], args) -> dict:
    headers = {"Authorization": f"Bearer {token}"}
    header_ms, item_ms, total_ms = [], [], []
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=120) as client:
        for task in tasks:
            t = time.perf_counter()
            async with client.stream(
                "POST",
                "/v1/context-packs/stream",
                json={"task": task, "budget": {"maxTokens": args.max_tokens}, "retrieval": args.retrieval},
            ) as r:
                first_item = None
                async for line in r.aiter_lines():
                    if not line:
                        continue
                    kind = json.loads(line).get("type")
                    now = (time.perf_counter() - t) * 1000
                    if kind == "header":
                        header_ms.append(now)
                    elif kind == "item" and first_item is None:
                        first_item = now
                        item_ms.append(now)
                total_ms.append((time.perf_counter() - t) * 1000)
    return {
        "header_ms": percentiles(header_ms),
        "first_item_ms": percentiles(item_ms),
        "last_byte_ms": percentiles(total_ms),
        "streams": len(tasks),
    }


def run(args) -> dict:
    """Start the server, measure, stop it; returns the results dict."""
    data_dir = args.data_dir
    member = _cairn("members", "add", "bench-latency", "--role", "owner", data_dir=data_dir)
    agent = _cairn(
        "credentials", "create", "--creator", member["memberId"], "--name", "bench-latency", data_dir=data_dir
    )
    port = _free_port()
    # the bench sends ~3 × --queries packs a minute from one credential: no rate limit unless set
    env = dict(os.environ, PYTHONHASHSEED="0")
    env.setdefault("CAIRN_RATE_LIMIT_PACKS_PER_MINUTE", "0")
    OUT.mkdir(parents=True, exist_ok=True)
    log_path = OUT / f"latency-{args.label}-server.log"
    log = open(log_path, "wb")  # a file, not a pipe: a full pipe would block the server's logging
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cairn.app.cli",
            "serve",
            "--port",
            str(port),
            "--data-dir",
            str(data_dir),
            "--workers",
            str(args.workers),
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        ready: set[int] = set()  # the pids of ready worker processes (one pid without --workers)
        for _ in range(6000):
            try:
                r = httpx.get(f"{base}/readyz", timeout=2)
                if r.status_code == 200:
                    ready.add(r.json().get("worker", {}).get("pid", server.pid))
                    if len(ready) >= args.workers:
                        break
            except httpx.HTTPError:
                pass
            if server.poll() is not None:
                raise RuntimeError(f"server exited: {log_path.read_text()[-2000:]}")
            time.sleep(0.05)
        else:
            raise RuntimeError(f"server not ready after 300 s: {log_path.read_text()[-2000:]}")
        queries = load_queries(SHARED / DATASETS[args.dataset][1])
        qrels = load_qrels(SHARED / DATASETS[args.dataset][2])
        pool = [queries[q] for q in sorted(qrels)]
        random.Random(7).shuffle(pool)
        need = args.queries * 3 + 40
        tasks = (pool * (need // len(pool) + 1))[:need]
        asyncio.run(_run_level(base, agent["token"], tasks[:10], 2, args))  # warm-up: every process's caches
        results = {
            "label": args.label,
            "workers": args.workers,
            "dataset": args.dataset,
            "machine": machine(),
            "retrieval": args.retrieval,
            "max_tokens": args.max_tokens,
            "passages": _passages(data_dir),
        }
        results["c1"] = _measured(
            server.pid, lambda: asyncio.run(_run_level(base, agent["token"], tasks[10 : 10 + args.queries], 1, args))
        )
        results["c8"] = _measured(
            server.pid,
            lambda: asyncio.run(
                _run_level(base, agent["token"], tasks[10 + args.queries : 10 + 3 * args.queries], 8, args)
            ),
        )
        results["stream"] = asyncio.run(_first_item(base, agent["token"], tasks[-30:], args))
        results["peak_rss_mb"] = peak_rss_mb(server.pid)
        return results
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


def _passages(data_dir: Path) -> int:
    import sqlite3

    con = sqlite3.connect(data_dir / "cairn.db")
    try:
        return int(con.execute("select count(*) from passage").fetchone()[0])
    finally:
        con.close()


def print_results(r: dict) -> None:
    """Print one latency result as a small table."""
    print(
        f"\ncontextPack over HTTP, {r['dataset']} ({r['passages']} passages), {r['retrieval']}, "
        f"maxTokens {r['max_tokens']}, {r.get('workers', 1)} server process(es) ({r['machine']})"
    )
    for level in ("c1", "c8"):
        x = r[level]
        c = x["client_ms"]
        print(
            f"concurrency {x['concurrency']}: p50 {c['p50']:.1f} ms  p95 {c['p95']:.1f}  p99 {c['p99']:.1f}  "
            f"{x['packs_per_s']:.1f} packs/s  (server p50 {x['server_ms']['p50']:.1f}; legs sum p50 "
            f"{x['legs_sum_median_ms']:.1f}); server CPU {x['server_cpu_ms_per_pack']:.1f} ms/pack, "
            f"{x['server_cores_used']:.2f} cores"
        )
        print(
            "   stages (median ms): "
            + ", ".join(f"{k[:-2]} {v:.1f}" for k, v in x["stages_median_ms"].items())
            + f", other server {x['other_server_median_ms']:.1f}, HTTP+GraphQL {x['http_graphql_median_ms']:.1f}"
        )
    s = r["stream"]
    print(
        f"NDJSON stream: header p50 {s['header_ms']['p50']:.1f} ms, first item p50 {s['first_item_ms']['p50']:.1f} "
        f"(p95 {s['first_item_ms']['p95']:.1f}), last byte p50 {s['last_byte_ms']['p50']:.1f}"
    )
    print(f"peak RSS of the server (all its processes): {r['peak_rss_mb']:.0f} MiB")
    print(f"packs/s at concurrency 8 / at concurrency 1: {r['c8']['packs_per_s'] / r['c1']['packs_per_s']:.2f}")
    ratio = (
        r["c1"]["client_ms"]["p50"] / r["c1"]["legs_sum_median_ms"] if r["c1"]["legs_sum_median_ms"] else float("nan")
    )
    print(f"p50 at concurrency 1 / sum of legs: {ratio:.2f} (goal ≤ 1.3)")


def main() -> None:
    """Parse arguments, run, print, save JSON."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--dataset", choices=sorted(DATASETS), default="scifact")
    ap.add_argument("--data-dir", type=Path, default=None, help="default bench/out/<dataset>")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--max-tokens", type=int, default=4000)
    ap.add_argument("--retrieval", default="HYBRID")
    ap.add_argument("--workers", type=int, default=1, help="cairn serve --workers (processes on one port)")
    ap.add_argument(
        "--new-connections",
        action="store_true",
        help="a new HTTP connection per pack (default: keep-alive, so each client stays on one server process)",
    )
    ap.add_argument("--label", default=None, help="name of this run in BENCHMARKS.md (default: the dataset)")
    args = ap.parse_args()
    args.data_dir = args.data_dir or OUT / args.dataset
    args.label = args.label or args.dataset
    r = run(args)
    print_results(r)
    save_results(f"latency-{args.label}-{args.retrieval.lower()}", r)


if __name__ == "__main__":
    main()
