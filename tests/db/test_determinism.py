"""Identical input over identical data gives byte-identical items across processes."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cairn.app.core.config import Settings
from cairn.app.core.db import Database
from cairn.app.core.migrate import upgrade_database
from cairn.app.corpus import open_indexes
from cairn.app.corpus.ingest import ingest_documents
from cairn.app.corpus.sources import SourceDocument
from cairn.app.identity import service as identity

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r"""
import asyncio, json, sys
from cairn.app.governance.auth import ROLE_PERMISSIONS, Principal
from cairn.app.core.config import Settings
from cairn.app.context import bootstrap
from cairn.app.core.db import Database
from cairn.app.corpus import open_indexes
from cairn.app.packs.types import PackRequest
from cairn.app.packs.service import build_pack
from cairn.app.packs.serialize import event_json

async def main(data_dir, ws_id):
    settings = Settings(data_dir=data_dir)
    db = Database(settings.resolved_database_url)
    indexes = open_indexes(settings)
    services = bootstrap(settings, db=db, indexes=indexes)
    who = Principal(kind="member", id="m", workspace_id=ws_id, permissions=ROLE_PERMISSIONS["viewer"],
                    member_id="m", role="viewer")
    out = []
    for mode in ("LEXICAL", "HYBRID"):
        # the first HYBRID pack of a cold process loads the models inside its latency budget: the
        # longest budget, so a busy machine cannot cut the dense leg in one run and not the other
        pack = await build_pack(services, who, PackRequest(task="tidal energy in estuaries", retrieval=mode,
                                                           max_tokens=600, max_latency_ms=60_000))
        out.append([list(pack.footer.incomplete_reasons)] + [event_json(i) for i in pack.items])
    indexes.close()
    await db.dispose()
    print(json.dumps(out, sort_keys=True, ensure_ascii=False))

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""

TEXTS = [
    "Tidal energy converts the rise and fall of the sea into electricity.",
    "Estuaries mix fresh river water with salty sea water.",
    "Tidal barrages across estuaries hold water back at high tide.",
    "Tidal stream turbines sit in fast currents, much like wind turbines under water.",
    "Estuaries are nurseries for many fish species.",
    "Tidal energy in estuaries can change sediment flows.",
    "Tidal energy in estuaries can change sediment flows!",
]


async def _prepare(data_dir: Path) -> str:
    settings = Settings(data_dir=data_dir)
    await asyncio.to_thread(upgrade_database, settings.resolved_database_url)
    db = Database(settings.resolved_database_url)
    indexes = open_indexes(settings)
    try:
        async with db.session() as s:
            ws = await identity.create_workspace(s, name="det")
        docs = [SourceDocument(external_id=f"d{i}", title="", text=t) for i, t in enumerate(TEXTS)]
        await ingest_documents(db, indexes, workspace_id=ws.id, collection="c", documents=iter(docs))
        return ws.id
    finally:
        indexes.close()
        await db.dispose()


@pytest.mark.slow  # two Python processes
async def test_packs_are_identical_across_processes_and_hash_seeds(tmp_path, embedder):
    ws_id = await _prepare(tmp_path)
    outputs = []
    for seed in ("1", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        r = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-c", SCRIPT, str(tmp_path), ws_id],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env=env,
            timeout=300,
        )
        assert r.returncode == 0, r.stderr[-2000:]
        outputs.append(r.stdout)
    assert outputs[0] == outputs[1]
    assert '"Tidal energy in estuaries can change sediment flows' in outputs[0]
    assert [pack[0] for pack in json.loads(outputs[0])] == [[], []]  # both packs complete (no LATENCY)
