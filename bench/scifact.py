"""SciFact test (BEIR): nDCG@10 and recall@100 of LEXICAL and HYBRID packs, through the service.

Usage: ``.venv/bin/python bench/scifact.py [--data-dir bench/out/scifact] [--limit N]``

Ingests ../shared/data/scifact/corpus.jsonl.gz into its own data dir (idempotent; the
first run embeds ~10k passages, ~8 min on 2 cores), then runs the 300 test queries through
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


async def run(data_dir: Path, limit: int | None, modes: list[str], max_tokens: int = 32000) -> dict:
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
        report = await ingest_documents(db, indexes, workspace_id=ws.id, collection="scifact",
                                        documents=iter_sources(SHARED / "scifact" / "corpus.jsonl.gz"),
                                        on_index=lambda stage, d, n: print(f"\r{stage} {d}/{n}", end="", flush=True))
        print(f"\ningest: {report.documents} docs ({report.created} new), {report.new_passages} new passages, "
              f"{time.perf_counter() - t:.1f}s")
        async with db.session() as s:
            ext = dict((await s.execute(select(Document.id, Document.external_id)
                                        .where(Document.workspace_id == ws.id))).all())
        principal = Principal(kind="member", id="bench", workspace_id=ws.id, permissions=ROLE_PERMISSIONS["owner"],
                              member_id="bench", role="owner")
        services = Services(settings=settings, db=db, indexes=indexes)
        queries = load_queries(SHARED / "scifact" / "queries.jsonl")
        qrels = load_qrels(SHARED / "scifact" / "qrels" / "test.tsv")
        qids = sorted(qrels)[:limit] if limit else sorted(qrels)
        results = {}
        for mode in modes:
            ndcgs, recalls, lat = [], [], []
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
            results[mode] = {"ndcg@10": sum(ndcgs) / len(ndcgs), "recall@100": sum(recalls) / len(recalls),
                             "latency_ms": percentiles(lat), "queries": len(qids)}
        return results
    finally:
        indexes.close()
        await db.dispose()


def main() -> None:
    """Parse arguments, run, print a table."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data-dir", type=Path, default=OUT / "scifact")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--modes", default="LEXICAL,HYBRID")
    ap.add_argument("--max-tokens", type=int, default=32000, help="pack budget (recall@100 needs ~32000)")
    args = ap.parse_args()
    results = asyncio.run(run(args.data_dir, args.limit, args.modes.split(","), args.max_tokens))
    print(f"\nSciFact test, maxTokens {args.max_tokens} ({machine()})")
    print(f"{'mode':<10} {'nDCG@10':>8} {'R@100':>7} {'p50 ms':>8} {'p95 ms':>8} {'queries':>8}")
    for mode, r in results.items():
        print(f"{mode:<10} {r['ndcg@10']:8.4f} {r['recall@100']:7.4f} {r['latency_ms']['p50']:8.1f} "
              f"{r['latency_ms']['p95']:8.1f} {r['queries']:8d}")


if __name__ == "__main__":
    main()
