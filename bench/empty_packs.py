"""Can a measured rule tell a nonsense task from a real one whose words no passage holds? (issue 37)

Usage: ``.venv/bin/python -m bench.empty_packs [--data-dir bench/out/scifact-docs500]``

A HYBRID pack is empty when BM25 matches no word of the task and the dense leg's best cosine is
under its model's floor (all-MiniLM-L6-v2: 0.30, :mod:`app.packs.evidence`). Issue 37 asks for a
pack in that case unless the task is nonsense by a documented, measured rule. Over the SciFact
sub-corpus data dir (``python -m bench.beir --dataset scifact --corpus-docs 500``) this prints, for
SciFact claims, 58 one-word medical and food terms (our list), keyboard mash, random-letter strings
and off-topic tasks: how many get no BM25 match, and the distribution (min p5 p25 p50 p75 p95 max) of
features of MiniLM's list of 200 a rule could read — the best cosine, how far it stands out of its
list (:meth:`retrieval.dense.Profile.stand_out`), and best minus median.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

import numpy as np

from bench.beir import open_services
from bench.common import OUT, SHARED, load_queries

MEDICAL = (  # noqa: SIM905 (a literal of 58 quoted words reads worse)
    "prolactin statins turmeric kombucha acrylamide melatonin gluten antioxidants probiotics fluoride caffeine "
    "ketogenic arsenic lycopene carnitine homocysteine resveratrol chlorella spirulina flaxseed phytates lectins "
    "sulforaphane quercetin glucosamine aspartame glyphosate dioxins mercury parabens triclosan bisphenol tamoxifen "
    "metformin berberine curcumin ashwagandha hibiscus moringa oxalates purines gout dyspepsia tinnitus psoriasis "
    "rosacea eczema vitiligo chocolate eggs soy milk coffee tea wine meat fish broccoli"
).split()
MASH = ["asdf jkl; qwer", "qwerty uiop", "zxcv bnm", "hjkl", "fdsa", "zzzz qqqq", "xyzzy plugh", "aaaa bbbb", "qqqq"]


async def run(data_dir: Path) -> None:
    """Print the table (module doc)."""
    from bench.multilingual import OFF_TOPIC, nonsense
    from cairn.retrieval.dense import profile

    services, principal, close = await open_services(data_dir)
    try:
        idx, ws = services.indexes, principal.workspace_id
        model = idx.dense.primary
        queries = load_queries(SHARED / "scifact/queries.jsonl")
        sets = {
            "SciFact claims (every 3rd of 300)": [queries[k] for k in sorted(queries, key=int)[:300:3]],
            "one-word medical/food terms": MEDICAL,
            "keyboard mash": MASH,
            "random letters": [t for t in nonsense(100) if t.isascii()],
            "off-topic": [t for t in OFF_TOPIC if t.isascii()],
        }
        for name, tasks in sets.items():
            rows = []
            for task in tasks:
                hits = idx.vectors.search(model.encode_query(task), workspace_id=ws, limit=200, space=model.space)
                cos = np.array([c for _, c in hits])
                lexical = idx.lexical.search(task, workspace_id=ws, limit=1)
                rows.append((cos[0], profile(hits).stand_out(cos[0]), cos[0] - np.median(cos), not lexical))
            a = np.array(rows, dtype=float)
            under = int(((a[:, 0] < 0.30) & (a[:, 3] > 0)).sum())
            print(f"{name}: {len(rows)} tasks, {int(a[:, 3].sum())} without a BM25 match, {under} of them under 0.30")
            for col, label in enumerate(("best cosine", "stand-out (SD)", "best - median")):
                q = " ".join(f"{np.percentile(a[:, col], p):.3f}" for p in (0, 5, 25, 50, 75, 95, 100))
                print(f"    {label:<15} {q}")
    finally:
        await close()


def main() -> None:
    """Parse arguments and run."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data-dir", type=Path, default=OUT / "scifact-docs500")
    asyncio.run(run(ap.parse_args().data_dir))


if __name__ == "__main__":
    main()
