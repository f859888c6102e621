"""The ``cairn`` command as an operator runs it (subprocesses on a temp data dir)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import local_http
from tests.db.cli_in_process import run_cli
from tests.graphql.conftest import _free_port

ROOT = Path(__file__).resolve().parents[2]


def cairn(*args: str, data_dir: Path | None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run ``cairn ARGS --data-dir DATA_DIR`` (no ``--data-dir`` when None) in this process
    (:func:`tests.db.cli_in_process.run_cli`, working directory the clone)."""
    extra = ["--data-dir", str(data_dir)] if data_dir is not None else []
    return run_cli(*args, *extra, env=env)


def cairn_process(*args: str, data_dir: Path | None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run ``python -m cairn.app.cli ARGS --data-dir DATA_DIR`` as a process of its own: for what
    only a real process shows (the entry point's exit, a terminal's width)."""
    extra = ["--data-dir", str(data_dir)] if data_dir is not None else []
    return subprocess.run(
        [sys.executable, "-m", "cairn.app.cli", *args, *extra],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        env=dict(os.environ, **(env or {})),
    )


def one_line_error(r: subprocess.CompletedProcess) -> str:
    """The whole stderr of a refused command: exactly one ``error: …`` line, exit code 2."""
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    return lines[0][len("error: ") :]


def test_ingest_members_and_credentials(tmp_path):
    data = tmp_path / "data"
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "one.txt").write_text("Granite is an igneous rock.")
    (docs / "two.md").write_text("# Basalt\n\nBasalt forms from lava.")
    r = cairn("ingest", str(docs), "--collection", "rocks", "--lexical-only", data_dir=data)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert [report[k] for k in ("documents", "created", "updated", "unchanged", "newPassages")] == [2, 2, 0, 0, 2]
    r2 = cairn("ingest", str(docs), "--collection", "rocks", "--lexical-only", data_dir=data)
    assert r2.returncode == 0
    report = json.loads(r2.stdout)
    assert [report[k] for k in ("documents", "created", "updated", "unchanged", "newPassages")] == [2, 0, 0, 2, 0]
    r = cairn("ingest", str(tmp_path / "missing"), "--collection", "rocks", "--lexical-only", data_dir=data)
    assert one_line_error(r) == f"{tmp_path / 'missing'} does not exist"
    owner = json.loads(cairn("members", "add", "olga", "--role", "owner", data_dir=data).stdout)
    assert owner["token"].startswith("cm_")
    viewer = json.loads(cairn("members", "add", "vic", "--role", "viewer", data_dir=data).stdout)
    r = cairn("credentials", "create", "--creator", viewer["memberId"], data_dir=data)
    assert r.returncode == 2 and "admin or owner" in r.stderr
    cred = json.loads(
        cairn(
            "credentials",
            "create",
            "--creator",
            owner["memberId"],
            "--scope",
            "context:read",
            "--days",
            "7",
            data_dir=data,
        ).stdout
    )
    assert cred["token"].startswith("ck_") and cred["scopes"] == ["context:read"]
    r = cairn("credentials", "create", "--creator", owner["memberId"], "--days", "400", data_dir=data)
    assert r.returncode == 2 and "between 1 and 365" in r.stderr
    listed = [json.loads(line) for line in cairn("credentials", "list", data_dir=data).stdout.splitlines()]
    assert [c["credentialId"] for c in listed] == [cred["credentialId"]] and "token" not in listed[0]
    assert (listed[0]["status"], listed[0]["lostScopes"]) == ("ACTIVE", [])
    revoked = json.loads(cairn("credentials", "revoke", cred["credentialId"], data_dir=data).stdout)
    assert revoked["revokedAt"]
    listed = [json.loads(line) for line in cairn("credentials", "list", data_dir=data).stdout.splitlines()]
    assert listed[0]["status"] == "REVOKED"
    members = [json.loads(line) for line in cairn("members", "list", data_dir=data).stdout.splitlines()]
    assert [(m["name"], m["role"]) for m in members] == [("olga", "owner"), ("vic", "viewer")]
    changed = json.loads(cairn("members", "set-role", viewer["memberId"], "--role", "editor", data_dir=data).stdout)
    assert changed["role"] == "editor"
    r = cairn("members", "set-role", viewer["memberId"], "--role", "boss", data_dir=data)
    assert r.returncode == 2 and "role must be one of" in r.stderr
    spaces = [json.loads(line)["name"] for line in cairn("workspaces", "list", data_dir=data).stdout.splitlines()]
    assert spaces == ["default"]


def start_server(data: Path) -> subprocess.Popen:
    """A real ``cairn serve`` (no embedder) on ``data``, returned once /readyz says ready."""
    import socket
    import time

    import httpx

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, CAIRN_EMBEDDER="none")
    server = subprocess.Popen(
        [sys.executable, "-m", "cairn.app.cli", "serve", "--port", str(port), "--data-dir", str(data)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    ready = None
    deadline = time.monotonic() + 300  # 240 polls of 0.25 s (~60 s) ran out at load 21 on 2 cores
    while time.monotonic() < deadline:
        try:
            ready = local_http.get(f"http://127.0.0.1:{port}/readyz", timeout=2).json()
            if ready.get("ready"):
                return server
        except httpx.HTTPError:
            pass
        if server.poll() is not None:
            break
        time.sleep(0.25)
    server.terminate()
    server.wait(timeout=30)
    raise AssertionError(f"cairn serve did not become ready: {ready}")


@pytest.mark.slow  # starts a Python process
def test_serve_migrates_an_older_data_dir_before_serving(tmp_path):
    """A data dir made by an older Cairn (schema 0001) is brought up to date by `cairn serve`."""
    import sqlite3

    from alembic.script import ScriptDirectory

    from cairn.app.core.config import Settings
    from cairn.app.core.migrate import alembic_config, upgrade_database

    data = tmp_path / "old"
    upgrade_database(Settings(data_dir=data).resolved_database_url, revision="0001")
    server = start_server(data)
    server.terminate()
    server.wait(timeout=30)
    con = sqlite3.connect(data / "cairn.db")
    try:
        head = con.execute("select version_num from alembic_version").fetchone()[0]
        tables = {r[0] for r in con.execute("select name from sqlite_master where type='table'")}
    finally:
        con.close()
    url = Settings(data_dir=data).resolved_database_url
    assert head == ScriptDirectory.from_config(alembic_config(url)).get_current_head()
    assert {"agentmemory", "ontology_network", "decision"} <= tables


HELD_DATA_DIR_HINTS = {
    # command path -> (arguments, what it is told to do instead of waiting for the server)
    "ingest": (
        ["ingest", "{docs}", "-c", "rocks"],
        "send the files to it instead (`cairn ingest PATH --server URL`), or stop it",
    ),
    "reindex": (["reindex"], "stop it first: reindex rebuilds the indexes that process holds open"),
    "demo": (["demo", "--no-serve"], "stop it first, or give the demo its own --data-dir"),
    "mcp": (
        ["mcp", "--token", "ck_0000000000000000_x"],
        "use its MCP endpoint instead (POST /mcp, streamable HTTP), or stop it",
    ),
    "serve": (["serve", "--port", "{port}"], "stop it first, or give this server its own --data-dir"),
}


@pytest.mark.slow  # starts a Python process
def test_every_command_on_a_data_dir_held_by_cairn_serve_names_its_own_alternative(tmp_path):
    """Each command that takes the data dir lock is told, in one line, what IT can do instead:
    `mcp` the running server's `POST /mcp` (it used to be told to ingest through upsertDocument),
    `ingest` its upload route (`--server`), a second `serve` or `demo` another --data-dir."""
    from cairn.app.cli import cli
    from cairn.app.cli.common import DATA_DIR_ALTERNATIVES

    assert set(HELD_DATA_DIR_HINTS) == set(DATA_DIR_ALTERNATIVES)  # every alternative the CLI gives is run below
    commands = {name for name, _ in typer_commands(cli)}
    assert set(DATA_DIR_ALTERNATIVES) <= commands  # and names a real command
    data, docs = tmp_path / "data", tmp_path / "docs"
    docs.mkdir()
    (docs / "one.txt").write_text("Granite is an igneous rock.")
    server = start_server(data)
    try:
        holder = f"the data dir {data} is in use by process {server.pid} (cairn serve?)"
        for name, (args, hint) in HELD_DATA_DIR_HINTS.items():
            argv = [a.format(docs=docs, port=_free_port()) for a in args]
            assert one_line_error(cairn(*argv, data_dir=data)) == f"{holder}; {hint}", name
        r = cairn("ingest", str(docs), "-c", "rocks", "--lexical-only", data_dir=data)
        assert one_line_error(r) == f"{holder}; {HELD_DATA_DIR_HINTS['ingest'][1]}"
        listed = cairn("workspaces", "list", data_dir=data)  # SQL only: fine beside the server
        assert listed.returncode == 0, listed.stderr
    finally:
        server.terminate()
        server.wait(timeout=30)
    r = cairn("ingest", str(docs), "-c", "rocks", "--lexical-only", data_dir=data)  # the lock died with it
    assert r.returncode == 0 and json.loads(r.stdout)["created"] == 1, r.stderr


def typer_commands(app) -> list[tuple[str, object]]:
    """Every leaf command of a Typer app as ``(path below cairn, click command)``."""
    import typer

    def walk(cmd, prefix: str):
        if hasattr(cmd, "commands"):  # a group (typer's own click)
            for name, sub in cmd.commands.items():
                yield from walk(sub, f"{prefix} {name}".strip())
        else:
            yield prefix, cmd

    return list(walk(typer.main.get_command(app), ""))


@pytest.mark.slow  # starts a Python process
def test_an_embedded_engine_held_by_another_program_is_one_line(tmp_path):
    """A process that opened the edge shard without Cairn's lock: the engine's WouldBlock, translated."""
    data, docs = tmp_path / "data", tmp_path / "docs"
    docs.mkdir()
    (docs / "one.txt").write_text("Granite is an igneous rock.")
    hold = (
        "import sys, time; from cairn.retrieval.vectors import open_vector_index\n"
        "i = open_vector_index(path=sys.argv[1], collection='cairn_passages', dim=384)\n"
        "print('held', flush=True); time.sleep(120)"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", hold, str(data / "qdrant")], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        r = cairn("ingest", str(docs), "-c", "rocks", data_dir=data)
        assert one_line_error(r) == (
            f"the data dir {data} is in use by another process (cairn serve?); "
            "send the files to it instead (`cairn ingest PATH --server URL`), or stop it"
        )
    finally:
        holder.kill()
        holder.wait(timeout=30)
        holder.stdout.close()


READ_ONLY = [
    ["workspaces", "list"],
    ["members", "list"],
    ["members", "set-role", "m_x", "--role", "viewer"],
    ["credentials", "list"],
    ["credentials", "revoke", "c_x"],
    ["credentials", "create", "--creator", "m_x"],
    ["ontology", "list"],
    ["memory", "purge"],
    ["reindex"],
    ["reindex", "--lexical-only"],
]


def test_read_only_commands_refuse_a_missing_store_and_create_nothing(tmp_path):
    typo = tmp_path / "cairn-dta"
    for args in READ_ONLY:
        assert one_line_error(cairn(*args, data_dir=typo)) == (
            f"no Cairn data in {typo}: run `cairn ingest` or `cairn serve` first, or check --data-dir"
        ), args
        assert not typo.exists(), args
    created = cairn("workspaces", "create", "team", data_dir=typo)  # creating commands still create
    assert created.returncode == 0 and json.loads(created.stdout)["name"] == "team", created.stderr
    listed = cairn("workspaces", "list", data_dir=typo)
    assert [json.loads(line)["name"] for line in listed.stdout.splitlines()] == ["team"]


def test_a_bad_setting_is_one_line_and_exit_2_for_every_command(tmp_path):
    data = tmp_path / "data"
    for env, says in (
        ({"CAIRN_CORS_ORIGINS": '["http://localhost:3000"'}, "invalid CAIRN_CORS_ORIGINS="),
        ({"CAIRN_CHUNK_MAX_TOKENS": "9"}, "invalid CAIRN_CHUNK_MAX_TOKENS='9'"),
        ({"CAIRN_VECTOR_BACKEND": "client"}, "invalid CAIRN_VECTOR_BACKEND='client'"),
    ):
        for args in (
            ["serve"],
            ["ingest", str(tmp_path), "-c", "x"],
            ["workspaces", "list"],
            ["members", "add", "a"],
            ["migrate"],
            ["demo", "--no-serve"],
            ["ontology", "list"],
        ):
            assert one_line_error(cairn(*args, data_dir=data, env=env)).startswith(says), (env, args)
    assert not data.exists()
    ok = cairn(
        "workspaces",
        "create",
        "w",
        data_dir=data,
        env={"CAIRN_CORS_ORIGINS": "http://localhost:3000,https://ui.example"},
    )  # a comma list is fine
    assert ok.returncode == 0, ok.stderr


@pytest.mark.slow  # starts a Python process
def test_output_does_not_depend_on_terminal_width(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "one.txt").write_text("Granite is an igneous rock.")
    (docs / "scan.txt").write_bytes(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    seen = {}
    for columns in ("20", "300"):
        data = tmp_path / f"data{columns}"
        env = {"COLUMNS": columns}
        missing = one_line_error(
            cairn_process(
                "ingest", str(tmp_path / "no-such-folder-with-a-long-name"), "-c", "rocks", data_dir=data, env=env
            )
        )
        usage = cairn_process("ingest", str(docs), data_dir=data, env=env)
        assert usage.returncode == 2 and "Error: Missing option '--collection' / '-c'." in usage.stderr.splitlines()
        r = cairn_process("ingest", str(docs), "-c", "rocks", "--lexical-only", data_dir=data, env=env)
        assert r.returncode == 0, r.stderr
        skipped_line = [line for line in r.stderr.splitlines() if line.startswith("skipped ")]
        seen[columns] = (missing, json.loads(r.stdout)["created"], skipped_line)
    assert (
        seen["20"]
        == seen["300"]
        == (
            f"{tmp_path / 'no-such-folder-with-a-long-name'} does not exist",
            1,
            ["skipped scan.txt: not text: a PDF file (application/pdf)"],
        )
    )


@pytest.mark.slow  # starts a Python process
def test_version():
    from importlib.metadata import version

    r = cairn_process("--version", data_dir=None)  # the entry point's exit code and output
    assert r.returncode == 0 and r.stdout == f"cairn {version('cairn')}\n", r.stderr
    for flag in ("--version", "-V"):
        r = cairn(flag, data_dir=None)
        assert r.returncode == 0 and r.stdout == f"cairn {version('cairn')}\n", r.stderr


def test_folder_ingest_reports_every_skipped_file(tmp_path):
    docs, data = tmp_path / "docs", tmp_path / "data"
    docs.mkdir()
    (docs / "notes.md").write_text("# Basalt\n\nBasalt forms from lava.")
    (docs / "paper.txt").write_bytes(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj")  # a PDF renamed .txt
    (docs / "photo.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    (docs / "slides.pptx").write_bytes(b"PK\x03\x04")
    r = cairn("ingest", str(docs), "-c", "geo", "--lexical-only", data_dir=data)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["created"] == 1 and report["newPassages"] == 1
    assert report["skipped"] == [
        {"path": "paper.txt", "reason": "not text: a PDF file (application/pdf)"},
        {"path": "photo.md", "reason": "not text: a PNG file (image/png)"},
        {
            "path": "slides.pptx",
            "reason": "unsupported type .pptx; supported: .txt .md .markdown .html .htm .jsonl .csv (optionally .gz), .pdf .docx",
        },
    ]
    assert [line for line in r.stderr.splitlines() if line.startswith("skipped ")] == [
        f"skipped {s['path']}: {s['reason']}" for s in report["skipped"]
    ]
    r = cairn("ingest", str(docs / "paper.txt"), "-c", "geo", data_dir=data)
    assert one_line_error(r) == "paper.txt: not text: a PDF file (application/pdf)"


def test_a_mistyped_workspace_or_port_is_refused(tmp_path):
    docs, data = tmp_path / "docs", tmp_path / "data"
    docs.mkdir()
    (docs / "a.txt").write_text("Granite is an igneous rock.")
    r = cairn("ingest", str(docs), "--collection", "rocks", "--lexical-only", data_dir=data)
    assert r.returncode == 0, r.stderr  # the implicit 'default' workspace is made on first use
    # a typo made a new tenant silently
    r = cairn("ingest", str(docs), "--collection", "rocks", "--lexical-only", "--workspace", "defualt", data_dir=data)
    assert one_line_error(r) == "no workspace called 'defualt'; create it with `cairn workspaces create defualt`"
    spaces = [json.loads(line)["name"] for line in cairn("workspaces", "list", data_dir=data).stdout.splitlines()]
    assert spaces == ["default"]
    # --port 99999 printed a URL and hung without listening
    r = cairn("serve", "--port", "99999", data_dir=data)
    assert r.returncode == 2 and "--port" in r.stderr and "65535" in r.stderr


def test_documents_list_pages_ingested_files_by_relative_path(tmp_path):
    docs, data = tmp_path / "docs", tmp_path / "data"
    (docs / "sub").mkdir(parents=True)
    (docs / "b.txt").write_text("Basalt forms from lava.")
    (docs / "sub" / "a.md").write_text("# Andesite\n\nAndesite is intermediate.")
    (docs / "c.txt").write_text("Chalk is soft limestone.")
    assert cairn("ingest", str(docs), "-c", "rocks", "--lexical-only", data_dir=data).returncode == 0
    first = json.loads(cairn("documents", "list", "-c", "rocks", "--first", "2", data_dir=data).stdout)
    assert first["totalCount"] == 3 and first["hasNextPage"] is True
    assert [d["externalId"] for d in first["documents"]] == ["b.txt", "c.txt"]
    rest = json.loads(
        cairn("documents", "list", "-c", "rocks", "--first", "2", "--after", first["endCursor"], data_dir=data).stdout
    )
    assert [d["externalId"] for d in rest["documents"]] == ["sub/a.md"] and rest["hasNextPage"] is False
    assert rest["endCursor"] is None
    r = cairn("documents", "list", "-c", "rocks", "--first", "500", data_dir=data)
    assert "first must be 1–200" in one_line_error(r)
    r = cairn("documents", "list", "-c", "rocks", "--after", "garbage", data_dir=data)
    assert "after is not a cursor" in one_line_error(r)
    assert "no collection called 'nope'" in one_line_error(cairn("documents", "list", "-c", "nope", data_dir=data))


def test_reindex_rebuilds_the_temporal_statement_index(tmp_path):
    import sqlite3

    data, docs = tmp_path / "data", tmp_path / "docs"
    docs.mkdir()
    (docs / "acme.txt").write_text("On 1 July 2024, Acme Corp named John Roe as its new CFO.")
    (docs / "rock.txt").write_text("Granite is an igneous rock.")
    r = cairn("ingest", str(docs), "-c", "notes", "--lexical-only", data_dir=data)
    assert r.returncode == 0, r.stderr
    slot = data / "workers" / "0" / "whoosh"  # an index of `serve --workers N`'s first process
    slot.mkdir(parents=True)
    (slot / "stale").write_text("x")
    r = cairn("reindex", "--lexical-only", data_dir=data)
    assert r.returncode == 0, r.stderr
    said = " ".join(r.stderr.split())  # the console (progress bars, summary) writes to stderr
    assert "temporal index" in said, said  # its own progress bar, like the lexical one
    assert "reindexed 2 passages lexically, 0 as vectors, and the temporal statements of 2 versions" in said, said
    assert f"removed the worker processes' indexes ({data / 'workers'})" in said, said
    assert not (data / "workers").exists()  # each process rebuilds its own from the database at start
    con = sqlite3.connect(data / "cairn.db")
    try:
        rows = con.execute("select text, precision from temporal_statement").fetchall()
        marked = con.execute("select count(*) from temporal_indexed_version").fetchone()[0]
    finally:
        con.close()
    assert rows == [("On 1 July 2024, Acme Corp named John Roe as its new CFO.", "day")] and marked == 2


def test_the_demo_says_whether_its_urls_answer(capsys):
    """`demo --no-serve` prints the URLs and curl commands, and says that nothing serves them yet."""
    from cairn.app.cli.demo import DemoInfo, print_demo
    from cairn.app.corpus.ingest import IngestReport

    info = DemoInfo("ws", "mt", "ck", "python-docs", IngestReport(created=2, new_passages=5))
    print_demo(info, host="127.0.0.1", port=8123, serving=False)
    text = capsys.readouterr().out
    assert "http://127.0.0.1:8123/graphql" in text and "Serving; press Ctrl+C" not in text
    assert "Not serving (--no-serve)" in text and "cairn serve --port 8123" in text
    print_demo(info, host="127.0.0.1", port=8123, serving=True)
    text = capsys.readouterr().out
    assert text.rstrip().endswith("Serving; press Ctrl+C to stop.") and "Not serving" not in text
