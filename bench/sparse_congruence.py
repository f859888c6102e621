"""Congruence of the lexical leg: sparse BM25 in Qdrant (cluster mode) vs the embedded Whoosh leg.

Usage: ``.venv/bin/python -m bench.sparse_congruence [--datasets scifact,nfstyle,jsquad]
[--queries N] [--jsquad-every K] [--oracle]``

Both legs index the same units — each corpus document as one passage (title + text), no
chunking, one workspace — and answer the same queries through their ``search`` methods
(:class:`retrieval.lexical.whoosh_index.WhooshIndex` on a temp dir; :class:`retrieval.lexical.sparse.
SparseBM25Index` on qdrant-client *local mode* in memory, where the client computes the IDF
modifier itself; no Qdrant server runs here). Printed per dataset: nDCG@10 of each leg,
the difference, top-10 overlap, the share of queries with the same top-1, the Whoosh
corpus's true mean length, with ``--oracle`` sparse nDCG@10 with that true mean as
``avg_length`` (instead of the fixed default), and the term-hash collisions of the corpus
vocabulary.

Datasets (../shared/data): ``scifact`` (5,183 abstracts, 300 test queries); ``nfstyle``:
there is no NFCorpus here, so SciFact lower-cased with punctuation removed stands in for
"NFCorpus-style" preprocessed text (same qrels); ``jsquad`` (Japanese, CJK bigrams; 2,304 passages; every
``--jsquad-every``-th of its 4,442 valid questions, default 4).
qdrant-client local mode scores sparse queries in Python (0.5–2.5 s each at these sizes on
this loaded 2-core machine), hence ``--queries`` subsets (queries sorted by id, the first N).
"""

from __future__ import annotations

import argparse
import re
import shutil
import tempfile
import time
from pathlib import Path

from bench.common import SHARED, load_qrels, load_queries, machine, ndcg_at, read_jsonl_gz

DATA = {
    "scifact": ("scifact/corpus.jsonl.gz", "scifact/queries.jsonl", "scifact/qrels/test.tsv"),
    "jsquad": ("jsquad/beir/corpus.jsonl", "jsquad/beir/queries.jsonl", "jsquad/beir/qrels/valid.tsv"),
}
_PUNCT = re.compile(r"[^\w\s]")


def nf_style(text: str) -> str:
    """Lower-cased, punctuation removed (the "NFCorpus-style" stand-in)."""
    return re.sub(r"\s+", " ", _PUNCT.sub(" ", text.lower())).strip()


def load(dataset: str, every: int, limit: int | None):
    """``(docs [(id, title, text)], queries {id: text}, qrels)`` for a dataset key."""
    import json

    source = "scifact" if dataset == "nfstyle" else dataset
    corpus, queries_path, qrels_path = (SHARED / p for p in DATA[source])
    if corpus.suffix == ".gz":
        rows = list(read_jsonl_gz(corpus))
    else:
        with open(corpus, encoding="utf-8") as fh:
            rows = [json.loads(line) for line in fh]
    docs = [(str(r["_id"]), r.get("title") or "", r.get("text") or "") for r in rows]
    qrels = load_qrels(qrels_path)
    queries = {q: t for q, t in load_queries(queries_path).items() if q in qrels}
    ids = sorted(queries, key=lambda q: (len(q), q))[::every]
    if limit:
        ids = ids[:limit]
    queries = {q: queries[q] for q in ids}
    if dataset == "nfstyle":
        docs = [(i, nf_style(t), nf_style(x)) for i, t, x in docs]
        queries = {q: nf_style(t) for q, t in queries.items()}
    return docs, queries, qrels


def run(dataset: str, every: int, limit: int | None, oracle: bool = False) -> dict:
    from qdrant_client import QdrantClient

    from cairn.retrieval.lexical import WhooshIndex
    from cairn.retrieval.lexical.schema import IndexedPassage
    from cairn.retrieval.lexical.sparse import SparseBM25Index, body_of, vocabulary_collisions

    docs, queries, qrels = load(dataset, every, limit)
    passages = [IndexedPassage(i, "w", "c", i, title, text) for i, title, text in docs]
    tmp = Path(tempfile.mkdtemp(prefix="sparse-congruence-"))
    out: dict = {"dataset": dataset, "docs": len(docs), "queries": len(queries)}
    try:
        whoosh = WhooshIndex(tmp / "whoosh")
        t = time.perf_counter()
        whoosh.add(passages)
        out["whoosh_index_s"] = round(time.perf_counter() - t, 1)
        searcher = whoosh._require_open()
        true_avg = searcher.avg_field_length("body")
        out["true_avg_length"] = round(true_avg, 1)
        rankings: dict[str, dict[str, list[str]]] = {"whoosh": {}}
        t = time.perf_counter()
        for q, text in queries.items():
            rankings["whoosh"][q] = [p for p, _ in whoosh.search(text, workspace_id="w", limit=100)]
        out["whoosh_query_ms"] = round((time.perf_counter() - t) * 1000 / len(queries), 1)
        whoosh.close()
        variants: list[tuple[str, float | None]] = [("sparse", None)]
        if oracle:
            variants.append(("sparse_oracle_avg", true_avg))
        for name, avg in variants:
            client = QdrantClient(location=":memory:")
            kw = {} if avg is None else {"avg_length": avg}
            sparse = SparseBM25Index(client=client, collection="bench", **kw)
            t = time.perf_counter()
            sparse.add(passages)
            out[f"{name}_index_s"] = round(time.perf_counter() - t, 1)
            rankings[name] = {}
            t = time.perf_counter()
            for q, text in queries.items():
                rankings[name][q] = [p for p, _ in sparse.search(text, workspace_id="w", limit=100)]
            out[f"{name}_query_ms"] = round((time.perf_counter() - t) * 1000 / len(queries), 1)
            client.close()
        for name, ranked in rankings.items():
            out[f"ndcg@10_{name}"] = round(sum(ndcg_at(ranked[q], qrels[q], 10) for q in queries) / len(queries), 4)
        w, s = rankings["whoosh"], rankings["sparse"]
        out["delta"] = round(out["ndcg@10_sparse"] - out["ndcg@10_whoosh"], 4)
        out["top10_overlap"] = round(sum(len(set(w[q][:10]) & set(s[q][:10])) / 10 for q in queries) / len(queries), 3)
        out["same_top1"] = round(sum(w[q][:1] == s[q][:1] for q in queries) / len(queries), 3)
        out["vocabulary"], out["colliding_terms"] = vocabulary_collisions(body_of(t, x) for _, t, x in docs)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="scifact,nfstyle,jsquad")
    parser.add_argument("--queries", type=int, default=None, help="at most N queries per dataset (default all)")
    parser.add_argument("--oracle", action="store_true", help="also run sparse with the corpus's true mean length")
    parser.add_argument("--jsquad-every", type=int, default=4, help="every k-th JSQuAD question (default 4)")
    args = parser.parse_args()
    print(machine())
    for dataset in args.datasets.split(","):
        every = args.jsquad_every if dataset == "jsquad" else 1
        result = run(dataset, every, args.queries, args.oracle)
        print(" ".join(f"{k}={v}" for k, v in result.items()), flush=True)


if __name__ == "__main__":
    main()
