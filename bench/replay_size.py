"""Bytes per replay record: the compact binary form vs the JSON form it replaced (issue 14).

Ingests TimeQA test pages (LEXICAL only: no embedding cost) into ``bench/out/replay-size``,
builds packs at ``--max-tokens`` (8,000 by default) for the first ``--packs`` questions,
and measures, per pack: the stored ``payload`` (:mod:`app.packs.replay_codec`), the JSON
form of the same conditions and items as the old columns held them, and the database file's
growth per record (SQLite, after ``VACUUM``).

    python -m bench.replay_size --packs 200
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import gzip
import json
import sqlite3
import statistics

from bench.common import OUT, SHARED


async def run(n_packs: int, max_tokens: int) -> dict:
    from sqlalchemy import func, select

    from cairn.app.context import bootstrap
    from cairn.app.core.config import Settings
    from cairn.app.core.db import Database
    from cairn.app.core.migrate import upgrade_database
    from cairn.app.core.models import ReplayRecord
    from cairn.app.corpus import SourceDocument, ingest_documents, open_indexes
    from cairn.app.governance.auth import ROLE_PERMISSIONS, Principal
    from cairn.app.identity import service as identity
    from cairn.app.packs import PackRequest, build_pack, decode_record

    data_dir = OUT / "replay-size"
    data_dir.mkdir(parents=True, exist_ok=True)
    settings = Settings(data_dir=data_dir, embedder="none")
    await asyncio.to_thread(upgrade_database, settings.resolved_database_url)
    db = Database(settings.resolved_database_url)
    indexes = open_indexes(settings)
    try:
        async with db.session() as s:
            ws = await identity.get_workspace_by_name(s, "default") or await identity.create_workspace(
                s, name="default"
            )
        pages = json.load(gzip.open(SHARED / "timeqa" / "human_annotated_test.json.gz"))
        await ingest_documents(
            db,
            indexes,
            workspace_id=ws.id,
            collection="timeqa",
            documents=(
                SourceDocument(external_id=p["index"], title=p["paras"][0], text="\n\n".join(p["paras"][1:]))
                for p in pages
            ),
        )
        who = Principal("member", "bench", ws.id, ROLE_PERMISSIONS["owner"], "bench", "owner")
        services = bootstrap(settings, db=db, indexes=indexes)
        questions = [q for p in pages for q, _ in p["questions"]][:n_packs]
        async with db.session() as s:
            await s.execute(ReplayRecord.__table__.delete())
        await db.dispose()
        path = str(data_dir / "cairn.db")
        con = sqlite3.connect(path)
        con.execute("VACUUM")
        before = con.execute("PRAGMA page_count").fetchone()[0] * con.execute("PRAGMA page_size").fetchone()[0]
        con.close()
        db = Database(settings.resolved_database_url)
        services = dataclasses.replace(services, db=db)
        ids = []
        for q in questions:
            pack = await build_pack(services, who, PackRequest(task=q, max_tokens=max_tokens, retrieval="LEXICAL"))
            ids.append(pack.header.replay_id)
        payload, legacy, items = [], [], []
        async with db.session() as s:
            for rid in ids:
                rec = await s.get(ReplayRecord, rid)
                cond, its = decode_record(bytes(rec.payload))
                payload.append(len(rec.payload))
                items.append(len(its))
                old = {
                    "conditions": cond,
                    "items": [
                        {
                            "rank": i.rank,
                            "kind": i.kind,
                            "documentId": i.document_id,
                            "versionId": i.version_id,
                            "passageId": i.passage_id,
                            "start": i.start,
                            "end": i.end,
                            "sha256": i.sha256,
                        }
                        for i in its
                    ],
                }
                legacy.append(len(json.dumps(old["conditions"])) + len(json.dumps(old["items"])))
            count = (await s.execute(select(func.count()).select_from(ReplayRecord))).scalar_one()
        await db.dispose()
        con = sqlite3.connect(path)
        con.execute("VACUUM")
        after = con.execute("PRAGMA page_count").fetchone()[0] * con.execute("PRAGMA page_size").fetchone()[0]
        con.close()
        return {
            "packs": len(ids),
            "maxTokens": max_tokens,
            "items per pack (mean)": round(statistics.mean(items), 1),
            "payload bytes per pack (mean)": round(statistics.mean(payload)),
            "payload bytes per item": round(sum(payload) / max(1, sum(items)), 1),
            "legacy JSON bytes per pack (mean)": round(statistics.mean(legacy)),
            "legacy JSON bytes per item": round(sum(legacy) / max(1, sum(items)), 1),
            "SQLite growth per record (bytes, after VACUUM)": round((after - before) / max(1, count)),
        }
    finally:
        indexes.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--packs", type=int, default=200)
    ap.add_argument("--max-tokens", type=int, default=8000)
    args = ap.parse_args()
    print(json.dumps(asyncio.run(run(args.packs, args.max_tokens)), indent=1))


if __name__ == "__main__":
    main()
