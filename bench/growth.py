"""Build a ~100k-passage data dir from the real corpora, for the latency growth curve.

Usage: ``.venv/bin/python -m bench.growth [--chunk-max-tokens 50]`` then
``.venv/bin/python -m bench.latency --data-dir bench/out/growth --label 100k``.

Corpus (all real text from ../shared/data): SciFact's 5,183 abstracts, JSQuAD's 2,304
Japanese Wikipedia paragraphs and TimeQA's 577 English Wikipedia pages (paragraphs joined)
— 8,064 documents, 14.3 M characters. With Cairn's default 200-token passages they make
~24.6k passages; cut at 50 tokens (sentence-sized passages, same chunker) they make ~100k.
That is the only difference from a normal ingest.

Vectors: encoding 100k passages with all-MiniLM-L6-v2 takes ~90 min on this machine's 2
cores, so the growth data dir gets *stand-in* unit vectors (deterministic, seeded by passage
id) through the same vector index API. Queries are still embedded by the real model, and
the vector search does the same work (same count, dimension and index) as with real
vectors, so latency is representative; retrieval *quality* on this data dir is meaningless
and is not reported.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import gzip
import hashlib
import json
import time
from pathlib import Path

import numpy as np

from bench.common import OUT, SHARED, read_jsonl_gz


def corpus_rows():
    """Yield BEIR-style rows (``_id``, ``title``, ``text``) of the three corpora."""
    for r in read_jsonl_gz(SHARED / "scifact" / "corpus.jsonl.gz"):
        yield {"_id": f"scifact:{r['_id']}", "title": r.get("title", ""), "text": r["text"]}
    for r in read_jsonl_gz(SHARED / "jsquad" / "beir" / "corpus.jsonl"):
        yield {"_id": f"jsquad:{r['_id']}", "title": r.get("title", ""), "text": r["text"]}
    for name in ("human_annotated_train.json.gz", "human_annotated_test.json.gz"):
        with gzip.open(SHARED / "timeqa" / name, "rt", encoding="utf-8") as fh:
            for r in json.load(fh):
                paras = ast.literal_eval(r["paras"]) if isinstance(r["paras"], str) else r["paras"]
                yield {"_id": f"timeqa:{r['index']}", "title": paras[0] if paras else "", "text": "\n\n".join(paras)}


def stand_in_vector(passage_id: str, dim: int = 384) -> np.ndarray:
    """A deterministic unit vector for a passage id (see module doc)."""
    seed = int.from_bytes(hashlib.sha256(passage_id.encode()).digest()[:8], "big")
    v = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    return v / np.linalg.norm(v)


async def build(data_dir: Path, chunk_max_tokens: int) -> dict:
    """Ingest the corpus lexically, then store stand-in vectors; returns counts and times."""
    from sqlalchemy import func, select, update

    from cairn.app.core.config import Settings
    from cairn.app.core.db import Database
    from cairn.app.core.migrate import upgrade_database
    from cairn.app.core.models import Passage
    from cairn.app.corpus.ingest import ingest_documents
    from cairn.app.corpus.opening import open_indexes
    from cairn.app.corpus.sources import iter_sources
    from cairn.app.identity import service as identity
    from cairn.retrieval.vectors import VectorPoint, open_vector_index

    data_dir.mkdir(parents=True, exist_ok=True)
    src = data_dir / "corpus.jsonl"
    if not src.exists():
        with open(src, "w", encoding="utf-8") as fh:
            for row in corpus_rows():
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    settings = Settings(data_dir=data_dir, chunk_max_tokens=chunk_max_tokens)
    await asyncio.to_thread(upgrade_database, settings.resolved_database_url)
    db = Database(settings.resolved_database_url)
    indexes = open_indexes(settings, with_vectors=False)
    out: dict = {"chunk_max_tokens": chunk_max_tokens}
    try:
        async with db.session() as s:
            ws = await identity.get_workspace_by_name(s, "default") or await identity.create_workspace(
                s, name="default"
            )
        t = time.perf_counter()
        report = await ingest_documents(
            db,
            indexes,
            workspace_id=ws.id,
            collection="growth",
            documents=iter_sources(src),
            chunk_max_tokens=chunk_max_tokens,
            on_index=lambda st, d, n: print(f"\r{st} {d}/{n}", end="", flush=True),
        )
        out["ingest_s"] = time.perf_counter() - t
        out["documents"] = report.documents
        print(
            f"\ningest (SQL + BM25): {report.documents} documents, {report.new_passages} new passages, "
            f"{out['ingest_s']:.0f}s"
        )
    finally:
        indexes.close()
    vectors = open_vector_index(
        path=settings.qdrant_dir, url=None, api_key=None, collection=settings.qdrant_collection, dim=384
    )
    try:
        t = time.perf_counter()
        while True:
            async with db.session() as s:
                rows = (
                    await s.execute(
                        select(Passage.id, Passage.workspace_id, Passage.collection_id, Passage.document_id)
                        .where(Passage.vector_indexed.is_(False))
                        .order_by(Passage.id)
                        .limit(5000)
                    )
                ).all()
            if not rows:
                break
            vectors.upsert([VectorPoint(r[0], stand_in_vector(r[0]), r[1], r[2], r[3]) for r in rows])
            async with db.session() as s:
                await s.execute(update(Passage).where(Passage.id.in_([r[0] for r in rows])).values(vector_indexed=True))
            print(f"\rstand-in vectors +{len(rows)}", end="", flush=True)
        out["vectors_s"] = time.perf_counter() - t
        async with db.session() as s:
            out["passages"] = int((await s.execute(select(func.count()).select_from(Passage))).scalar_one())
        print(f"\n{out['passages']} passages, vectors in {out['vectors_s']:.0f}s")
    finally:
        vectors.close()
        await db.dispose()
    return out


def main() -> None:
    """Parse arguments and build the data dir."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data-dir", type=Path, default=OUT / "growth")
    ap.add_argument("--chunk-max-tokens", type=int, default=50)
    args = ap.parse_args()
    r = asyncio.run(build(args.data_dir, args.chunk_max_tokens))
    (OUT / "results").mkdir(parents=True, exist_ok=True)
    (OUT / "results" / "growth-build.json").write_text(json.dumps(r, indent=2))


if __name__ == "__main__":
    main()
