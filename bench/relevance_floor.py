"""Relevance floor study (issue 35 item 4): does a floor under the top item's score cut
off-topic tails without losing recall@10?

Usage::

    python -m bench.relevance_floor run --dataset scifact --queries 300 --corpus-docs 500
    python -m bench.relevance_floor run --dataset jsquad --queries 300 --corpus-docs 500
    python -m bench.relevance_floor run --dataset locomo --queries 300
    python -m bench.relevance_floor run --dataset kitchen
    python -m bench.relevance_floor eval                 # offline, every cached run, seconds
    python -m bench.relevance_floor run --dataset scifact --queries 300 --corpus-docs 500 --check 0.3

``run`` ingests the dataset into the data dir ``bench/beir.py`` uses (``bench/out/<dataset>`` or
``bench/out/<dataset>-docs<N>``, idempotent) and builds, per query, the pack a user gets by
default (:func:`app.packs.service.build_pack`, ``maxTokens`` 4,000, no floor) in three
configurations: HYBRID fused by score (a current pack), HYBRID fused by rank (a pack read as
of a given time) and LEXICAL. Each item's document, alternates' documents, fused score and
tokens are cached to ``bench/out/relevance/<name>.json``. Queries: every k-th judged query of
the reported split (SciFact test, JSQuAD odd articles, LoCoMo conversations 6–10: the splits
of ``bench/fusion.py``), at most ``--queries``.

``eval`` applies floors to the cached packs offline: a floor keeps the items whose score is
at least ``r`` × the top item's score (relative) or at least ``s`` (absolute). That equals
what a pack with the floor returns (:mod:`app.packs.relevance`: the floor cuts the fused list
before resolution, and greedy packing in rank order takes the same prefix), except that a
duplicate under the floor is no longer listed among alternates; ``--check r`` rebuilds
the packs with ``minRelativeScore = r`` and compares. Reported per dataset and configuration:
recall@10 and nDCG@10 (:mod:`bench.common`; documents ranked by first appearance among items
and alternates, as ``bench/beir.py``), mean items per pack, and on ``kitchen`` the share of
off-topic items cut and of on-topic items kept.

``kitchen``: the issue's case. Python's reference topics (``pydoc_data.topics``, the
``cairn demo`` corpus, 79 documents) plus five office notices (:data:`NOTICES`), each asked
about by one question that shares a common word with the reference ("close", "lock",
"password", ...); the notice is on topic, every Python item off topic.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from pathlib import Path

from bench import locomo_beir
from bench.beir import DATASETS, corpus_subset, open_bench, open_services
from bench.common import OUT, SHARED, load_qrels, load_queries, ndcg_at, ranked_docs, recall_at

CACHE = OUT / "relevance"
CONFIGS = {
    "HYBRID": ("HYBRID", None),
    "HYBRID-RANK": ("HYBRID", "RANK"),
    "LEXICAL": ("LEXICAL", None),
    "DENSE": ("DENSE", None),
}
"""Configuration name → (retrieval mode, fusion method; None = the pack's default)."""
RELATIVE = (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6)
ABSOLUTE = (0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0)

NOTICES = [
    (
        "notice/kitchen",
        "Staff kitchen hours",
        "The staff kitchen on the third floor is open from 7:30 to 18:00 on weekdays. On Fridays it "
        "closes at 14:00 for deep cleaning. Please take your dishes out of the sink before you leave.",
        "When does the kitchen close?",
    ),
    (
        "notice/garage",
        "Parking garage",
        "The gates of the underground parking garage are locked every night from 22:00 to 6:00. Cars "
        "left inside can be collected with the night guard's key; call extension 4410.",
        "At what time is the parking garage locked at night?",
    ),
    (
        "notice/wifi",
        "Guest wireless network",
        "Visitors connect to the Guest-Office wireless network. The password changes every Monday and "
        "is printed on the card at the reception desk.",
        "Where do visitors find the guest wifi password?",
    ),
    (
        "notice/parcels",
        "Parcels and mail",
        "Parcels delivered to employees are kept in the mail room next to the loading dock, open "
        "from 9:00 to 16:00. Bring your badge; parcels not collected within ten days are returned.",
        "Where can I pick up a parcel that was delivered for me?",
    ),
    (
        "notice/printer",
        "Printer queue",
        "If a print job is stuck, delete it from the queue on the printer's touch screen and send it "
        "again. Jobs that wait longer than one hour are removed automatically.",
        "How do I remove a stuck job from the printer queue?",
    ),
]
"""(external id, title, text, question): the kitchen case's on-topic documents."""


def _sample(qrels: dict[str, dict[str, int]], n: int) -> list[str]:
    """Every k-th judged query id (sorted), at most ``n``: spread over the whole split."""
    ids = sorted(qrels)
    step = max(1, len(ids) // n)
    return ids[::step][:n]


def reported_split(dataset: str) -> dict[str, dict[str, int]]:
    """The split ``bench/fusion.py`` reports (SciFact test, JSQuAD odd articles, LoCoMo 6–10)."""
    if dataset == "scifact":
        return load_qrels(SHARED / "scifact/qrels/test.tsv")
    if dataset == "jsquad":
        qrels = load_qrels(SHARED / "jsquad/beir/qrels/valid.tsv")
        return {q: r for q, r in qrels.items() if int(q[1:].split("p")[0]) % 2 == 1}
    if dataset == "locomo":
        locomo_beir.build()
        return load_qrels(locomo_beir.QRELS["test"])
    raise ValueError(f"unknown dataset {dataset!r}")


async def _open_kitchen(data_dir: Path):
    from pydoc_data.topics import topics

    from cairn.app.corpus.ingest import ingest_documents
    from cairn.app.corpus.source_document import SourceDocument

    docs = [SourceDocument(f"pydoc/{k}", f"Python reference: {k}", v) for k, v in sorted(topics.items())]
    docs += [SourceDocument(ext, title, text) for ext, title, text, _ in NOTICES]
    services, principal, close = await open_services(data_dir)
    await ingest_documents(
        services.db, services.indexes, workspace_id=principal.workspace_id, collection="kitchen", documents=iter(docs)
    )
    return services, principal, close


async def run(
    dataset: str,
    n_queries: int,
    corpus_docs: int | None,
    check: float | None = None,
    max_tokens: int = 4000,
    configs: list[str] | None = None,
) -> None:
    """Build the packs of module doc and cache them (or, with ``check``, compare floored packs)."""
    from sqlalchemy import select

    from cairn.app.core.models import Document
    from cairn.app.packs.service import build_pack
    from cairn.app.packs.types import PackRequest

    if dataset == "kitchen":
        name = "kitchen"
        queries = {ext: q for ext, _, _, q in NOTICES}
        qrels = {ext: {ext: 1} for ext, _, _, _ in NOTICES}
        qids = list(queries)
        services, principal, close = await _open_kitchen(OUT / name)
    else:
        if dataset == "locomo":
            locomo_beir.build()
        qrels = reported_split(dataset)
        qids = _sample(qrels, n_queries)
        queries = load_queries(SHARED / DATASETS[dataset][1])
        documents = None
        if corpus_docs is not None:
            documents = corpus_subset(dataset, {d for q in qids for d in qrels[q]}, corpus_docs)
        name = dataset if corpus_docs is None else f"{dataset}-docs{corpus_docs}"
        services, principal, close = await open_bench(OUT / name, dataset, documents)
    try:
        async with services.db.session() as s:
            ext = dict(
                (
                    await s.execute(
                        select(Document.id, Document.external_id).where(Document.workspace_id == principal.workspace_id)
                    )
                ).all()
            )
        if check is not None:
            await _check(services, principal, ext, name, check, configs)
            return
        path = CACHE / f"{name}.json"
        out: dict = {"dataset": dataset, "name": name, "documents": len(ext), "max_tokens": max_tokens, "configs": {}}
        if configs and path.exists():  # add configurations to an earlier run's cache
            out = json.loads(path.read_text())
        for config in configs or list(CONFIGS):
            mode, fusion = CONFIGS[config]
            t = time.process_time()
            packs = {}
            for qid in qids:
                pack = await build_pack(
                    services,
                    principal,
                    PackRequest(task=queries[qid], max_tokens=max_tokens, retrieval=mode, fusion=fusion),
                )
                packs[qid] = {
                    "task": queries[qid],
                    "qrels": qrels[qid],
                    "items": [
                        {
                            "doc": ext[i.citation.document_id],
                            "alts": [ext[a.document_id] for a in i.alternates],
                            "score": i.score,
                            "tokens": i.tokens,
                        }
                        for i in pack.items
                        if i.citation is not None
                    ],
                }
            out["configs"][config] = packs
            print(f"{name} {config}: {len(qids)} packs, {time.process_time() - t:.1f} CPU s", flush=True)
        CACHE.mkdir(parents=True, exist_ok=True)
        (CACHE / f"{name}.json").write_text(json.dumps(out, ensure_ascii=False))
        print(f"saved {CACHE / f'{name}.json'}")
    finally:
        await close()


async def _check(services, principal, ext: dict[str, str], name: str, r: float, configs: list[str] | None) -> None:
    """Rebuild the cached HYBRID packs with ``minRelativeScore = r``; compare with the offline cut."""
    from cairn.app.packs.service import build_pack
    from cairn.app.packs.types import PackRequest

    cached = json.loads((CACHE / f"{name}.json").read_text())
    same = differ = 0
    for config in configs or list(cached["configs"]):
        mode, fusion = CONFIGS[config]
        for p in cached["configs"][config].values():
            pack = await build_pack(
                services,
                principal,
                PackRequest(
                    task=p["task"],
                    max_tokens=cached["max_tokens"],
                    retrieval=mode,
                    fusion=fusion,
                    min_relative_score=r,
                ),
            )
            real = [ext[i.citation.document_id] for i in pack.items if i.citation is not None]
            offline = [i["doc"] for i in floored(p["items"], relative=r)]
            if real == offline:
                same += 1
            else:
                differ += 1
    print(f"{name} minRelativeScore {r}: {same} packs equal the offline cut, {differ} differ")


def floored(items: list[dict], *, relative: float | None = None, absolute: float | None = None) -> list[dict]:
    """The items a floor keeps (module doc): score >= relative × top score, or >= absolute."""
    if not items:
        return []
    top = items[0]["score"]
    bar = relative * top if relative is not None else absolute if absolute is not None else float("-inf")
    return [i for i in items if i["score"] >= bar]


def evaluate(packs: dict, **floor: float | None) -> dict[str, float]:
    """recall@10, nDCG@10, mean items and (kitchen) off-topic cut / on-topic kept under one floor."""
    rec, ndcg, n_items = [], [], []
    off_all = off_kept = on_all = on_kept = 0
    for p in packs.values():
        kept = floored(p["items"], **floor)
        ranking = ranked_docs(kept)
        rec.append(recall_at(ranking, p["qrels"], 10))
        ndcg.append(ndcg_at(ranking, p["qrels"], 10))
        n_items.append(len(kept))
        for i in p["items"]:
            on = i["doc"] in p["qrels"]
            on_all += on
            off_all += not on
        for i in kept:
            on = i["doc"] in p["qrels"]
            on_kept += on
            off_kept += not on
    return {
        "recall@10": statistics.fmean(rec),
        "ndcg@10": statistics.fmean(ndcg),
        "items": statistics.fmean(n_items),
        "off_topic_cut": 1 - off_kept / off_all if off_all else 0.0,
        "on_topic_kept": on_kept / on_all if on_all else 1.0,
    }


def eval_all() -> dict:
    """Every cached run under every floor; prints a table, returns the figures."""
    out: dict = {}
    for path in sorted(CACHE.glob("*.json")):
        cached = json.loads(path.read_text())
        name = cached["name"]
        print(f"\n{name} ({cached['documents']} documents, maxTokens {cached['max_tokens']})")
        print(f"{'config':<12} {'floor':<16} {'R@10':>7} {'nDCG@10':>8} {'items':>6} {'off cut':>8} {'on kept':>8}")
        for config, packs in cached["configs"].items():
            floors: list[tuple[str, dict]] = [("none", {})]
            floors += [(f"relative {r}", {"relative": r}) for r in RELATIVE]
            floors += [(f"absolute {s}", {"absolute": s}) for s in ABSOLUTE]
            tops = [p["items"][0]["score"] for p in packs.values() if p["items"]]
            for label, floor in floors:
                m = evaluate(packs, **floor)
                out.setdefault(name, {}).setdefault(config, {})[label] = m
                print(
                    f"{config:<12} {label:<16} {m['recall@10']:7.4f} {m['ndcg@10']:8.4f} {m['items']:6.1f} "
                    f"{m['off_topic_cut']:8.3f} {m['on_topic_kept']:8.3f}"
                )
            if tops:
                q = statistics.quantiles(tops, n=10)
                print(f"{config:<12} top score p10 {q[0]:.4f}, median {statistics.median(tops):.4f}, p90 {q[-1]:.4f}")
    return out


def main() -> None:
    """Parse arguments and run ``run`` or ``eval``."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--dataset", choices=["scifact", "jsquad", "locomo", "kitchen"], required=True)
    r.add_argument("--queries", type=int, default=300)
    r.add_argument("--corpus-docs", type=int, default=None)
    r.add_argument("--check", type=float, default=None, help="compare real packs with minRelativeScore = this")
    r.add_argument("--configs", default=None, help=f"comma-separated subset of {', '.join(CONFIGS)} (default all)")
    sub.add_parser("eval")
    args = ap.parse_args()
    if args.cmd == "run":
        configs = args.configs.split(",") if args.configs else None
        asyncio.run(run(args.dataset, args.queries, args.corpus_docs, args.check, configs=configs))
    else:
        eval_all()


if __name__ == "__main__":
    main()
