"""Refresh the generated blocks of BENCHMARKS.md from the saved benchmark results (optionally
running the benchmarks first).

Usage:
    .venv/bin/python -m bench.report          # rewrite the blocks from bench/out/results/*.json
    .venv/bin/python -m bench.report --run    # run every benchmark first (≈1–2 h on 2 cores,
                                              # most of it embedding SciFact once), then rewrite

BENCHMARKS.md is mostly notes of individual studies, each with the command that produced its
figures. The tables this module can rebuild sit between ``<!-- bench.report:ID -->`` and
``<!-- /bench.report:ID -->`` markers (:data:`BLOCKS`); only those are rewritten, and only
when their results file exists here — a block whose benchmark has not run on this machine
keeps its text (the notes around it are never touched). ``--run`` runs, in order:
``bench.beir`` (SciFact, JSQuAD, LoCoMo turns: Cairn's modes and the LangChain peer in the
same process), ``bench.ingest``, ``bench.latency`` on SciFact (HYBRID and LEXICAL),
``bench.growth`` + ``bench.latency`` on the ~100k-passage data dir, and
``bench.determinism``. Each writes its JSON under ``bench/out/results``; this module only
formats them.
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from bench.common import RESULTS, ROOT

RUNS = [
    ["-m", "bench.beir", "--dataset", "scifact"],
    ["-m", "bench.beir", "--dataset", "jsquad", "--max-tokens", "4000"],
    ["-m", "bench.beir", "--dataset", "locomo", "--max-tokens", "4000"],
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


def _quality(r: dict, recall_ks: tuple[str, ...]) -> list[str]:
    """The modes table of one ``bench.beir`` result (nDCG@10, the given recall columns, per-query
    latency) and HYBRID against each LangChain EnsembleRetriever row."""
    keys = {"R@10": "recall@10", "R@100": "recall@100"}
    lines = [
        "| system | nDCG@10 | " + " | ".join(recall_ks) + " | p50 ms / query | p95 ms |",
        "|---|---|" + "---|" * len(recall_ks) + "---|---|",
    ]
    for name, m in r["modes"].items():
        shown = f"**{m['ndcg@10']:.4f}**" if name == "Cairn HYBRID" else f"{m['ndcg@10']:.4f}"
        recalls = " | ".join(f"{m[keys[k]]:.4f}" for k in recall_ks)
        lines.append(f"| {name} | {shown} | {recalls} | {m['latency_ms']['p50']:.1f} | {m['latency_ms']['p95']:.1f} |")
    ours = r["modes"].get("Cairn HYBRID")
    fast = r["modes"].get("Cairn HYBRID (maxTokens 4,000)")
    key = keys[recall_ks[-1]]
    lines.append("")
    for name, m in r["modes"].items():
        if name.startswith("LangChain EnsembleRetriever") and ours:
            line = (
                f"- Cairn HYBRID vs {name}: nDCG@10 {ours['ndcg@10'] - m['ndcg@10']:+.4f} "
                f"(×{ours['ndcg@10'] / max(m['ndcg@10'], 1e-9):.3f}), {recall_ks[-1]} "
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


def _ran(name: str) -> str:
    """The day a results file was written (UTC)."""
    return f"{datetime.fromtimestamp((RESULTS / name).stat().st_mtime, UTC):%Y-%m-%d}"


def _quality_block(dataset: str, recall_ks: tuple[str, ...]) -> Callable[[], list[str] | None]:
    def block() -> list[str] | None:
        r = _load(f"beir-{dataset}.json")
        if r is None:
            return None
        command = r.get("command", f"python -m bench.beir --dataset {dataset} --max-tokens {r['max_tokens']}")
        return [f"Command: `{command}` (run {_ran(f'beir-{dataset}.json')}).", ""] + _quality(r, recall_ks)

    return block


def _latency_block() -> list[str] | None:
    names = [f"latency-{label}-{mode}.json" for label in ("10k", "100k") for mode in ("hybrid", "lexical")]
    rows = [r for r in (_load(n) for n in names) if r]
    if not rows:
        return None
    last = max(_ran(n) for n in names if (RESULTS / n).exists())
    out = [
        f"Command: `python -m bench.latency [--data-dir D] --label L [--retrieval R]` (last run {last}) — a "
        "`cairn serve` process, an agent credential, httpx keep-alive clients; 100 SciFact queries at concurrency "
        "1, 200 at concurrency 8; maxTokens 4,000 (the default). `legs sum` = BM25 + query embedding + vector "
        "search (the legs run concurrently, so a pack can beat their sum).",
        "",
        *_latency(rows),
    ]
    if any(r["label"] == "100k" for r in rows):
        g = _load("growth-build.json") or {}
        out += [
            "",
            f"The 100k data dir (`python -m bench.growth`): SciFact + JSQuAD + TimeQA pages cut into "
            f"{g.get('chunk_max_tokens', 50)}-token passages ({g.get('passages', '~100k')} passages) with stand-in "
            "unit vectors (embedding 100k passages takes ~90 min here; queries are embedded by the real model and "
            "the vector search does the same work).",
        ]
    return out


def _ingest_block() -> list[str] | None:
    ing = _load("ingest.json")
    if ing is None:
        return None
    return [
        f"Command: `{ing['command']}` (run {_ran('ingest.json')}) — SciFact's first {ing['documents']} abstracts "
        f"→ {ing['passages']} passages.",
        "",
        "| pipeline | passages/s | documents/s |",
        "|---|---|---|",
        f"| raw encoder (all-MiniLM-L6-v2, batches of 64) | {ing['raw_passages_per_s']:.1f} | |",
        f"| `cairn ingest` end to end (parse, chunk, SQL, BM25, embed, vectors) | {ing['ingest_passages_per_s']:.1f} | "
        f"{ing['ingest_docs_per_s']:.1f} |",
        "",
        f"Ingest / raw encoder: **{ing['ratio']:.2f}** (goal ≥ 0.90).",
    ]


def _determinism_block() -> list[str] | None:
    det = _load("determinism.json")
    if det is None:
        return None
    return [f"Command: `{det['command']}` (run {_ran('determinism.json')}) — {det['summary']}"]


BLOCKS: dict[str, Callable[[], list[str] | None]] = {
    "quality-scifact": _quality_block("scifact", ("R@100",)),
    "quality-jsquad": _quality_block("jsquad", ("R@10",)),
    "quality-locomo": _quality_block("locomo", ("R@10", "R@100")),
    "latency": _latency_block,
    "ingest": _ingest_block,
    "determinism": _determinism_block,
}
"""Block id → its renderer (``None`` when its results file is not here: the block is kept)."""

_BLOCK = re.compile(r"(<!-- bench\.report:([\w-]+) -->\n)(.*?)(<!-- /bench\.report:\2 -->)", re.S)
_STAMP = re.compile(r"^Machine of the last refresh: .*$", re.M)


def update(text: str) -> tuple[str, list[str], list[str]]:
    """``text`` (BENCHMARKS.md) with each marked block whose results exist re-rendered.

    Returns (new text, block ids rewritten, block ids kept for want of results).

    Raises:
        ValueError: a block id in the file that :data:`BLOCKS` does not know, or a block of
            :data:`BLOCKS` missing from the file (its markers were edited away).
    """
    found = [m.group(2) for m in _BLOCK.finditer(text)]
    unknown = sorted(set(found) - set(BLOCKS))
    missing = sorted(set(BLOCKS) - set(found))
    if unknown or missing:
        raise ValueError(f"BENCHMARKS.md blocks: unknown {unknown}, missing markers for {missing}")
    rendered = {bid: render() for bid, render in BLOCKS.items()}
    written = [bid for bid in found if rendered[bid] is not None]

    def replace(m: re.Match[str]) -> str:
        lines = rendered[m.group(2)]
        if lines is None:
            return m.group(0)
        return m.group(1) + "\n".join(lines).rstrip() + "\n" + m.group(4)

    text = _BLOCK.sub(replace, text)
    if written:
        text = _STAMP.sub(f"Machine of the last refresh: {_machine()}.", text, count=1)
    return text, written, [bid for bid in found if bid not in written]


def main() -> None:
    """Optionally run every benchmark, then refresh BENCHMARKS.md's generated blocks."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", action="store_true", help="run every benchmark first (long)")
    args = ap.parse_args()
    if args.run:
        for cmd in RUNS:
            print("$ python", " ".join(cmd), flush=True)
            subprocess.run([sys.executable, *cmd], check=True, cwd=ROOT)
    path = ROOT / "BENCHMARKS.md"
    try:
        text, written, kept = update(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        sys.exit(f"error: {exc}")
    path.write_text(text, encoding="utf-8")
    print(f"{path}: rewrote {', '.join(written) or 'no block'}; kept (no results here) {', '.join(kept) or 'none'}")


if __name__ == "__main__":
    main()
