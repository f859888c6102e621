"""TimeQA (human-annotated): does the temporal GRAPH leg lift answer hits? (issue 14)

Each page of ``../shared/data/timeqa`` is ingested as one document (title = ``paras[0]``,
the other paragraphs joined by blank lines), into a data dir per split. Each question is
asked as a pack task twice: ``HYBRID`` (sources ``[PASSAGES]``) and ``HYBRID+GRAPH``
(sources ``[PASSAGES, GRAPH]``), same budget. A question is answered at k when one of its
gold answers (whitespace- and case-normalised) appears in the text of an item ranked ≤ k.
Reported: hit@1/@3/@10 for both, split by relation kind (role-holding relations P39 P108
P488 P286 P6 P35 P1037 P169 vs the others) and by whether the question has a time phrase
(:func:`app.temporal.task_constraint`); the questions without one must come out identical.

``--tune`` runs the train split over a few RRF weights of the temporal leg
(:data:`app.packs.graph_hook.GRAPH_WEIGHT`) and prints hit@1 per weight; the chosen weight
is then fixed in code and the test split reported with ``--split test``.

    python -m bench.timeqa --split train --pages 80 --tune
    python -m bench.timeqa --split test            # 257 pages, 989 questions
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import os
import time
from collections import defaultdict
from datetime import UTC, datetime

from bench.beir import open_services
from bench.common import OUT, SHARED

ROLE_RELATIONS = {"P39", "P108", "P488", "P286", "P6", "P35", "P1037", "P169"}
KS = (1, 3, 10)


def load(split: str, pages: int | None) -> list[dict]:
    """The split's pages (first ``pages`` of them when given)."""
    rows = json.load(gzip.open(SHARED / "timeqa" / f"human_annotated_{split}.json.gz"))
    return rows[:pages] if pages else rows


def norm(text: str) -> str:
    return " ".join(text.lower().split())


def first_hit(texts: list[str], answers: list[str]) -> int | None:
    """1-based rank of the first item containing an answer, or None."""
    golds = [norm(a) for a in answers if a.strip()]
    for rank, t in enumerate(texts, start=1):
        n = norm(t)
        if any(g in n for g in golds):
            return rank
    return None


async def ingest(services, principal, pages: list[dict]) -> None:
    from cairn.app.corpus.ingest import ingest_documents
    from cairn.app.corpus.sources import SourceDocument

    t = time.perf_counter()
    docs = (
        SourceDocument(external_id=p["index"], title=p["paras"][0].strip(), text="\n\n".join(p["paras"][1:]))
        for p in pages
    )
    report = await ingest_documents(
        services.db,
        services.indexes,
        workspace_id=principal.workspace_id,
        collection="timeqa",
        documents=docs,
        on_index=lambda stage, d, n: print(f"\r{stage} {d}/{n}", end="", flush=True),
    )
    print(f"\ningest: {report.documents} docs, {report.new_passages} new passages, {time.perf_counter() - t:.1f}s")


RETRIEVAL = "HYBRID"


async def ask(services, principal, task: str, graph: bool, max_tokens: int):
    from cairn.app.packs import PackRequest, build_pack

    sources = ("PASSAGES", "GRAPH") if graph else ("PASSAGES",)
    req = PackRequest(task=task, max_tokens=max_tokens, sources=sources, retrieval=RETRIEVAL)
    pack = await build_pack(services, principal, req)
    return [i.text for i in pack.items], [i.text for i in pack.items if i.kind != "FACT"], pack.footer.latency_ms


async def evaluate(services, principal, pages: list[dict], max_tokens: int, limit: int | None) -> dict:
    from cairn.app.temporal import task_constraint

    rows = []
    for p in pages:
        for q, ans in p["questions"]:
            rows.append((p["type"], q, [a["answer"] for a in ans]))
    rows = rows[:limit] if limit else rows
    now = datetime.now(UTC)
    out = []
    t0 = time.perf_counter()
    for n, (rel, q, answers) in enumerate(rows, start=1):
        base, _, ms_b = await ask(services, principal, q, False, max_tokens)
        items, passages, ms_g = await ask(services, principal, q, True, max_tokens)
        out.append(
            {
                "relation": rel,
                "role": rel in ROLE_RELATIONS,
                "timed": task_constraint(q, None, now) is not None,
                "hybrid": first_hit(base, answers),
                "graph": first_hit(items, answers),
                "graph_passages": first_hit(passages, answers),
                "same": base == passages,
                "ms": (ms_b, ms_g),
            }
        )
        if n % 50 == 0:
            print(f"{n}/{len(rows)} questions, {time.perf_counter() - t0:.0f}s", flush=True)
    return summarise(out)


def _hits(rows: list[dict], key: str) -> dict[str, float]:
    return {f"hit@{k}": round(sum(1 for r in rows if r[key] is not None and r[key] <= k) / len(rows), 4) for k in KS}


def summarise(rows: list[dict]) -> dict:
    groups: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        groups["all"].append(r)
        groups["role relations" if r["role"] else "other relations"].append(r)
        groups["with a time phrase" if r["timed"] else "without a time phrase"].append(r)
    table = {}
    for name, rs in groups.items():
        table[name] = {
            "questions": len(rs),
            "HYBRID": _hits(rs, "hybrid"),
            "HYBRID+GRAPH": _hits(rs, "graph"),
            "HYBRID+GRAPH passages only": _hits(rs, "graph_passages"),
        }
    untimed = [r for r in rows if not r["timed"]]
    table["untimed questions with identical passages"] = f"{sum(r['same'] for r in untimed)}/{len(untimed)}"
    lowered = sum(1 for r in untimed if (r["graph"] or 99) > (r["hybrid"] or 99) and (r["hybrid"] or 99) <= 10)
    table["untimed questions ranked lower with GRAPH"] = lowered
    ms_b = sorted(r["ms"][0] for r in rows)
    ms_g = sorted(r["ms"][1] for r in rows)
    table["pack latency p50 ms (HYBRID, HYBRID+GRAPH)"] = [ms_b[len(ms_b) // 2], ms_g[len(ms_g) // 2]]
    return table


async def main_async(args) -> None:
    from cairn.app.packs import graph_hook

    global RETRIEVAL
    RETRIEVAL = args.retrieval
    data_dir = OUT / f"timeqa-{args.split}{'-' + str(args.pages) if args.pages else ''}"
    if args.retrieval == "LEXICAL":
        data_dir = data_dir.with_name(data_dir.name + "-lexical")
    data_dir.mkdir(parents=True, exist_ok=True)
    if args.retrieval == "LEXICAL":
        os.environ["CAIRN_EMBEDDER"] = "none"
    services, principal, close = await open_services(data_dir)
    try:
        pages = load(args.split, args.pages)
        await ingest(services, principal, pages)
        if args.ingest_only:
            return
        if args.tune:
            for w in (0.5, 1.0, 2.0):
                graph_hook.GRAPH_WEIGHT = w
                res = await evaluate(services, principal, pages, args.max_tokens, args.limit)
                print(json.dumps({"graphWeight": w, "all": res["all"]}, indent=1))
            return
        res = await evaluate(services, principal, pages, args.max_tokens, args.limit)
        res["split"], res["pages"], res["graphWeight"] = args.split, len(pages), graph_hook.GRAPH_WEIGHT
        res["retrieval"] = args.retrieval
        print(json.dumps(res, indent=1))
        (OUT / f"timeqa-{args.split}-{args.retrieval.lower()}.json").write_text(json.dumps(res, indent=1))
    finally:
        await close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--split", choices=("train", "test"), default="test")
    ap.add_argument("--pages", type=int, default=None, help="first N pages only")
    ap.add_argument("--limit", type=int, default=None, help="first N questions only")
    ap.add_argument("--max-tokens", type=int, default=2000)
    ap.add_argument("--tune", action="store_true", help="train: hit@1 per graph-leg weight")
    ap.add_argument("--ingest-only", action="store_true")
    ap.add_argument("--retrieval", choices=("HYBRID", "LEXICAL"), default="HYBRID", help="LEXICAL: no model (quick)")
    asyncio.run(main_async(ap.parse_args()))


if __name__ == "__main__":
    main()
