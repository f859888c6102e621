"""Identical packs for identical input across processes with different PYTHONHASHSEED.

Usage: ``.venv/bin/python -m bench.determinism [--queries 50] [--data-dir bench/out/scifact]``

Runs two worker processes one after the other (the embedded stores admit one process at a
time) with ``PYTHONHASHSEED`` 1 and 2; each builds HYBRID and LEXICAL packs (maxTokens
4,000) for the same SciFact queries through ``build_pack`` and writes every item's rank,
citation, score, per-leg ranks, tokens, text hash and alternates. The parent compares them
byte for byte and saves ``bench/out/results/determinism.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

from bench.beir import DATASETS, open_bench
from bench.common import OUT, RESULTS, ROOT, SHARED, load_qrels, load_queries


async def _worker(data_dir: Path, n: int) -> list:
    from cairn.app.packs.service import build_pack
    from cairn.app.packs.types import PackRequest

    services, principal, close = await open_bench(data_dir, "scifact")
    try:
        queries = load_queries(SHARED / DATASETS["scifact"][1])
        qids = sorted(load_qrels(SHARED / DATASETS["scifact"][2]))[:n]
        out = []
        for mode in ("HYBRID", "LEXICAL"):
            for q in qids:
                pack = await build_pack(
                    services, principal, PackRequest(task=queries[q], max_tokens=4000, retrieval=mode)
                )
                out.append(
                    [
                        mode,
                        q,
                        pack.footer.tokens_used,
                        [
                            [
                                i.rank,
                                i.citation.document_id,
                                i.citation.version_id,
                                i.citation.passage_id,
                                i.citation.start,
                                i.citation.end,
                                i.citation.sha256,
                                repr(i.score),
                                i.lexical_rank,
                                i.dense_rank,
                                i.tokens,
                                hashlib.sha256(i.text.encode()).hexdigest(),
                                [a.passage_id for a in i.alternates],
                            ]
                            for i in pack.items
                        ],
                    ]
                )
        return out
    finally:
        await close()


def main() -> None:
    """Run the two workers (or be one, with --worker) and compare."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--data-dir", type=Path, default=OUT / "scifact")
    ap.add_argument("--worker", type=Path, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        args.worker.write_text(json.dumps(asyncio.run(_worker(args.data_dir, args.queries))))
        return
    outs = []
    for seed in ("1", "2"):
        path = OUT / f"determinism-{seed}.json"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "bench.determinism",
                "--queries",
                str(args.queries),
                "--data-dir",
                str(args.data_dir),
                "--worker",
                str(path),
            ],
            check=True,
            cwd=ROOT,
            env=dict(os.environ, PYTHONHASHSEED=seed),
        )
        outs.append(path.read_bytes())
    same = outs[0] == outs[1]
    packs = json.loads(outs[0])
    items = sum(len(p[3]) for p in packs)
    summary = (
        f"{len(packs)} packs ({args.queries} SciFact queries × HYBRID, LEXICAL; {items} items) built in two "
        f"processes with PYTHONHASHSEED 1 and 2: {'byte-identical' if same else 'DIFFERENT'} "
        f"(sha256 {hashlib.sha256(outs[0]).hexdigest()[:16]}"
        f"{'' if same else ' vs ' + hashlib.sha256(outs[1]).hexdigest()[:16]})."
    )
    print(summary)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "determinism.json").write_text(
        json.dumps(
            {
                "identical": same,
                "packs": len(packs),
                "items": items,
                "summary": summary,
                "command": f"python -m bench.determinism --queries {args.queries}",
            },
            indent=2,
        )
    )
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
