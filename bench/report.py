"""Regenerate BENCHMARKS.md from the saved benchmark results (optionally running them first).

Usage:
    .venv/bin/python -m bench.report          # render BENCHMARKS.md from bench/out/results/*.json
    .venv/bin/python -m bench.report --run    # run every benchmark first (≈1–2 h on 2 cores,
                                              # most of it embedding SciFact once), then render

``--run`` runs, in order: ``bench.beir`` (SciFact, JSQuAD: Cairn's modes and the LangChain
peer), ``bench.ingest``, ``bench.latency`` on SciFact (10.7k passages; HYBRID and LEXICAL),
``bench.growth`` + ``bench.latency`` on the ~100k-passage data dir, and
``bench.determinism``. Each writes its JSON under ``bench/out/results``; this module only
formats them.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from bench.common import RESULTS, ROOT

RUNS = [
    ["-m", "bench.beir", "--dataset", "scifact"],
    ["-m", "bench.beir", "--dataset", "jsquad", "--max-tokens", "4000"],
    ["-m", "bench.ingest"],
    ["-m", "bench.latency", "--label", "10k"],
    ["-m", "bench.latency", "--label", "10k", "--retrieval", "LEXICAL"],
    ["-m", "bench.growth"],
    ["-m", "bench.latency", "--data-dir", "bench/out/growth", "--label", "100k"],
    ["-m", "bench.latency", "--data-dir", "bench/out/growth", "--label", "100k", "--retrieval", "LEXICAL"],
    ["-m", "bench.determinism"],
]


def _load(name: str) -> dict | None:
    path = RESULTS / name
    return json.loads(path.read_text()) if path.exists() else None


def _machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import os

    mem = ""
    try:
        kb = int(next(x for x in Path("/proc/meminfo").read_text().splitlines() if x.startswith("MemTotal")).split()[1])
        mem = f", {kb / 1024 / 1024:.0f} GiB RAM"
    except (OSError, StopIteration):
        pass
    return f"{cpu}, {os.cpu_count()} cores{mem}, {platform.system()} {platform.release()}, Python {platform.python_version()}"


def _quality(r: dict, recall_k: str) -> list[str]:
    lines = [f"| system | nDCG@10 | {recall_k} | p50 ms / query | p95 ms |", "|---|---|---|---|---|"]
    key = "recall@100" if recall_k == "R@100" else "recall@10"
    for name, m in r["modes"].items():
        lines.append(
            f"| {name} | {m['ndcg@10']:.4f} | {m[key]:.4f} | {m['latency_ms']['p50']:.1f} | "
            f"{m['latency_ms']['p95']:.1f} |"
        )
    ours = r["modes"].get("Cairn HYBRID")
    fast = r["modes"].get("Cairn HYBRID (maxTokens 4,000)")
    lines.append("")
    for name, m in r["modes"].items():
        if name.startswith("LangChain EnsembleRetriever") and ours:
            line = (
                f"- Cairn HYBRID vs {name}: nDCG@10 {ours['ndcg@10'] - m['ndcg@10']:+.4f} "
                f"(×{ours['ndcg@10'] / max(m['ndcg@10'], 1e-9):.3f}), {recall_k} "
                f"×{ours[key] / max(m[key], 1e-9):.3f}"
            )
            if fast:
                line += (
                    f"; per-query p50 at the default budget {fast['latency_ms']['p50']:.1f} ms vs "
                    f"{m['latency_ms']['p50']:.1f} ms (×{fast['latency_ms']['p50'] / m['latency_ms']['p50']:.2f})"
                )
            lines.append(line + ".")
    return lines


def _latency(rows: list[dict]) -> list[str]:
    lines = [
        "| data | passages | mode | conc. | p50 ms | p95 ms | p99 ms | packs/s | legs sum p50 | p50 / legs |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        for level in ("c1", "c8"):
            x = r[level]
            c = x["client_ms"]
            legs = ratio = ""
            if level == "c1" and x["legs_sum_median_ms"]:  # the goal is stated at concurrency 1
                legs = f"{x['legs_sum_median_ms']:.1f}"
                ratio = f"{c['p50'] / x['legs_sum_median_ms']:.2f}"
            lines.append(
                f"| {r['label']} | {r['passages']:,} | {r['retrieval']} | {x['concurrency']} | "
                f"{c['p50']:.1f} | {c['p95']:.1f} | {c['p99']:.1f} | {x['packs_per_s']:.1f} | {legs} | {ratio} |"
            )
    lines += [
        "",
        "Server breakdown at concurrency 1 (medians, ms):",
        "",
        "| data | mode | embed | BM25 | vectors | legs (wall) | fusion | as-of resolve | dedup + pack | re-check | contradictions | replay write | rest of server | HTTP + GraphQL | first streamed item p50 | peak RSS MiB |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        x = r["c1"]
        st = x["stages_median_ms"]
        g = lambda k: st.get(k) or 0.0  # noqa: E731
        lines.append(
            f"| {r['label']} | {r['retrieval']} | {g('embedMs'):.1f} | {g('lexicalMs'):.1f} | {g('vectorMs'):.1f} | "
            f"{g('legsMs'):.1f} | {g('fusionMs'):.2f} | {g('resolveMs'):.1f} | {g('dedupPackMs'):.1f} | "
            f"{g('recheckMs'):.1f} | {g('contradictionMs'):.1f} | {g('replayMs'):.1f} | "
            f"{x['other_server_median_ms']:.1f} | {x['http_graphql_median_ms']:.1f} | "
            f"{r['stream']['first_item_ms']['p50']:.1f} | {r['peak_rss_mb']:.0f} |"
        )
    return lines


def render() -> str:
    """BENCHMARKS.md text from the saved results (sections without results say so)."""
    out = [
        "# Benchmarks",
        "",
        f"Generated by `python -m bench.report` on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC.",
        "",
        f"Machine: {_machine()}.",
        "",
        "Regenerate everything: `.venv/bin/python -m bench.report --run` (runs the commands below, then "
        "rewrites this file). Figures are printed by each command too; none of them is a timed test.",
        "",
        "nDCG@10 everywhere is trec_eval's `ndcg_cut.10` (as pytrec_eval and BEIR report it): linear gain "
        "rel / log2(rank + 1), normalised by the ideal ordering of the qrels (`bench/common.py`); on the binary "
        "qrels used here it equals the exponential-gain (2^rel − 1) variant.",
        "",
    ]
    for ds, title, rk in (
        ("scifact", "SciFact test (5,183 abstracts, 300 queries, 339 qrels)", "R@100"),
        ("jsquad", "JSQuAD valid (Japanese, 2,304 passages, 4,442 questions)", "R@10"),
    ):
        out += [f"## Quality — {title}", ""]
        r = _load(f"beir-{ds}.json")
        if r is None:
            out += [f"Not run yet: `python -m bench.beir --dataset {ds}`.", ""]
            continue
        budget = (
            f"maxTokens {r['max_tokens']:,} so ≥ 100 documents rank (recall@100)"
            if r["max_tokens"] >= 32000
            else f"maxTokens {r['max_tokens']:,} (recall@10 needs the top 10 only)"
        )
        out += [
            f"Command: `{r.get('command', f'python -m bench.beir --dataset {ds}')}` — through "
            f"`build_pack` (the contextPack resolver's service), {budget}; the peer is LangChain "
            "EnsembleRetriever (BM25Retriever + FAISS over the same passages and the same stored vectors, "
            "RRF c = 60, weights 0.5/0.5), run in the same process right after. Latency columns are per "
            "query in-process (Cairn at the stated budget, and at the default 4,000 where shown); these "
            "runs shared the machine with other work, so compare latencies within a table, not across.",
            "",
        ]
        out += _quality(r, rk) + [""]
    out += [
        "Rerank: not measured — no cross-encoder can be loaded offline here (the model hub is "
        "unreachable; all-MiniLM-L6-v2 is the only packaged model).",
        "",
    ]
    out += ["## Latency and throughput — contextPack over HTTP on loopback", ""]
    rows = [
        r
        for r in (_load(f"latency-{label}-{mode}.json") for label in ("10k", "100k") for mode in ("hybrid", "lexical"))
        if r
    ]
    if rows:
        out += [
            "Command: `python -m bench.latency [--data-dir D] --label L [--retrieval R]` — a `cairn serve` "
            "process, an agent credential, httpx keep-alive clients; 100 SciFact queries at concurrency 1, "
            "200 at concurrency 8; maxTokens 4,000 (the default). `legs sum` = BM25 + query embedding + "
            "vector search (the legs run concurrently, so a pack can beat their sum).",
            "",
        ]
        out += _latency(rows) + [""]
        if any(r["label"] == "100k" for r in rows):
            g = _load("growth-build.json") or {}
            out += [
                f"The 100k data dir (`python -m bench.growth`): SciFact + JSQuAD + TimeQA pages cut into "
                f"{g.get('chunk_max_tokens', 50)}-token passages ({g.get('passages', '~100k')} passages) with "
                "stand-in unit vectors (embedding 100k passages takes ~90 min here; queries are embedded by "
                "the real model and the vector search does the same work).",
                "",
            ]
    else:
        out += ["Not run yet: `python -m bench.latency --label 10k`.", ""]
    ing = _load("ingest.json")
    out += ["## Ingest", ""]
    if ing:
        out += [
            f"Command: `{ing['command']}` — SciFact's first {ing['documents']} abstracts → {ing['passages']} passages.",
            "",
            "| pipeline | passages/s | documents/s |",
            "|---|---|---|",
            f"| raw encoder (all-MiniLM-L6-v2, batches of 64) | {ing['raw_passages_per_s']:.1f} | |",
            f"| `cairn ingest` end to end (parse, chunk, SQL, BM25, embed, vectors) | {ing['ingest_passages_per_s']:.1f} | "
            f"{ing['ingest_docs_per_s']:.1f} |",
            "",
            f"Ingest / raw encoder: **{ing['ratio']:.2f}** (goal ≥ 0.90).",
            "",
        ]
    else:
        out += ["Not run yet: `python -m bench.ingest`.", ""]
    det = _load("determinism.json")
    out += ["## Determinism", ""]
    if det:
        out += [f"Command: `{det['command']}` — {det['summary']}", ""]
    else:
        out += ["Not run yet: `python -m bench.determinism`.", ""]
    return "\n".join(out).rstrip() + "\n"


def main() -> None:
    """Optionally run every benchmark, then write BENCHMARKS.md."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--run", action="store_true", help="run every benchmark first (long)")
    args = ap.parse_args()
    if args.run:
        for cmd in RUNS:
            print("$ python", " ".join(cmd), flush=True)
            subprocess.run([sys.executable, *cmd], check=True, cwd=ROOT)
    (ROOT / "BENCHMARKS.md").write_text(render(), encoding="utf-8")
    print(f"wrote {ROOT / 'BENCHMARKS.md'}")


if __name__ == "__main__":
    main()
