"""Each embedding model's cosine between *unrelated* texts: the zero of its dense evidence.

Usage::

    python -m bench.cosine_baseline [--queries 60] [--passages 300]

Score fusion (:func:`retrieval.dense.scale_by_space`) rescales a model's cosines from this
baseline to the model's top cosine for the task, so a cosine that unrelated text reaches
carries no evidence (:data:`app.packs.evidence.COSINE_BASELINE`). It is a property of the
model, measured here on pairs that cannot be related, never tuned on relevance judgements:

- Japanese/Chinese: lines of the product's own documents (``../shared/seeds``: an API
  product's manuals, Japanese and Chinese) as queries × JSQuAD Wikipedia paragraphs as passages;
- English: SciFact claims × LoCoMo dialogue turns, and LoCoMo questions × SciFact abstracts;
- English queries × Japanese passages (the cross-lingual case) for the multilingual model.

Each query is embedded as a query and each passage as a passage (the model's prefixes), as
packs do. Printed per model and pair kind: median, p90, p99 and max of all query × passage
cosines. Needs ``../shared``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import statistics

import numpy as np

from bench.common import SHARED


def _seed_lines(n: int) -> list[str]:
    lines = []
    for path in sorted((SHARED.parent / "seeds").glob("*.txt")):
        lines += [ln.strip() for ln in path.read_text(encoding="utf-8").splitlines() if 15 <= len(ln.strip()) <= 120]
    return random.Random(7).sample(lines, min(n, len(lines)))


def _jsonl(path, n: int, field: str, title: bool = False) -> list[str]:
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh]
    rows = random.Random(11).sample(rows, min(n, len(rows)))
    return [(f"{r.get('title', '')}\n{r[field]}" if title and r.get("title") else r[field]) for r in rows]


def _locomo(n: int) -> tuple[list[str], list[str]]:
    data = json.loads((SHARED / "locomo/locomo10.json").read_text(encoding="utf-8"))
    turns, questions = [], []
    for conv in data:
        c = conv["conversation"]
        for key in sorted(k for k in c if k.startswith("session_") and isinstance(c[k], list)):
            turns += [f"{t['speaker']}: {t['text']}" for t in c[key]]
        questions += [q["question"] for q in conv["qa"]]
    rng = random.Random(13)
    return rng.sample(questions, min(n, len(questions))), rng.sample(turns, min(n * 5, len(turns)))


def _stats(qv: np.ndarray, pv: np.ndarray) -> dict[str, float]:
    sims = (qv @ pv.T).ravel()
    return {
        "pairs": int(sims.size),
        "median": float(np.median(sims)),
        "p90": float(np.quantile(sims, 0.9)),
        "p99": float(np.quantile(sims, 0.99)),
        "max": float(sims.max()),
        "mean": float(statistics.fmean(sims.tolist())),
    }


def main() -> None:
    """Embed the unrelated pairs with each model and print the cosine distribution."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--passages", type=int, default=300)
    args = ap.parse_args()
    from cairn.retrieval.embeddings.e5 import LocalE5
    from cairn.retrieval.embeddings.minilm import LocalMiniLM

    cjk_q = _seed_lines(args.queries)
    ja_p = _jsonl(SHARED / "jsquad/beir/corpus.jsonl", args.passages, "text", title=True)
    claims = _jsonl(SHARED / "scifact/queries.jsonl", args.queries, "text")
    abstracts = _jsonl(SHARED / "scifact/corpus.jsonl.gz", args.passages, "text", title=True)
    lq, turns = _locomo(args.queries)
    turns = turns[: args.passages]
    pairs = {
        "CJK seed lines × JSQuAD paragraphs": (cjk_q, ja_p),
        "SciFact claims × LoCoMo turns": (claims, turns),
        "LoCoMo questions × SciFact abstracts": (lq, abstracts),
        "SciFact claims × JSQuAD paragraphs (cross-lingual)": (claims, ja_p),
    }
    models = {"intfloat/multilingual-e5-small": LocalE5(), "sentence-transformers/all-MiniLM-L6-v2": LocalMiniLM()}
    print(f"{'model':<40} {'pairs':<52} {'median':>7} {'p90':>7} {'p99':>7} {'max':>7}")
    for name, model in models.items():
        for label, (queries, passages) in pairs.items():
            if "MiniLM" in name and "JSQuAD" in label:
                continue  # MiniLM never embeds CJK passages (retrieval/dense.py routes them to e5)
            qv = np.vstack([model.encode_query(q) for q in queries])
            pv = model.encode(passages)
            s = _stats(qv, pv)
            print(f"{name:<40} {label:<52} {s['median']:>7.3f} {s['p90']:>7.3f} {s['p99']:>7.3f} {s['max']:>7.3f}")


if __name__ == "__main__":
    main()
