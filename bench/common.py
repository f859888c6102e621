"""Shared benchmark helpers: BEIR loading, nDCG/recall, a bench workspace, timing stats.

nDCG@k: trec_eval's ``ndcg_cut.k`` (what pytrec_eval, and so BEIR, report): linear gain,
DCG = Σ_{i=1..k} rel_i / log2(i + 1), divided by the DCG of the qrels' grades sorted
descending (Järvelin & Kekäläinen 2002). Not the exponential-gain variant (2^rel − 1,
Burges et al. 2005); the two agree on binary qrels (SciFact, JSQuAD, LoCoMo turns: every
grade is 1) and differ on graded ones.
"""

from __future__ import annotations

import gzip
import json
import math
import platform
import statistics
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data"
OUT = ROOT / "bench" / "out"
RESULTS = OUT / "results"


def load_queries(path: Path) -> dict[str, str]:
    """BEIR queries.jsonl → ``{query_id: text}``."""
    out = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            out[str(row["_id"])] = row["text"]
    return out


def load_qrels(path: Path) -> dict[str, dict[str, int]]:
    """BEIR qrels TSV (with header) → ``{query_id: {doc_id: grade}}``."""
    out: dict[str, dict[str, int]] = {}
    with open(path, encoding="utf-8") as fh:
        next(fh)
        for line in fh:
            q, d, s = line.rstrip("\n").split("\t")
            out.setdefault(q, {})[d] = int(s)
    return out


def ndcg_at(ranked: Sequence[str], rels: dict[str, int], k: int = 10) -> float:
    """nDCG@k of a ranked list of doc ids against graded relevance: trec_eval ``ndcg_cut.k``,
    linear gain (module doc). A document listed twice counts once (its first position)."""
    seen: set[str] = set()
    dcg = 0.0
    for i, d in enumerate(ranked[:k]):
        if d not in seen:
            seen.add(d)
            dcg += max(rels.get(d, 0), 0) / math.log2(i + 2)
    ideal = sorted((g for g in rels.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at(ranked: Sequence[str], rels: dict[str, int], k: int = 100) -> float:
    """Share of relevant docs found in the top k."""
    relevant = {d for d, g in rels.items() if g > 0}
    return len(relevant & set(ranked[:k])) / len(relevant) if relevant else 0.0


def percentiles(values: Sequence[float]) -> dict[str, float]:
    """p50/p95/p99 (nearest-rank) of a list of numbers."""
    s = sorted(values)

    def p(q: float) -> float:
        return s[min(len(s) - 1, max(0, math.ceil(q * len(s)) - 1))]

    return {"p50": p(0.50), "p95": p(0.95), "p99": p(0.99), "mean": statistics.fmean(s)}


def machine() -> str:
    """One line describing the machine."""
    import os

    return f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"


def ranked_docs(items) -> list[str]:
    """External doc ids in first-appearance order over pack items and their alternates."""
    seen: dict[str, None] = {}
    for it in items:
        for d in [it["doc"], *it["alts"]]:
            seen.setdefault(d, None)
    return list(seen)


def read_jsonl_gz(path: Path):
    """Yield rows of a (possibly gzipped) JSONL file."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


def save_results(name: str, results: object, *, ensure_ascii: bool = True) -> Path:
    """Write ``results`` as indented JSON to ``bench/out/results/<name>.json``, say so, return the path."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(results, indent=2, ensure_ascii=ensure_ascii))
    print(f"saved {path}")
    return path
