"""Ingest throughput against the raw encoder, on the same passages, in the same run.

Usage: ``.venv/bin/python -m bench.ingest [--docs 400]``

Takes the first ``--docs`` SciFact abstracts, and:
1. encodes the passages Cairn would make of them with the bare encoder (``LocalMiniLM.encode``
   in batches of 64, the ingest batch size) — the ceiling for any ingest pipeline here;
2. ingests the same documents into a fresh data dir through the ingest service (what
   ``cairn ingest`` runs: parse, chunk, SQL, Whoosh, embed, Qdrant), timed end to end;
3. encodes again (the machine is shared; the mean of both raw runs is the reference).

Prints documents/s and passages/s for both and the ratio (goal ≥ 0.9), and saves
``bench/out/results/ingest.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import tempfile
import time
from itertools import islice
from pathlib import Path

from bench.common import RESULTS, SHARED, machine, read_jsonl_gz


async def _ingest(data_dir: Path, docs: list[dict], embedder) -> tuple[float, int]:
    from cairn.app.core.config import Settings
    from cairn.app.core.db import Database
    from cairn.app.core.migrate import upgrade_database
    from cairn.app.corpus.ingest import ingest_documents
    from cairn.app.corpus.opening import open_indexes
    from cairn.app.corpus.sources import iter_sources
    from cairn.app.identity import service as identity

    src = data_dir / "corpus.jsonl"
    src.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    settings = Settings(data_dir=data_dir / "cairn")
    await asyncio.to_thread(upgrade_database, settings.resolved_database_url)
    db = Database(settings.resolved_database_url)
    indexes = open_indexes(settings)
    indexes.embedder = embedder  # the warmed-up instance the raw runs use
    try:
        async with db.session() as s:
            ws = await identity.create_workspace(s, name="bench")
        t = time.perf_counter()
        report = await ingest_documents(
            db, indexes, workspace_id=ws.id, collection="scifact", documents=iter_sources(src)
        )
        return time.perf_counter() - t, report.new_passages
    finally:
        indexes.close()
        await db.dispose()


def _passage_inputs(docs: list[dict], chunk_max_tokens: int) -> list[str]:
    from cairn.app.corpus.indexing import SearchIndexes
    from cairn.retrieval.chunking import chunk_text

    inputs = []
    for d in docs:
        for c in chunk_text(d["text"], max_tokens=chunk_max_tokens):
            inputs.append(SearchIndexes.embedding_input(None, d.get("title", ""), c.text))  # type: ignore[arg-type]
    return inputs


def _raw(embedder, texts: list[str]) -> float:
    t = time.perf_counter()
    for i in range(0, len(texts), 64):
        embedder.encode(texts[i : i + 64])
    return time.perf_counter() - t


def main() -> None:
    """Run the three measurements, print, save JSON."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--docs", type=int, default=400)
    args = ap.parse_args()
    from cairn.app.core.config import Settings
    from cairn.retrieval.embeddings import load_embedder

    docs = list(islice(read_jsonl_gz(SHARED / "scifact" / "corpus.jsonl.gz"), args.docs))
    embedder = load_embedder("local")
    embedder.encode(["warm up"])
    texts = _passage_inputs(docs, Settings().chunk_max_tokens)
    raw1 = _raw(embedder, texts)
    tmp = Path(tempfile.mkdtemp(prefix="cairn-bench-ingest-"))
    try:
        wall, passages = asyncio.run(_ingest(tmp, docs, embedder))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    raw2 = _raw(embedder, texts)
    raw = (raw1 + raw2) / 2
    r = {
        "machine": machine(),
        "documents": len(docs),
        "passages": passages,
        "raw_passages": len(texts),
        "ingest_s": wall,
        "ingest_docs_per_s": len(docs) / wall,
        "ingest_passages_per_s": passages / wall,
        "raw_s": [raw1, raw2],
        "raw_passages_per_s": len(texts) / raw,
        "command": f"python -m bench.ingest --docs {args.docs}",
    }
    r["ratio"] = r["ingest_passages_per_s"] / r["raw_passages_per_s"]
    print(f"SciFact first {len(docs)} documents → {passages} passages ({machine()})")
    print(f"raw encoder:  {r['raw_passages_per_s']:.1f} passages/s (runs {raw1:.1f}s, {raw2:.1f}s)")
    print(
        f"cairn ingest: {r['ingest_passages_per_s']:.1f} passages/s, {r['ingest_docs_per_s']:.1f} documents/s "
        f"({wall:.1f}s end to end: parse, chunk, SQL, BM25, embed, vectors)"
    )
    print(f"ingest / raw encoder: {r['ratio']:.2f} (goal ≥ 0.90)")
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "ingest.json").write_text(json.dumps(r, indent=2))


if __name__ == "__main__":
    main()
