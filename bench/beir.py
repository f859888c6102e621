"""BEIR retrieval quality of LEXICAL and HYBRID packs, through the service.

Usage: ``.venv/bin/python -m bench.beir --dataset scifact|jsquad [--limit N] [--max-tokens T]``

- ``scifact``: ../shared/data/scifact (5,183 abstracts, 300 test queries); nDCG@10, R@100.
- ``jsquad``: ../shared/data/jsquad/beir (2,304 Japanese passages, 4,442 valid questions);
  recall@10 is the share of questions whose source passage is in the top 10.

Ingests the corpus into its own data dir (idempotent; SciFact's first run embeds ~10.7k
passages, 10–20 min on 2 cores), then runs the queries through
:func:`app.services.packs.build_pack` — the code the ``contextPack`` resolver calls — with
``maxTokens = 32000`` so at least 100 documents are ranked. Document ranking = first
appearance of a document among the pack items (and their alternate citations).
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path

from bench.common import OUT, SHARED, load_qrels, load_queries, machine, ndcg_at, percentiles, ranked_docs, recall_at


DATASETS = {
    "scifact": ("scifact/corpus.jsonl.gz", "scifact/queries.jsonl", "scifact/qrels/test.tsv"),
    "jsquad": ("jsquad/beir/corpus.jsonl", "jsquad/beir/queries.jsonl", "jsquad/beir/qrels/valid.tsv"),
}


async def run(data_dir: Path, limit: int | None, modes: list[str], max_tokens: int = 32000,
              dataset: str = "scifact") -> dict:
    from sqlalchemy import select

    from app.auth import ROLE_PERMISSIONS, Principal
    from app.config import Settings
    from app.context import Services
    from app.db import Database
    from app.migrate import upgrade_database
    from app.models import Document
    from app.services import identity
    from app.services.indexing import open_indexes
    from app.services.ingest import ingest_documents, iter_sources
    from app.services.pack_types import PackRequest
    from app.services.packs import build_pack

    settings = Settings(data_dir=data_dir)
    await asyncio.to_thread(upgrade_database, settings.resolved_database_url)
    db = Database(settings.resolved_database_url)
    indexes = open_indexes(settings)
    try:
        async with db.session() as s:
            ws = await identity.get_workspace_by_name(s, "default") or await identity.create_workspace(s, name="default")
        t = time.perf_counter()
        corpus, queries_path, qrels_path = (SHARED / p for p in DATASETS[dataset])
        report = await ingest_documents(db, indexes, workspace_id=ws.id, collection=dataset,
                                        documents=iter_sources(corpus),
                                        on_index=lambda stage, d, n: print(f"\r{stage} {d}/{n}", end="", flush=True))
        print(f"\ningest: {report.documents} docs ({report.created} new), {report.new_passages} new passages, "
              f"{time.perf_counter() - t:.1f}s")
        async with db.session() as s:
            ext = dict((await s.execute(select(Document.id, Document.external_id)
                                        .where(Document.workspace_id == ws.id))).all())
        principal = Principal(kind="member", id="bench", workspace_id=ws.id, permissions=ROLE_PERMISSIONS["owner"],
                              member_id="bench", role="owner")
        services = Services(settings=settings, db=db, indexes=indexes)
        queries = load_queries(queries_path)
        qrels = load_qrels(qrels_path)
        qids = sorted(qrels)[:limit] if limit else sorted(qrels)
        results = {}
        for mode in modes:
            ndcgs, recalls, r10, lat = [], [], [], []
            for qid in qids:
                t = time.perf_counter()
                pack = await build_pack(services, principal, PackRequest(task=queries[qid], max_tokens=max_tokens,
                                                                         retrieval=mode))
                lat.append((time.perf_counter() - t) * 1000)
                items = [{"doc": ext[i.citation.document_id], "alts": [ext[a.document_id] for a in i.alternates]}
                         for i in pack.items]
                ranking = ranked_docs(items)
                ndcgs.append(ndcg_at(ranking, qrels[qid], 10))
                recalls.append(recall_at(ranking, qrels[qid], 100))
                r10.append(recall_at(ranking, qrels[qid], 10))
            results[mode] = {"ndcg@10": sum(ndcgs) / len(ndcgs), "recall@100": sum(recalls) / len(recalls),
                             "recall@10": sum(r10) / len(r10),
                             "latency_ms": percentiles(lat), "queries": len(qids)}
        return results
    finally:
        indexes.close()
        await db.dispose()


def main() -> None:
    """Parse arguments, run, print a table."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--dataset", choices=sorted(DATASETS), default="scifact")
    ap.add_argument("--data-dir", type=Path, default=None, help="default bench/out/<dataset>")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--modes", default="LEXICAL,HYBRID")
    ap.add_argument("--max-tokens", type=int, default=32000, help="pack budget (recall@100 needs ~32000)")
    args = ap.parse_args()
    data_dir = args.data_dir or OUT / args.dataset
    results = asyncio.run(run(data_dir, args.limit, args.modes.split(","), args.max_tokens, args.dataset))
    print(f"\n{args.dataset}, maxTokens {args.max_tokens} ({machine()})")
    print(f"{'mode':<10} {'nDCG@10':>8} {'R@10':>7} {'R@100':>7} {'p50 ms':>8} {'p95 ms':>8} {'queries':>8}")
    for mode, r in results.items():
        print(f"{mode:<10} {r['ndcg@10']:8.4f} {r['recall@10']:7.4f} {r['recall@100']:7.4f} "
              f"{r['latency_ms']['p50']:8.1f} {r['latency_ms']['p95']:8.1f} {r['queries']:8d}")


if __name__ == "__main__":
    main()
