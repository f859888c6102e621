"""Backup and restore (issue 32 item 19), through the ``cairn`` command.

SQLite: ``cairn backup`` beside a running ``cairn serve``, ``cairn restore`` into an empty dir,
and the same packs (every item, score and citation) from the restored store. PostgreSQL: the
docs/operations.md's way, ``pg_dump`` + ``pg_restore`` into a new database + ``cairn reindex`` on an empty
data dir, and the same packs.

``cairn serve`` (holding the data dir while ``backup`` runs) is a real process; the other commands
and the packs run in this process (:func:`tests.db.cli_in_process.run_cli`): a process of their
own would import torch and load the model again (~13 s of CPU each).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from cairn.app.context import bootstrap
from cairn.app.core.config import Settings
from cairn.app.core.db import Database
from cairn.app.corpus import open_indexes, warm_models
from cairn.app.governance.auth import ROLE_PERMISSIONS, Principal
from cairn.app.identity import service as identity
from cairn.app.packs.serialize import event_json
from cairn.app.packs.service import build_pack
from cairn.app.packs.types import PackRequest
from tests.conftest import drop_postgres_database, postgres_database
from tests.db.cli_in_process import run_cli, without_cairn_settings
from tests.db.cli_processes import Server

pytestmark = pytest.mark.model  # ingest, reindex and the packs load the embedding model

DOCS = {
    "volcano.txt": "Mount Etna is an active stratovolcano on the east coast of Sicily. It erupts lava often.",
    "granite.md": "# Granite\n\nGranite is a coarse-grained igneous rock made mostly of quartz and feldspar.",
    "tower-ja.txt": "東京タワーは東京都港区芝公園にある電波塔です。高さは三百三十三メートルです。",
    "tea.txt": "Green tea is steamed or pan-fired soon after picking, so its leaves do not oxidise.",
}


async def _packs(data: Path, url: str) -> list:
    settings = Settings(data_dir=data, database_url=url or None)
    db = Database(settings.resolved_database_url)
    indexes = open_indexes(settings)
    try:
        services = bootstrap(settings, db=db, indexes=indexes)
        await indexes.index_pending(db)
        await warm_models(indexes)  # a cold model load must not spend the packs' latency budget
        async with db.session() as s:
            ws = await identity.get_workspace_by_name(s, "default")
        who = Principal(
            kind="member",
            id="m",
            workspace_id=ws.id,
            permissions=ROLE_PERMISSIONS["viewer"],
            member_id="m",
            role="viewer",
        )
        out = []
        for task in ("an active volcano erupting lava", "quartz and feldspar rock", "東京タワーの高さ"):
            for mode in ("LEXICAL", "HYBRID"):
                request = PackRequest(task=task, retrieval=mode, max_tokens=600, max_latency_ms=60_000)
                pack = await build_pack(services, who, request)
                out.append([task, mode, list(pack.footer.incomplete_reasons)] + [event_json(i) for i in pack.items])
    finally:
        indexes.close()
        await db.dispose()
    return json.loads(json.dumps(out, sort_keys=True, ensure_ascii=False))


def packs(data: Path, url: str = "") -> list:
    """Every pack item (LEXICAL and HYBRID, three tasks) of the store, as the NDJSON stream
    writes them (built in this process from the store's files and database alone)."""
    result = asyncio.run(_packs(data, url))
    assert all(len(row) > 3 for row in result), result  # every pack has items
    return result


def cairn(tmp: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    """``cairn ARGS`` in this process, in ``tmp``, with only the ``CAIRN_*`` settings ``env``."""
    return run_cli(*args, env=without_cairn_settings(**env), cwd=tmp)


def ingest(tmp: Path, data: Path, **env: str) -> None:
    docs = tmp / "docs"
    docs.mkdir(exist_ok=True)
    for name, text in DOCS.items():
        (docs / name).write_text(text, encoding="utf-8")
    r = cairn(tmp, "ingest", str(docs), "-c", "notes", "--data-dir", str(data), **env)
    assert r.returncode == 0, r.stderr


def one_line_error(r: subprocess.CompletedProcess) -> str:
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    return lines[0][len("error: ") :]


@pytest.mark.slow  # a `cairn serve` process
def test_backup_beside_serve_then_restore_into_an_empty_dir_gives_identical_packs(tmp_path):
    data, archive, restored = tmp_path / "data", tmp_path / "cairn-backup.tar.gz", tmp_path / "restored"
    ingest(tmp_path, data)
    before = packs(data)

    server = Server(tmp_path, data, CAIRN_EMBEDDER="none")  # holds the data dir, as in production
    try:
        server.wait_ready()
        r = cairn(tmp_path, "backup", "--to", str(archive), "--data-dir", str(data))
        assert r.returncode == 0, r.stderr
    finally:
        server.stop()
    made = json.loads(r.stdout)
    assert made["documents"] == 4 and made["passages"] == 4 and made["format"] == "cairn-backup", made
    with tarfile.open(archive) as tar:
        assert sorted(tar.getnames()) == ["cairn.db", "manifest.json"]

    r = cairn(tmp_path, "restore", str(archive), "--data-dir", str(restored))
    assert r.returncode == 0, r.stderr
    said = json.loads(r.stdout)
    assert (said["documents"], said["passages"], said["lexicalIndexed"], said["vectorIndexed"]) == (4, 4, 4, 4), said
    assert packs(restored) == before

    # refusals: one line each, nothing written
    again = one_line_error(cairn(tmp_path, "backup", "--to", str(archive), "--data-dir", str(data)))
    assert again == f"{archive} exists: give a new file name (a backup never overwrites)"
    full = one_line_error(cairn(tmp_path, "restore", str(archive), "--data-dir", str(data)))
    assert full == f"{data} is not empty: restore into a new or empty data dir"
    damaged, target = tmp_path / "damaged.tar.gz", tmp_path / "target"
    damaged.write_bytes(archive.read_bytes()[: archive.stat().st_size // 2])
    assert "damaged" in one_line_error(cairn(tmp_path, "restore", str(damaged), "--data-dir", str(target)))
    assert not target.exists()  # a failed restore leaves no half-made store behind
    missing = tmp_path / "nope.tar.gz"
    said = one_line_error(cairn(tmp_path, "restore", str(missing), "--data-dir", str(target)))
    assert said.endswith(f"{missing} does not exist") and not target.exists()
    target.mkdir()
    other = tmp_path / "other.tar.gz"
    with tarfile.open(other, "w:gz") as tar:
        tar.add(data / "cairn.db", arcname="cairn.db")
    assert "not a Cairn backup" in one_line_error(cairn(tmp_path, "restore", str(other), "--data-dir", str(target)))
    assert list(target.iterdir()) == []  # the empty dir it was given stays empty


@pytest.mark.postgres
@pytest.mark.skipif(shutil.which("pg_dump") is None, reason="pg_dump is not installed")
def test_postgres_pg_dump_restore_and_reindex_give_identical_packs(tmp_path):
    url, copy = postgres_database(), postgres_database()
    try:
        data, fresh, dump = tmp_path / "data", tmp_path / "fresh", tmp_path / "cairn.dump"
        ingest(tmp_path, data, CAIRN_DATABASE_URL=url)
        before = packs(data, url)
        libpq = url.replace("postgresql+asyncpg://", "postgresql://")
        subprocess.run(["pg_dump", "--format=custom", f"--file={dump}", libpq], check=True, timeout=120)
        target = copy.replace("postgresql+asyncpg://", "postgresql://")
        subprocess.run(["pg_restore", "--no-owner", f"--dbname={target}", str(dump)], check=True, timeout=120)

        r = cairn(tmp_path, "reindex", "--data-dir", str(fresh), CAIRN_DATABASE_URL=copy)
        assert r.returncode == 0, r.stderr
        assert "reindexed 4 passages lexically, 4 as vectors" in " ".join(r.stderr.split()), r.stderr
        assert packs(fresh, copy) == before

        refused = one_line_error(cairn(tmp_path, "backup", "--to", str(tmp_path / "b.tar.gz"), CAIRN_DATABASE_URL=url))
        assert "pg_dump" in refused and "cairn reindex" in refused, refused
    finally:
        drop_postgres_database(url)
        drop_postgres_database(copy)
