"""contextPack latency and throughput with 1 worker vs 2 on one PostgreSQL (issue 19).

Usage: ``.venv/bin/python -m bench.workers [--docs 300] [--queries 60] [--retrieval HYBRID]``

1. Creates a fresh PostgreSQL database (``CAIRN_BENCH_POSTGRES_URL``, default the local
   trust-auth server), migrates it, adds an owner and an agent credential with the CLI, and
   writes the first ``--docs`` SciFact documents straight to SQL (no index: the workers must
   follow the change log).
2. Starts worker 1 (``cairn serve``, own data dir) and times start-to-ready (model load + catch-up:
   encoding every passage). Measures packs with :mod:`bench.latency`'s client: concurrency 1
   (``--queries`` packs in sequence) and concurrency 8.
3. Starts worker 2 (own data dir, same database) and times its catch-up. Measures again with the
   clients spread over both workers (concurrency 1 alternates; concurrency 8 = 4 clients per
   worker), then the cross-worker lag: a document written through worker 1 until worker 2's
   LEXICAL pack has it (5 samples).

Prints the figures and saves ``bench/out/results/workers.json``. On a 2-core machine two
workers share the same two cores, so throughput can only grow where one worker leaves a core
idle (waiting on PostgreSQL, the event loop's hand-offs); see BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import secrets
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import httpx

from bench.beir import DATASETS
from bench.common import OUT, RESULTS, ROOT, SHARED, load_qrels, load_queries, machine, percentiles, read_jsonl_gz
from bench.latency import _free_port, _one

ADMIN_URL = os.environ.get("CAIRN_BENCH_POSTGRES_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/postgres")


async def _admin(sql: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(ADMIN_URL.replace("postgresql+asyncpg://", "postgresql://"), timeout=5)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


def _cli(*args: str, env: dict, data_dir: Path) -> dict:
    out = subprocess.run(
        [sys.executable, "-m", "cairn.app.cli", *args, "--data-dir", str(data_dir)],
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


async def _write_corpus(url: str, docs: int) -> int:
    from sqlalchemy import select

    from cairn.app.core.db import Database
    from cairn.app.core.models import Workspace
    from cairn.app.corpus import SourceDocument, ingest_documents

    db = Database(url)
    try:
        async with db.session() as s:
            ws = (await s.execute(select(Workspace.id).where(Workspace.name == "default"))).scalar_one()
        rows = []
        for row in read_jsonl_gz(SHARED / DATASETS["scifact"][0]):
            rows.append(SourceDocument(str(row["_id"]), str(row.get("title") or ""), str(row["text"])))
            if len(rows) >= docs:
                break
        report = await ingest_documents(db, None, workspace_id=ws, collection="scifact", documents=iter(rows))
        return report.new_passages
    finally:
        await db.dispose()


def _start(name: str, data_dir: Path, env: dict) -> tuple[subprocess.Popen, str, float, dict]:
    port = _free_port()
    log = open(OUT / f"workers-{name}.log", "wb")
    t = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "cairn.app.cli", "serve", "--port", str(port), "--data-dir", str(data_dir)],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited; see {log.name}")
        try:
            r = httpx.get(f"{base}/readyz", timeout=2)
            if r.status_code == 200:
                return proc, base, time.perf_counter() - t, r.json()
        except httpx.HTTPError:
            pass
        time.sleep(0.2)


async def _level(bases: list[str], token: str, tasks: list[str], concurrency: int, args) -> dict:
    """``concurrency`` clients, client i on ``bases[i % len(bases)]``; c1 alternates workers per pack."""
    headers = {"Authorization": f"Bearer {token}"}
    clients = [httpx.AsyncClient(base_url=b, headers=headers, timeout=120) for b in bases]
    queue = list(tasks)
    samples: list[float] = []
    turn = [0]

    async def client(i: int) -> None:
        while queue:
            task = queue.pop()
            c = clients[(turn[0] if concurrency == 1 else i) % len(clients)]
            turn[0] += 1
            ms, _ = await _one(c, task, args)
            samples.append(ms)

    t = time.perf_counter()
    try:
        await asyncio.gather(*(client(i) for i in range(concurrency)))
    finally:
        for c in clients:
            await c.aclose()
    wall = time.perf_counter() - t
    return {
        "concurrency": concurrency,
        "packs": len(samples),
        "packs_per_s": len(samples) / wall,
        **percentiles(samples),
    }


def _lag(w1: str, w2: str, token: str, owner: str, samples: int = 5) -> list[float]:
    """Seconds from an upsert through ``w1`` returning until ``w2``'s LEXICAL pack has the document."""
    gql = "mutation($n:String!){createCollection(name:$n){id}}"
    h_owner = {"Authorization": f"Bearer {owner}"}
    coll = httpx.post(f"{w1}/graphql", json={"query": gql, "variables": {"n": "lag"}}, headers=h_owner, timeout=30)
    coll_id = coll.json()["data"]["createCollection"]["id"]
    out = []
    for i in range(samples):
        word = f"zq{secrets.token_hex(4)}"
        text = f"Lag probe {i}: the marker word is {word}."
        up = "mutation($i:UpsertDocumentInput!){upsertDocument(input:$i){documentId}}"
        variables = {"i": {"collectionId": coll_id, "externalId": f"lag-{i}", "title": "", "text": text}}
        httpx.post(f"{w1}/graphql", json={"query": up, "variables": variables}, headers=h_owner, timeout=60)
        t = time.perf_counter()
        q = {
            "query": "query($i:ContextPackInput!){contextPack(input:$i){items{externalId}}}",
            "variables": {"i": {"task": word, "retrieval": "LEXICAL"}},
        }
        while True:
            r = httpx.post(f"{w2}/graphql", json=q, headers={"Authorization": f"Bearer {token}"}, timeout=30)
            if any(it["externalId"] == f"lag-{i}" for it in r.json()["data"]["contextPack"]["items"]):
                out.append(time.perf_counter() - t)
                break
            if time.perf_counter() - t > 30:
                out.append(float("inf"))
                break
            time.sleep(0.01)
    return out


def run(args) -> dict:
    """Create the database, start the workers, measure, stop, drop; returns the results."""
    name = f"cairn_bench_{secrets.token_hex(4)}"
    url = f"{ADMIN_URL.rsplit('/', 1)[0]}/{name}"
    asyncio.run(_admin(f'CREATE DATABASE "{name}"'))
    OUT.mkdir(parents=True, exist_ok=True)
    root = OUT / f"workers-{name}"
    env = dict(
        os.environ,
        PYTHONHASHSEED="0",
        CAIRN_DATABASE_URL=url,
        CAIRN_RATE_LIMIT_PACKS_PER_MINUTE="0",
        CAIRN_RATE_LIMIT_WRITES_PER_MINUTE="0",
        CAIRN_LOG_LEVEL="WARNING",
    )
    procs: list[subprocess.Popen] = []
    try:
        from cairn.app.core.migrate import upgrade_database

        upgrade_database(url)
        member = _cli("members", "add", "bench", "--role", "owner", env=env, data_dir=root / "cli")
        agent = _cli(
            "credentials", "create", "--creator", member["memberId"], "--name", "bench", env=env, data_dir=root / "cli"
        )
        passages = asyncio.run(_write_corpus(url, args.docs))
        queries = load_queries(SHARED / DATASETS["scifact"][1])
        pool = [queries[q] for q in sorted(load_qrels(SHARED / DATASETS["scifact"][2]))]
        random.Random(7).shuffle(pool)
        need = 10 + 6 * args.queries
        tasks = (pool * (need // len(pool) + 1))[:need]
        p1, w1, ready1, body1 = _start("w1", root / "w1", env)
        procs.append(p1)
        out: dict = {"machine": machine(), "docs": args.docs, "passages": passages, "retrieval": args.retrieval}
        out["w1_start_to_ready_s"], out["w1_ready"] = ready1, body1["indexCatchUp"]
        token = agent["token"]
        asyncio.run(_level([w1], token, tasks[:10], 1, args))  # warm-up
        q = args.queries
        out["one_c1"] = asyncio.run(_level([w1], token, tasks[10 : 10 + q], 1, args))
        out["one_c8"] = asyncio.run(_level([w1], token, tasks[10 + q : 10 + 3 * q], 8, args))
        p2, w2, ready2, body2 = _start("w2", root / "w2", env)
        procs.append(p2)
        out["w2_start_to_ready_s"], out["w2_ready"] = ready2, body2["indexCatchUp"]
        asyncio.run(_level([w2], token, tasks[:10], 1, args))  # warm-up
        out["two_c1"] = asyncio.run(_level([w1, w2], token, tasks[10 + 3 * q : 10 + 4 * q], 1, args))
        out["two_c8"] = asyncio.run(_level([w1, w2], token, tasks[10 + 4 * q : 10 + 6 * q], 8, args))
        out["lag_s"] = _lag(w1, w2, token, member["token"])
        return out
    finally:
        for p in procs:
            p.terminate()
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        asyncio.run(_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def print_results(r: dict) -> None:
    """Print the figures."""
    print(f"machine: {r['machine']}; SciFact first {r['docs']} docs = {r['passages']} passages; {r['retrieval']}")
    print(f"worker 1 start-to-ready {r['w1_start_to_ready_s']:.1f} s ({r['w1_ready']})")
    print(f"worker 2 start-to-ready {r['w2_start_to_ready_s']:.1f} s ({r['w2_ready']})")
    print(f"{'setup':<24}{'packs/s':>9}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}")
    for key, label in (
        ("one_c1", "1 worker,  c=1"),
        ("two_c1", "2 workers, c=1"),
        ("one_c8", "1 worker,  c=8"),
        ("two_c8", "2 workers, c=8 (4+4)"),
    ):
        x = r[key]
        print(f"{label:<24}{x['packs_per_s']:>9.1f}{x['p50']:>9.1f}{x['p95']:>9.1f}{x['p99']:>9.1f}")
    print("cross-worker lag (write on 1 → LEXICAL pack on 2), s:", [round(v, 3) for v in r["lag_s"]])


def main() -> None:
    """CLI entry point."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--docs", type=int, default=300)
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--max-tokens", type=int, default=4000)
    ap.add_argument("--retrieval", default="HYBRID")
    args = ap.parse_args()
    results = run(SimpleNamespace(**vars(args)))
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "workers.json").write_text(json.dumps(results, indent=2))
    print_results(results)


if __name__ == "__main__":
    main()
