"""The multilingual dense leg (issue 18): cross-lingual recall, routing, query cost and the e5 floor.

Usage: ``.venv/bin/python -m bench.multilingual [--data-dir bench/out/jsquad] [--floor-questions 300]``

Runs over the JSQuAD data dir that ``python -m bench.beir --dataset jsquad`` builds (it must
exist: this bench does not ingest), through :func:`app.packs.service.build_pack`:

1. cross-lingual: the English questions of ``bench/jsquad_en.tsv`` (our own translations of
   JSQuAD valid questions, one per line with its query id) → recall@10 / nDCG@10 of the
   Japanese gold passage's document, DENSE and HYBRID (maxTokens 4,000), next to the
   Japanese originals of the same ids;
2. routing: share of JSQuAD valid questions and of SciFact test claims that the script rule
   (:func:`retrieval.language.is_non_latin`) sends to the multilingual model;
3. query embedding cost: p50 ms of one query for all-MiniLM-L6-v2 and multilingual-e5-small
   (the same 200 JSQuAD questions, in the same process);
4. the e5 similarity floor: top-1 e5 cosine of the first ``--floor-questions`` JSQuAD
   questions against that of nonsense and off-topic tasks (as ``bench/dense_floor.py`` did
   for MiniLM).

Prints the figures and saves ``bench/out/results/multilingual.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import string
import time
from pathlib import Path

from bench.beir import open_services, selected_queries
from bench.common import OUT, SHARED, load_queries, machine, ndcg_at, percentiles, ranked_docs, recall_at, save_results

TRANSLATIONS = Path(__file__).with_name("jsquad_en.tsv")
OFF_TOPIC = [
    "What is the weather like today?",
    "How do I bake sourdough bread?",
    "best running shoes for marathon training",
    "今日の天気はどうですか",
    "美味しいパンの焼き方",
    "おすすめのマラソン用シューズ",
    "如何学习吉他",
    "오늘 저녁 메뉴 추천",
    "zzzz qqqq",
    "asdf jkl; qwer",
]


def load_translations() -> dict[str, str]:
    """Query id → English question, from ``bench/jsquad_en.tsv`` (``#`` lines are comments)."""
    out: dict[str, str] = {}
    for line in TRANSLATIONS.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            qid, text = line.split("\t", 1)
            out[qid] = text.strip()
    return out


def nonsense(n: int, seed: int = 7) -> list[str]:
    """``n`` random-letter and random-kana strings (fixed seed)."""
    rng = random.Random(seed)
    kana = [chr(c) for c in range(0x3041, 0x3094)] + [chr(c) for c in range(0x30A1, 0x30F5)]
    out = []
    for i in range(n):
        pool = kana if i % 2 else list(string.ascii_lowercase)
        out.append(" ".join("".join(rng.choice(pool) for _ in range(rng.randint(3, 8))) for _ in range(3)))
    return out


async def run(data_dir: Path, floor_questions: int) -> dict:
    """Measure (module doc) and return the results dict."""
    from sqlalchemy import select

    from cairn.app.core.models import Document
    from cairn.app.packs.service import build_pack
    from cairn.app.packs.types import PackRequest
    from cairn.retrieval.language import is_non_latin

    if not (data_dir / "cairn.db").exists():
        raise SystemExit(f"{data_dir} has no data dir: run python -m bench.beir --dataset jsquad first")
    queries, qrels, qids = selected_queries("jsquad", None)
    english = load_translations()
    services, principal, close = await open_services(data_dir)
    results: dict = {"machine": machine(), "data_dir": str(data_dir)}
    try:
        async with services.db.session() as s:
            ext = dict(
                (
                    await s.execute(
                        select(Document.id, Document.external_id).where(Document.workspace_id == principal.workspace_id)
                    )
                ).all()
            )

        async def ranking(task: str, mode: str) -> tuple[list[str], list[str]]:
            pack = await build_pack(services, principal, PackRequest(task=task, max_tokens=4000, retrieval=mode))
            items = [
                {"doc": ext[i.citation.document_id], "alts": [ext[a.document_id] for a in i.alternates]}
                for i in pack.items
            ]
            return ranked_docs(items), list(pack.footer.notes)

        cross: dict = {"questions": len(english)}
        for label, texts in (("english", english), ("japanese", {q: queries[q] for q in english})):
            for mode in ("DENSE", "HYBRID", "LEXICAL"):
                ranks = []
                for qid, text in texts.items():
                    ranked, _ = await ranking(text, mode)
                    ranks.append((ranked, qrels[qid]))
                cross[f"{label} {mode}"] = {
                    "recall@10": sum(recall_at(r, q, 10) for r, q in ranks) / len(ranks),
                    "ndcg@10": sum(ndcg_at(r, q, 10) for r, q in ranks) / len(ranks),
                }
                print(
                    f"cross-lingual {label:<8} {mode:<7} R@10 {cross[f'{label} {mode}']['recall@10']:.4f} "
                    f"nDCG@10 {cross[f'{label} {mode}']['ndcg@10']:.4f}",
                    flush=True,
                )
        _, notes = await ranking(next(iter(english.values())), "HYBRID")
        cross["example_notes"] = notes
        results["cross_lingual"] = cross

        scifact = load_queries(SHARED / "scifact/queries.jsonl")
        results["routing"] = {
            "jsquad valid questions routed to e5": sum(is_non_latin(queries[q]) for q in qids) / len(qids),
            "scifact claims routed to e5": sum(is_non_latin(t) for t in scifact.values()) / len(scifact),
        }
        print(results["routing"], flush=True)

        idx = services.indexes
        sample = [queries[q] for q in qids[:200]]
        cost = {}
        for model in (idx.embedder, idx.multilingual):
            if model is None:
                continue
            ms = []
            for text in sample:
                t = time.perf_counter()
                model.encode_query(text)
                ms.append((time.perf_counter() - t) * 1000)
            cost[model.name] = percentiles(ms)
        results["query_embedding_ms"] = cost
        print("query embedding ms", cost, flush=True)

        e5 = idx.multilingual
        assert e5 is not None and idx.vectors is not None
        ws = principal.workspace_id

        def top1(text: str) -> float:
            hits = idx.vectors.search(e5.encode_query(text), workspace_id=ws, limit=1, space="e5")
            return hits[0][1] if hits else 0.0

        real = [top1(queries[q]) for q in qids[:floor_questions]]
        junk = [top1(t) for t in nonsense(100) + OFF_TOPIC]
        results["e5_top1_cosine"] = {"jsquad questions": percentiles(real), "nonsense and off-topic": percentiles(junk)}
        results["e5_top1_cosine"]["jsquad min"] = min(real)
        results["e5_top1_cosine"]["jsquad p5"] = sorted(real)[len(real) // 20]
        results["e5_top1_cosine"]["nonsense max"] = max(junk)
        print("e5 top-1 cosine", json.dumps(results["e5_top1_cosine"]), flush=True)
        return results
    finally:
        await close()


def main() -> None:
    """Parse arguments, measure, print, save JSON."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data-dir", type=Path, default=OUT / "jsquad")
    ap.add_argument("--floor-questions", type=int, default=300)
    args = ap.parse_args()
    results = asyncio.run(run(args.data_dir, args.floor_questions))
    results["command"] = (
        f"python -m bench.multilingual --data-dir {args.data_dir} --floor-questions {args.floor_questions}"
    )
    save_results("multilingual", results, ensure_ascii=False)


if __name__ == "__main__":
    main()
