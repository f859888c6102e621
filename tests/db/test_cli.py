"""The ``cairn`` command as an operator runs it (subprocesses on a temp data dir)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def cairn(*args: str, data_dir: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "app.cli", *args, "--data-dir", str(data_dir)],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)


def test_ingest_members_and_credentials(tmp_path):
    data = tmp_path / "data"
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "one.txt").write_text("Granite is an igneous rock.")
    (docs / "two.md").write_text("# Basalt\n\nBasalt forms from lava.")
    r = cairn("ingest", str(docs), "--collection", "rocks", "--lexical-only", data_dir=data)
    assert r.returncode == 0, r.stderr
    row = [line for line in r.stderr.splitlines() if line.count("│") >= 8][-1]
    assert [c.strip() for c in row.strip("│").split("│")][:5] == ["2", "2", "0", "0", "2"]
    r2 = cairn("ingest", str(docs), "--collection", "rocks", "--lexical-only", data_dir=data)
    assert r2.returncode == 0
    row = [line for line in r2.stderr.splitlines() if line.count("│") >= 8][-1]
    cells = [c.strip() for c in row.strip("│").split("│")]
    assert cells[:5] == ["2", "0", "0", "2", "0"]  # documents, created, updated, unchanged, new passages
    r = cairn("ingest", str(tmp_path / "missing"), "--collection", "rocks", "--lexical-only", data_dir=data)
    assert r.returncode == 2 and "does not exist" in r.stderr
    owner = json.loads(cairn("members", "add", "olga", "--role", "owner", data_dir=data).stdout)
    assert owner["token"].startswith("cm_")
    viewer = json.loads(cairn("members", "add", "vic", "--role", "viewer", data_dir=data).stdout)
    r = cairn("credentials", "create", "--creator", viewer["memberId"], data_dir=data)
    assert r.returncode == 2 and "admin or owner" in r.stderr
    cred = json.loads(cairn("credentials", "create", "--creator", owner["memberId"], "--scope", "context:read",
                            "--days", "7", data_dir=data).stdout)
    assert cred["token"].startswith("ck_") and cred["scopes"] == ["context:read"]
    r = cairn("credentials", "create", "--creator", owner["memberId"], "--days", "400", data_dir=data)
    assert r.returncode == 2 and "between 1 and 365" in r.stderr
    listed = [json.loads(line) for line in cairn("credentials", "list", data_dir=data).stdout.splitlines()]
    assert [c["credentialId"] for c in listed] == [cred["credentialId"]] and "token" not in listed[0]
    revoked = json.loads(cairn("credentials", "revoke", cred["credentialId"], data_dir=data).stdout)
    assert revoked["revokedAt"]
    members = [json.loads(line) for line in cairn("members", "list", data_dir=data).stdout.splitlines()]
    assert [(m["name"], m["role"]) for m in members] == [("olga", "owner"), ("vic", "viewer")]
    changed = json.loads(cairn("members", "set-role", viewer["memberId"], "--role", "editor", data_dir=data).stdout)
    assert changed["role"] == "editor"
    r = cairn("members", "set-role", viewer["memberId"], "--role", "boss", data_dir=data)
    assert r.returncode == 2 and "role must be one of" in r.stderr
    spaces = [json.loads(line)["name"] for line in cairn("workspaces", "list", data_dir=data).stdout.splitlines()]
    assert spaces == ["default"]


def test_serve_migrates_an_older_data_dir_before_serving(tmp_path):
    """A data dir made by an older Cairn (schema 0001) is brought up to date by `cairn serve`."""
    import os
    import socket
    import sqlite3
    import time

    import httpx

    from app.config import Settings
    from app.migrate import upgrade_database

    data = tmp_path / "old"
    upgrade_database(Settings(data_dir=data).resolved_database_url, revision="0001")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, CAIRN_EMBEDDER="none")
    server = subprocess.Popen([sys.executable, "-m", "app.cli", "serve", "--port", str(port), "--data-dir", str(data)],
                              cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        ready = None
        for _ in range(240):
            try:
                ready = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).json()
                if ready.get("ready"):
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.25)
        assert ready and ready["ready"] is True, ready
    finally:
        server.terminate()
        server.wait(timeout=30)
    con = sqlite3.connect(data / "cairn.db")
    try:
        head = con.execute("select version_num from alembic_version").fetchone()[0]
        tables = {r[0] for r in con.execute("select name from sqlite_master where type='table'")}
    finally:
        con.close()
    assert head == sorted(p.name[:4] for p in (ROOT / "migrations" / "versions").glob("0*.py"))[-1]
    assert {"agentmemory", "ontology_network", "decision"} <= tables
