"""Languages (issue 37): English questions over Japanese and Chinese passages, foreign passages in an
English corpus, Chinese parity — Cairn's packs next to plain pipelines over the same stored vectors.

Usage::

    .venv/bin/python -m bench.crosslingual build              # ingest the three data dirs (idempotent)
    .venv/bin/python -m bench.crosslingual run [--sets ja,zh,mixed] [--native N]
    .venv/bin/python -m bench.crosslingual standout   # how far e5's best passage stands out (xl-ja)

Data dirs (under ``bench/out``; small on purpose: e5 embeds ~4 passages per CPU-second here):

- ``xl-ja``: JSQuAD valid (``../shared/data/jsquad/beir``): the gold paragraphs of the questions
  translated in ``bench/jsquad_en.tsv`` plus the first :data:`JA_EXTRA` other paragraphs.
- ``xl-zh``: CMRC 2018 (``../shared/data/cmrc2018/beir``): every trial paragraph (the gold of all
  1,002 trial questions) plus the first :data:`ZH_EXTRA` dev paragraphs (distractors).
- ``xl-mixed``: a copy of ``bench/out/scifact-docs500`` (``python -m bench.beir --dataset scifact
  --corpus-docs 500``: the judged abstracts of the 300 test claims plus 500 others, all embedded by
  all-MiniLM-L6-v2) with 234 passages in 14 other languages added: the non-English paragraphs of
  ``bench/other_scripts.tsv`` and ``bench/latin_scripts.tsv`` (encyclopedic, relevant to no claim)
  and ``bench/scifact_translated.tsv`` (10 abstracts we translated, each relevant to its claim).

Sets and what is reported (documents rank by first appearance among pack items, maxTokens 4,000):

- ``ja`` / ``zh`` cross-lingual: our English translations (``bench/jsquad_en.tsv``, 63;
  ``bench/cmrc_en.tsv``, 56) → the gold paragraph; recall@10 and nDCG@10 of Cairn LEXICAL, DENSE,
  HYBRID and of the plain pipelines: e5 (multilingual-e5-small, query embedded by the model,
  cosine against every stored e5 vector of the workspace, no floor), BM25 (the LEXICAL pack) and
  RRF k = 60 of the two. The originals of the same ids beside them.
- ``ja`` / ``zh`` native: the first ``--native`` questions (all by default) whose gold paragraph is in
  the data dir, in the corpus language: the same columns (DENSE vs plain e5: issue 37's "a dense leg
  as good as its model"; HYBRID vs LEXICAL: Chinese parity).
- ``mixed``: the 300 SciFact test claims; per mode nDCG@10 on the mixed corpus and on the
  monolingual ``scifact-docs500`` data dir (same claims, same stored vectors); the intrusion rate:
  claims whose top 10 holds a foreign passage not judged relevant (only ``scifact_translated.tsv``'s
  own claim judges its translation relevant); and the 10 translated abstracts' recall@10.

Prints tables and saves ``bench/out/results/crosslingual.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from bench.beir import open_services
from bench.common import (
    OUT,
    SHARED,
    load_qrels,
    load_queries,
    machine,
    ndcg_at,
    ranked_docs,
    read_jsonl_gz,
    recall_at,
    save_results,
)

BENCH = Path(__file__).parent
JA_EXTRA = 240
"""JSQuAD paragraphs added beyond the translated questions' gold ones (first in corpus order)."""
ZH_EXTRA = 100
"""CMRC dev paragraphs added to the 256 trial ones as distractors (first in corpus order)."""
MAX_TOKENS = 4000
SCIFACT_DIR = OUT / "scifact-docs500"

SETS = {
    "ja": {
        "dir": OUT / "xl-ja",
        "corpus": SHARED / "jsquad/beir/corpus.jsonl",
        "queries": SHARED / "jsquad/beir/queries.jsonl",
        "qrels": SHARED / "jsquad/beir/qrels/valid.tsv",
        "english": BENCH / "jsquad_en.tsv",
    },
    "zh": {
        "dir": OUT / "xl-zh",
        "corpus": SHARED / "cmrc2018/beir/corpus.jsonl",
        "queries": SHARED / "cmrc2018/beir/queries.jsonl",
        "qrels": SHARED / "cmrc2018/beir/qrels/trial.tsv",
        "english": BENCH / "cmrc_en.tsv",
    },
}


def load_tsv(path: Path) -> dict[str, str]:
    """Query id → English question (``#`` lines are comments)."""
    out: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            qid, text = line.split("\t", 1)
            out[qid] = text.strip()
    return out


def translated_abstracts() -> list[dict[str, str]]:
    """Rows of ``bench/scifact_translated.tsv`` (id, lang, query-id, source, text)."""
    lines = [ln for ln in (BENCH / "scifact_translated.tsv").read_text(encoding="utf-8").splitlines() if ln.strip()]
    rows = [ln.split("\t") for ln in lines if not ln.startswith("#")]
    header, body = rows[0], rows[1:]
    return [dict(zip(header, r)) for r in body]


def _docs(corpus: Path, keep: set[str], extra: int, extra_split: str | None = None) -> Iterator:
    from cairn.app.corpus.sources import SourceDocument

    others = 0
    for row in read_jsonl_gz(corpus):
        split = (row.get("metadata") or {}).get("split")
        take = row["_id"] in keep
        if not take and others < extra and (extra_split is None or split == extra_split):
            others += 1
            take = True
        if take:
            yield SourceDocument(
                external_id=row["_id"], title=row.get("title") or "", text=row["text"], media_type="text/plain"
            )


def foreign_documents() -> list:
    """The mixed corpus's foreign documents (module doc)."""
    from bench.scripts_set import DATA, LATIN_DATA, load_all
    from cairn.app.corpus.sources import SourceDocument

    docs = [
        SourceDocument(
            external_id=f"scripts-{it.lang}-{it.topic}", title="", text=it.paragraph, media_type="text/plain"
        )
        for it in load_all([DATA, LATIN_DATA])
        if it.lang != "en"
    ]
    docs += [
        SourceDocument(external_id=r["id"], title="", text=r["text"], media_type="text/plain")
        for r in translated_abstracts()
    ]
    return docs


async def _ingest(data_dir: Path, collection: str, documents) -> None:
    from cairn.app.corpus.ingest import ingest_documents

    services, principal, close = await open_services(data_dir)
    try:
        t = time.perf_counter()
        report = await ingest_documents(
            services.db,
            services.indexes,
            workspace_id=principal.workspace_id,
            collection=collection,
            documents=documents,
            on_index=lambda stage, d, n: print(f"\r{collection} {stage} {d}/{n}", end="", flush=True),
        )
        print(f"\n{data_dir.name}: {report.documents} docs ({report.created} new), {time.perf_counter() - t:.0f} s")
    finally:
        await close()


async def build(sets: Sequence[str]) -> None:
    """Ingest the data dirs of ``sets`` (idempotent; module doc)."""
    if "ja" in sets:
        s = SETS["ja"]
        qrels = load_qrels(s["qrels"])
        keep = {d for q in load_tsv(s["english"]) for d in qrels[q]}
        await _ingest(s["dir"], "jsquad", _docs(s["corpus"], keep, JA_EXTRA))
    if "zh" in sets:
        s = SETS["zh"]
        keep = {d for r in load_qrels(s["qrels"]).values() for d in r}
        await _ingest(s["dir"], "cmrc", _docs(s["corpus"], keep, ZH_EXTRA, extra_split="dev"))
    if "mixed" in sets:
        target = OUT / "xl-mixed"
        if not target.exists():
            if not (SCIFACT_DIR / "cairn.db").exists():
                raise SystemExit(f"{SCIFACT_DIR} is missing: python -m bench.beir --dataset scifact --corpus-docs 500")
            shutil.copytree(SCIFACT_DIR, target, ignore=shutil.ignore_patterns("cairn.lock"))
        await _ingest(target, "foreign", iter(foreign_documents()))


class Workspace:
    """An opened data dir: packs and plain pipelines over its stored vectors."""

    def __init__(self, services, principal, ext: dict[str, str], doc_of: dict[str, str]) -> None:
        self.services, self.principal, self.ext, self.doc_of = services, principal, ext, doc_of

    @classmethod
    async def open(cls, data_dir: Path):
        """Open ``data_dir``; returns ``(workspace, close)``."""
        from sqlalchemy import select

        from cairn.app.core.models import Document, Passage

        services, principal, close = await open_services(data_dir)
        async with services.db.session() as s:
            ext = dict(
                (
                    await s.execute(
                        select(Document.id, Document.external_id).where(Document.workspace_id == principal.workspace_id)
                    )
                ).all()
            )
            doc_of = dict((await s.execute(select(Passage.id, Passage.document_id))).all())
        return cls(services, principal, ext, doc_of), close

    async def pack(self, task: str, mode: str) -> list[str]:
        """Documents (external ids) in pack order."""
        from cairn.app.packs.service import build_pack
        from cairn.app.packs.types import PackRequest

        pack = await build_pack(
            self.services, self.principal, PackRequest(task=task, max_tokens=MAX_TOKENS, retrieval=mode)
        )
        return ranked_docs(
            [
                {"doc": self.ext[i.citation.document_id], "alts": [self.ext[a.document_id] for a in i.alternates]}
                for i in pack.items
            ]
        )

    def plain_dense(self, task: str, model: str) -> list[str]:
        """Documents by cosine of ``model``'s stored vectors (``e5`` or ``minilm``), no floor."""
        idx = self.services.indexes
        dense = idx.dense
        embedder = dense.multilingual if model == "e5" else dense.primary
        space = embedder.space
        hits = idx.vectors.search(
            embedder.encode_query(task), workspace_id=self.principal.workspace_id, limit=200, space=space
        )
        return list(dict.fromkeys(self.ext[self.doc_of[pid]] for pid, _ in hits))


def rrf_docs(*rankings: Sequence[str], k: int = 60) -> list[str]:
    """Documents fused by plain RRF (k = 60) over document rankings, ties by id."""
    score: dict[str, float] = {}
    for ranking in rankings:
        for r, d in enumerate(ranking, 1):
            score[d] = score.get(d, 0.0) + 1.0 / (k + r)
    return sorted(score, key=lambda d: (-score[d], d))


def _metrics(rankings: list[list[str]], rels: list[dict[str, int]]) -> dict[str, float]:
    n = len(rankings)
    return {
        "recall@10": round(sum(recall_at(r, q, 10) for r, q in zip(rankings, rels)) / n, 4),
        "ndcg@10": round(sum(ndcg_at(r, q, 10) for r, q in zip(rankings, rels)) / n, 4),
        "empty": sum(1 for r in rankings if not r),
        "queries": n,
    }


async def evaluate(ws: Workspace, tasks: list[tuple[str, dict[str, int]]]) -> dict[str, dict[str, float]]:
    """Cairn's three modes and the plain pipelines (e5, BM25 = LEXICAL, their RRF) over ``tasks``."""
    rels = [r for _, r in tasks]
    runs: dict[str, list[list[str]]] = {m: [] for m in ("LEXICAL", "DENSE", "HYBRID")}
    plain: list[list[str]] = []
    for task, _ in tasks:
        for mode in runs:
            runs[mode].append(await ws.pack(task, mode))
        plain.append(ws.plain_dense(task, "e5"))
    out = {f"Cairn {m}": _metrics(r, rels) for m, r in runs.items()}
    out["plain e5 (no floor)"] = _metrics(plain, rels)
    out["plain RRF (BM25 + e5)"] = _metrics([rrf_docs(b, d) for b, d in zip(runs["LEXICAL"], plain)], rels)
    return out


async def run_language(name: str, native_limit: int | None) -> dict:
    """The ``ja`` or ``zh`` set (module doc)."""
    s = SETS[name]
    queries, qrels, english = load_queries(s["queries"]), load_qrels(s["qrels"]), load_tsv(s["english"])
    ws, close = await Workspace.open(s["dir"])
    try:
        have = set(ws.ext.values())
        native_ids = [q for q in sorted(qrels) if set(qrels[q]) <= have][:native_limit]
        out = {
            "english": await evaluate(ws, [(english[q], qrels[q]) for q in english]),
            "originals": await evaluate(ws, [(queries[q], qrels[q]) for q in english]),
            "native": await evaluate(ws, [(queries[q], qrels[q]) for q in native_ids]),
            "documents": len(ws.ext),
        }
    finally:
        await close()
    return out


async def run_mixed(modes: Sequence[str], every: int = 1) -> dict:
    """The ``mixed`` set (module doc): ``modes`` over every ``every``-th claim by id."""
    queries = load_queries(SHARED / "scifact/queries.jsonl")
    qrels = load_qrels(SHARED / "scifact/qrels/test.tsv")
    qids = sorted(qrels, key=int)[::every]
    relevant_foreign = {r["query-id"]: r["id"] for r in translated_abstracts()}
    out: dict = {}
    for label, data_dir in (("monolingual", SCIFACT_DIR), ("mixed", OUT / "xl-mixed")):
        ws, close = await Workspace.open(data_dir)
        try:
            foreign = {d for d in ws.ext.values() if d.startswith(("scripts-", "xl-"))}
            res: dict = {"documents": len(ws.ext), "foreign documents": len(foreign)}
            for mode in modes:
                rankings = [await ws.pack(queries[q], mode) for q in qids]
                res[mode] = _metrics(rankings, [qrels[q] for q in qids])
                intruded = [
                    q
                    for q, r in zip(qids, rankings)
                    if any(d in foreign and d != relevant_foreign.get(q) for d in r[:10])
                ]
                res[mode]["intrusions"] = len(intruded)
                res[mode]["intrusion rate"] = round(len(intruded) / len(qids), 4)
                res[mode]["intruded claims"] = intruded[:20]
                found = [q for q, r in zip(qids, rankings) if q in relevant_foreign and relevant_foreign[q] in r[:10]]
                res[mode]["translated abstracts in top 10"] = f"{len(found)}/{len(relevant_foreign)}"
            out[label] = res
        finally:
            await close()
    return out


OFF_TOPIC_EN = [
    "What is the capital of France?",
    "how to fix a flat bicycle tyre",
    "recipe for chocolate cake",
    "prolactin",
    "insulin resistance",
    "stock market news today",
    "the best python web framework",
    "hello",
    "translate this sentence",
]


async def standout() -> dict:
    """How many standard deviations e5's best passage stands above the mean of its list of 200 in
    ``xl-ja`` (:meth:`retrieval.dense.Profile.stand_out`): English questions with a gold paragraph
    there, random-letter/kana strings, off-topic tasks — the measurement behind
    :data:`retrieval.dense.STAND_OUT_MIN`."""
    from bench.multilingual import OFF_TOPIC, nonsense
    from cairn.retrieval.dense import profile

    english = load_tsv(SETS["ja"]["english"])
    ws, close = await Workspace.open(SETS["ja"]["dir"])
    out: dict = {}
    try:
        idx = ws.services.indexes
        e5 = idx.dense.multilingual
        for label, tasks in (
            ("English questions (gold in xl-ja)", list(english.values())),
            ("random letters and kana", nonsense(60)),
            ("off-topic tasks", OFF_TOPIC + OFF_TOPIC_EN),
        ):
            zs = []
            for task in tasks:
                hits = idx.vectors.search(
                    e5.encode_query(task), workspace_id=ws.principal.workspace_id, limit=200, space=e5.space
                )
                zs.append(profile(hits).stand_out(hits[0][1]))
            zs.sort()
            out[label] = {"n": len(zs), "min": zs[0], "p50": zs[len(zs) // 2], "max": zs[-1]}
            print(
                f"{label:<36} n {len(zs):3d}  top stand-out min {zs[0]:.2f} p50 {zs[len(zs) // 2]:.2f} max {zs[-1]:.2f}"
            )
    finally:
        await close()
    return out


def print_language(name: str, res: dict) -> None:
    """One language's tables."""
    print(f"\n{name} ({res['documents']} documents), maxTokens {MAX_TOKENS}: recall@10 / nDCG@10 (empty packs)")
    for part in ("english", "originals", "native"):
        rows = res[part]
        n = next(iter(rows.values()))["queries"]
        print(f"  {part} ({n} questions)")
        for system, m in rows.items():
            print(f"    {system:<24} {m['recall@10']:.4f} / {m['ndcg@10']:.4f}  ({m['empty']})")


def print_mixed(res: dict) -> None:
    """The mixed-corpus table."""
    mono, mixed = res["monolingual"], res["mixed"]
    print(f"\nmixed: SciFact test claims over {mixed['documents']} docs ({mixed['foreign documents']} foreign)")
    for mode in [m for m in ("LEXICAL", "DENSE", "HYBRID") if m in mixed]:
        a, b = mono[mode], mixed[mode]
        print(
            f"  {mode:<8} nDCG@10 mono {a['ndcg@10']:.4f} mixed {b['ndcg@10']:.4f} ({b['ndcg@10'] - a['ndcg@10']:+.4f}); "
            f"intrusions {b['intrusions']} ({b['intrusion rate']:.2%}); "
            f"translated abstracts in top 10 {b['translated abstracts in top 10']}"
        )


def main() -> None:
    """Parse arguments; build or run."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("step", choices=["build", "run", "standout"])
    ap.add_argument("--sets", default="ja,zh,mixed")
    ap.add_argument("--native", type=int, default=None, help="native questions per language (default: all)")
    ap.add_argument("--modes", default="LEXICAL,DENSE,HYBRID", help="modes of the mixed set")
    ap.add_argument("--every", type=int, default=1, help="mixed set: every n-th SciFact claim by id")
    args = ap.parse_args()
    sets = [s for s in args.sets.split(",") if s]
    if args.step == "build":
        asyncio.run(build(sets))
        return
    if args.step == "standout":
        save_results("crosslingual-standout", {"machine": machine(), "standout": asyncio.run(standout())})
        return
    results: dict = {"machine": machine(), "max_tokens": MAX_TOKENS}
    for name in sets:
        if name == "mixed":
            results["mixed"] = asyncio.run(run_mixed(args.modes.split(","), args.every))
            print_mixed(results["mixed"])
        else:
            results[name] = asyncio.run(run_language(name, args.native))
            print_language(name, results[name])
    results["command"] = (
        f"python -m bench.crosslingual run --sets {args.sets}"
        + (f" --native {args.native}" if args.native else "")
        + (f" --modes {args.modes} --every {args.every}" if "mixed" in sets else "")
    )
    save_results("crosslingual" if args.sets == "ja,zh,mixed" else f"crosslingual-{'-'.join(sets)}", results)
    print(json.dumps({k: v for k, v in results.items() if k in ("command",)}))


if __name__ == "__main__":
    main()
