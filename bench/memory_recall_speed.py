"""Recall latency at the memory cap: ``python -m bench.memory_recall_speed [--database-url URL]``.

One member holds 5,000 memories (the SPEC cap per member per workspace): the first 5,000
LoCoMo turns (``../shared/data/locomo/locomo10.json``, text "Speaker: turn") with their
analysed term rows, as :func:`app.memory.service.remember` stores them, but with random
unit 384-d vectors (encoding 5,000 texts would take minutes here and cosine cost does not
depend on the values). Then 30 LoCoMo questions are recalled through
:func:`app.memory.service.recall` with the real all-MiniLM-L6-v2 query encoder, exactly as
the resolver calls it. Printed: the vector stage (query encoding + loading every vector +
numpy cosine; budget 800 ms), and the whole recall, median / p95 / max in ms.

On PostgreSQL the tables are ANALYZEd after the bulk load (autovacuum does it in service).
Default database: a throw-away SQLite file. ``--database-url`` takes e.g.
``postgresql+asyncpg://postgres@127.0.0.1:5432/<an empty database>`` (migrated here).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import numpy as np

from bench.common import SHARED

DATA = SHARED / "locomo" / "locomo10.json"
N_MEMORIES = 5_000


def _stats(values: list[float]) -> str:
    values = sorted(values)
    p95 = values[min(len(values) - 1, int(0.95 * len(values)))]
    return f"median {statistics.median(values):.0f} ms, p95 {p95:.0f} ms, max {values[-1]:.0f} ms"


async def run(url: str | None) -> None:
    from sqlalchemy import insert
    from sqlalchemy import text as sql

    from cairn.app.core.db import Database
    from cairn.app.core.ids import new_id, utcnow
    from cairn.app.core.migrate import upgrade_database
    from cairn.app.core.models import AgentMemory, MemoryTerm
    from cairn.app.governance.auth import ROLE_PERMISSIONS, Principal
    from cairn.app.identity import service as identity
    from cairn.app.memory import service as mem
    from cairn.app.memory.candidates import memory_terms
    from cairn.app.memory.rank import pack_vector
    from cairn.retrieval.embeddings import load_embedder

    samples = json.loads(DATA.read_text(encoding="utf-8"))
    texts, questions = [], []
    for sample in samples:
        conv = sample["conversation"]
        for key in sorted(
            (k for k, v in conv.items() if k.startswith("session_") and isinstance(v, list)),
            key=lambda k: int(k.split("_")[1]),
        ):
            texts += [f"{t['speaker']}: {t['text']}"[:1000] for t in conv[key]]
        questions += [qa["question"] for qa in sample["qa"] if qa.get("category") in (1, 2, 3, 4)][:3]
    texts = texts[:N_MEMORIES]
    tmp = Path(tempfile.mkdtemp(prefix="cairn-memspeed-"))
    url = url or f"sqlite+aiosqlite:///{tmp / 'bench.db'}"
    await asyncio.to_thread(upgrade_database, url)
    db = Database(url)
    embedder = load_embedder("local")
    embedder.encode_query("warm up")
    rng = np.random.default_rng(7)
    try:
        async with db.session() as s:
            ws = await identity.create_workspace(s, name=f"memspeed-{new_id('b')}")
            ws.memory_enabled, ws.memory_retention_days = True, 365
            s.add(ws)
            m, _ = await identity.create_member(s, workspace_id=ws.id, name="bench", role="editor")
        who = Principal(
            kind="agent",
            id=new_id("ck")[:16],
            workspace_id=ws.id,
            permissions=ROLE_PERMISSIONS["editor"],
            member_id=m.id,
            role="editor",
            scopes=frozenset({"memory:read", "memory:write"}),
        )
        start = utcnow() - timedelta(days=30)
        rows, terms = [], []
        for i, text in enumerate(texts):
            v = rng.standard_normal(384).astype(np.float32)
            mid = new_id("mem")
            rows.append(
                dict(
                    id=mid,
                    workspace_id=ws.id,
                    owner_member_id=m.id,
                    writer_id=who.id,
                    namespace="bench",
                    key=None,
                    collection_id=None,
                    version=1,
                    text=text,
                    entities=[],
                    embedding=pack_vector(v / np.linalg.norm(v)),
                    embedding_model=embedder.name,
                    recorded_at=start + timedelta(seconds=40 * i),
                )
            )
            terms += [dict(memory_id=mid, term=t, workspace_id=ws.id, owner_member_id=m.id) for t in memory_terms(text)]
        async with db.session() as s:
            for i in range(0, len(rows), 1000):
                await s.execute(insert(AgentMemory), rows[i : i + 1000])
            for i in range(0, len(terms), 5000):
                await s.execute(insert(MemoryTerm), terms[i : i + 5000])
        if url.startswith("postgresql"):
            # what autovacuum's auto-analyze does after a bulk load; without statistics the
            # planner filters the term index by owner only (measured ~1 s per recall)
            async with db.session() as s:
                for table in ("agentmemory", "memoryterm"):
                    await s.execute(sql(f"ANALYZE {table}"))
        vector_ms, total_ms, cands = [], [], []
        skipped = 0
        for q in questions:
            t0 = time.perf_counter()
            async with db.session() as s:
                out = await mem.recall(s, principal=who, query=q, limit=10, embedder=embedder)
            total_ms.append((time.perf_counter() - t0) * 1000)
            vector_ms += [lg.ms for lg in out.legs if lg.name == "vector"]
            cands.append(out.candidates)
            skipped += sum(1 for lg in out.legs if lg.status != "USED")
        print(
            f"{len(texts)} memories of one member, {len(terms)} term rows, {len(questions)} recalls "
            f"({url.split(':', 1)[0]})"
        )
        print(
            f"  vector stage (encode + load 5,000 vectors + cosine): {_stats(vector_ms)}; "
            f"skipped past 800 ms on {skipped} recalls"
        )
        print(f"  whole recall: {_stats(total_ms)}; candidates mean {statistics.fmean(cands):.0f}")
    finally:
        await db.dispose()
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--database-url", default=None, help="default: a throw-away SQLite file")
    args = parser.parse_args()
    if not DATA.exists():
        raise SystemExit(f"needs {DATA}")
    asyncio.run(run(args.database_url))


if __name__ == "__main__":
    main()
