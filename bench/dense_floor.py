"""Dense-leg cosine similarity: real queries vs nonsense and off-topic ones (the dense floor).

Usage: ``.venv/bin/python -m bench.dense_floor [--queries N]``

Reads the bench data dirs of ``bench.beir`` (``bench/out/scifact-docs1200``: SciFact's 300
test queries' judged abstracts + 1,200 others; ``bench/out/jsquad``: all 2,304 JSQuAD
paragraphs) and, for each query, runs the two legs as a pack does at the default budget
(BM25 and the vector index, 100 passages each) and records the dense leg's raw scores —
the cosine similarity the vector index returns for the L2-normalised all-MiniLM-L6-v2
vectors.

Queries: the data sets' own (SciFact test claims; JSQuAD questions whose word pieces the
model knows >= 90 %, the others skip the dense leg) against

* nonsense: keyboard mash and random letter strings (seeded), ``zzzz qqqq``;
* off-topic: everyday questions with nothing to do with either corpus.

Printed per group: the distribution of the top-1 cosine, the share of queries with any BM25
hit, and for real queries the cosine of every judged-relevant passage that the dense leg
found and BM25 did not (the dense-only evidence a floor could drop), with how many of
those fall below each candidate floor. Last, for each candidate floor, nDCG@10 and
recall@100 of the fused ranking (RRF k = 60 of the two legs' top 100, the dense leg
weighted as packs weight it) with dense-only passages under the floor dropped, and of the
dense leg alone (DENSE) with passages under the floor dropped — a quick screen;
``bench.beir`` measures the chosen floor through the whole pack pipeline.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import string

from bench.beir import OUT, open_services, selected_queries
from bench.common import ndcg_at, ranked_docs, recall_at

OFF_TOPIC = [
    "What is the best recipe for chocolate chip cookies?",
    "Who won the football world cup in 1998?",
    "How do I change a flat tyre on a bicycle?",
    "What time does the last train to Paris leave?",
    "Which guitar strings sound warmest for folk music?",
    "How many goals did the striker score last season?",
    "Where can I rent a kayak near the lake?",
    "What is the plot of the new superhero movie?",
    "How do I reset my router password?",
    "Which programming language should I learn first?",
    "What should I pack for a ski holiday?",
    "How long do you bake sourdough bread?",
    "Who painted the ceiling of the chapel in Rome?",
    "What are the rules of cricket?",
    "How do I fold a paper crane?",
    "Best hiking trails in the mountains in autumn",
    "Cheap flights to Lisbon in December",
    "How to knit a scarf for beginners",
    "What is the capital of Australia?",
    "Lyrics of the national anthem",
    "How do I merge two branches in git?",
    "Which wine goes with grilled fish?",
    "When does the hardware store open on Sunday?",
    "How to tune a piano at home",
    "Tips for a job interview at a bank",
    "What is the exchange rate of the yen today?",
    "How to grow tomatoes on a balcony",
    "Which board games are fun for six players?",
    "How do I write a cover letter?",
    "Where is the nearest petrol station?",
    "今日の天気はどうですか",
    "おすすめのラーメン屋を教えて",
    "東京から大阪までの新幹線の料金",
    "プログラミングの勉強方法",
    "週末に映画を見に行きたい",
]


def nonsense_queries(n: int, seed: int = 7) -> list[str]:
    """Keyboard mash and random letter strings (seeded), and the issue's ``zzzz qqqq``."""
    rng = random.Random(seed)
    rows = ["qwertyuiop", "asdfghjkl", "zxcvbnm"]
    out = ["zzzz qqqq", "asdf asdf", "qwerty", "lorem ipsum dolor", "xyzzy plugh", "aaaa bbbb cccc"]
    while len(out) < n:
        if rng.random() < 0.5:
            row = rng.choice(rows)
            words = []
            for _ in range(rng.randint(1, 4)):
                i = rng.randrange(len(row) - 3)
                words.append(row[i : i + rng.randint(3, len(row) - i)])
            out.append(" ".join(words))
        else:
            out.append(
                " ".join(
                    "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(3, 9)))
                    for _ in range(rng.randint(1, 4))
                )
            )
    return out


async def measure(data_dir, dataset: str, limit: int | None) -> dict[str, dict]:
    """Per query group: top-1 cosines, BM25-hit flags, and dense-only relevant cosines."""
    from sqlalchemy import select

    from cairn.app.core.models import Document, Passage
    from cairn.retrieval.fusion import rrf
    from cairn.retrieval.pipeline import DENSE_COVERAGE_POWER, DENSE_MIN_COVERAGE

    services, principal, close = await open_services(data_dir)
    try:
        idx, ws = services.indexes, principal.workspace_id
        async with services.db.session() as s:
            ext = dict(
                (
                    await s.execute(
                        select(Passage.id, Document.external_id).join(Document, Document.id == Passage.document_id)
                    )
                ).all()
            )
        queries, qrels, qids = selected_queries(dataset, limit)
        real = [(queries[q], qrels[q]) for q in qids]
        if dataset == "jsquad":
            real = [(t, r) for t, r in real if idx.embedder.vocabulary_coverage(t) >= DENSE_MIN_COVERAGE]
        groups = {
            "real": real,
            "nonsense": [(t, {}) for t in nonsense_queries(100)],
            "off-topic": [(t, {}) for t in OFF_TOPIC],
        }
        out = {}
        for name, rows in groups.items():
            top, lexical_hit, dense_only_relevant, legs = [], [], [], []
            for text, rel in rows:
                lexical = [p for p, _ in idx.lexical.search(text, workspace_id=ws, limit=100)]
                lex = set(lexical)
                dense = idx.vectors.search(idx.embedder.encode_query(text), workspace_id=ws, limit=100)
                top.append(dense[0][1] if dense else 0.0)
                lexical_hit.append(bool(lex))
                dense_only_relevant += [score for pid, score in dense if pid not in lex and rel.get(ext[pid], 0) > 0]
                weight = idx.embedder.vocabulary_coverage(text) ** DENSE_COVERAGE_POWER
                legs.append((lexical, dense, weight, rel))
            out[name] = {
                "top": top,
                "lexical_hit": lexical_hit,
                "dense_only_relevant": dense_only_relevant,
                "queries": len(rows),
                "legs": legs,
            }
        out["fused"] = {}
        for floor in FLOORS_SCREENED:
            sums = [0.0, 0.0, 0.0, 0.0]
            for lexical, dense, weight, rel in out["real"]["legs"]:
                lex = set(lexical)
                kept = [p for p, score in dense if p in lex or score >= floor]
                fused = rrf({"lexical": lexical, "dense": kept}, weights={"dense": weight})
                for n, ids in enumerate(([f.id for f in fused], [p for p, score in dense if score >= floor])):
                    docs = ranked_docs([{"doc": ext[pid], "alts": []} for pid in ids])
                    sums[2 * n] += ndcg_at(docs, rel, 10)
                    sums[2 * n + 1] += recall_at(docs, rel, 100)
            out["fused"][floor] = tuple(x / len(out["real"]["legs"]) for x in sums)
        return out
    finally:
        await close()


FLOORS_SCREENED = (0.0, 0.15, 0.2, 0.25, 0.3, 0.35)


def _q(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(p * (len(s) - 1) + 0.5))] if s else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--queries", type=int, default=None, help="real queries per data set (default all judged)")
    ap.add_argument("--floors", default="0.15,0.2,0.25,0.3,0.35")
    args = ap.parse_args()
    floors = [float(f) for f in args.floors.split(",")]
    for dataset, data_dir in (("scifact", OUT / "scifact-docs1200"), ("jsquad", OUT / "jsquad")):
        res = asyncio.run(measure(data_dir, dataset, args.queries))
        print(f"\n{dataset}: top-1 cosine of the dense leg (min / p5 / p50 / p95 / max), share with a BM25 hit")
        for name, r in res.items():
            if name == "fused":
                continue
            t = r["top"]
            print(
                f"  {name:10} {r['queries']:4d} queries: {min(t):.3f} / {_q(t, 0.05):.3f} / {_q(t, 0.5):.3f} / "
                f"{_q(t, 0.95):.3f} / {max(t):.3f}; BM25 hit {sum(r['lexical_hit']) / len(t):.2f}"
            )
            if name == "real":
                below = {f: sum(1 for t in r["top"] if t < f) for f in floors}
                print(
                    "    real queries whose top-1 cosine is below a floor: "
                    + ", ".join(f"{f}: {n}" for f, n in below.items())
                )
            else:
                above = {f: sum(1 for t in r["top"] if t >= f) for f in floors}
                print(
                    f"    {name} queries whose top-1 cosine reaches a floor: "
                    + ", ".join(f"{f}: {n}" for f, n in above.items())
                )
        screen = res.pop("fused")
        print(
            "  screen, floor: nDCG@10 / R@100 of the fused ranking — "
            + ", ".join(f"{f}: {v[0]:.4f} / {v[1]:.4f}" for f, v in screen.items())
        )
        print(
            "  screen, floor: nDCG@10 / R@100 of the dense leg alone — "
            + ", ".join(f"{f}: {v[2]:.4f} / {v[3]:.4f}" for f, v in screen.items())
        )
        rel = res["real"]["dense_only_relevant"]
        if rel:
            print(
                f"  relevant passages found by the dense leg only: {len(rel)}; cosine min {min(rel):.3f}, "
                f"p5 {_q(rel, 0.05):.3f}, p50 {_q(rel, 0.5):.3f}; below a floor: "
                + ", ".join(f"{f}: {sum(1 for c in rel if c < f)}" for f in floors)
            )


if __name__ == "__main__":
    main()
