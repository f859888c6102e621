"""Every data dir an earlier commit on main could make starts on this code (issue 32 item 14).

The fixtures (``tests/fixtures/datadirs/*.tar.gz``, listed with the commit that made each in
``fixtures.json`` and the README there) were made by the old code itself: three tiny
documents ingested and an owner added. Each test unpacks one and runs the real ``cairn``
processes as an installed user would (only the ``cairn`` package importable: an old Whoosh
schema pickled as top-level ``retrieval.analysis`` finds no such module): ``cairn serve``
migrates the database, rebuilds what is of an older layout from SQL with one line, becomes
ready and packs the fixture's documents on both legs; ``cairn reindex`` works on the same
dir and on an untouched copy.

Each ``cairn serve`` is a process of its own (the command under test). The ``reindex`` runs after
them are one process for all fixtures (:data:`REINDEX_ALL`: the command run in turn on each data
dir, through typer's ``CliRunner``, with the same installed user's import path): a ``cairn
reindex`` process of its own per fixture spent ~13 s of CPU importing torch and loading the
model before it rebuilt three passages (2026-12-03, 2 cores).
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from cairn.app.core.migrate import upgrade_database
from tests.db.cli_processes import Server, cli_env

pytestmark = pytest.mark.slow  # `cairn serve` and `cairn reindex` processes

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "datadirs"
CATALOGUE = json.loads((FIXTURES / "fixtures.json").read_text(encoding="utf-8"))

PACK = """query($i: ContextPackInput!) { contextPack(input: $i) {
  complete incompleteReasons items { externalId ranks { lexical dense } } } }"""

TASKS = [  # task -> the fixture document that must head its HYBRID pack (found by both legs)
    ("an active volcano in Sicily erupting lava", "volcano.txt"),
    ("igneous rock made of quartz and feldspar", "granite.md"),
    ("東京タワーの高さ", "tower-ja.txt"),
]


REINDEX_ALL = r"""
import json, sys, traceback
from typer.testing import CliRunner
from cairn.app.cli import cli

said = {}
for name, args, env in json.loads(sys.argv[1]):
    r = CliRunner().invoke(cli, args, env=env, prog_name="cairn")
    stderr = r.stderr
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        stderr += "".join(traceback.format_exception(r.exception))
    said[name] = [r.exit_code, stderr]
print(json.dumps(said))
"""


def reindex_all(tmp: Path, runs: list[tuple[str, list[str], dict[str, str]]]) -> dict[str, tuple[int, str]]:
    """Run ``cairn ARGS`` with the ``CAIRN_*`` settings ``env`` for each ``(name, args, env)`` of
    ``runs``, in turn, in one process of an installed user (:func:`tests.db.cli_processes.cli_env`,
    working directory ``tmp``). Returns name → (exit code, stderr)."""
    r = subprocess.run(
        [sys.executable, "-c", REINDEX_ALL, json.dumps(runs)],
        capture_output=True,
        text=True,
        cwd=tmp,
        timeout=1800,
        env=cli_env(tmp),
    )
    assert r.returncode == 0, r.stderr
    return {name: (code, stderr) for name, (code, stderr) in json.loads(r.stdout.splitlines()[-1]).items()}


def unpack(name: str, into: Path) -> Path:
    """Unpack the fixture ``name`` into ``into``; returns its data dir."""
    with tarfile.open(FIXTURES / f"{name}.tar.gz", "r:gz") as tar:
        tar.extractall(into, filter="data")
    return into / name


def schema_of(db: Path) -> dict[str, set[str]]:
    """Table -> column names of a SQLite database (Alembic's bookkeeping left out)."""
    con = sqlite3.connect(db)
    try:
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {
            t: {r[1] for r in con.execute(f'PRAGMA table_info("{t}")')}
            for t in tables
            if not t.startswith(("sqlite_", "_alembic_tmp"))
        }
    finally:
        con.close()


@pytest.fixture(scope="module")
def head_schema(tmp_path_factory) -> dict[str, set[str]]:
    """The schema of a new database at this version's head."""
    db = tmp_path_factory.mktemp("head") / "cairn.db"
    upgrade_database(f"sqlite+aiosqlite:///{db}")
    return schema_of(db)


@pytest.fixture(scope="module")
def served(tmp_path_factory, head_schema) -> dict[str, dict]:
    """Each fixture unpacked and served by ``cairn serve`` (a process each, in turn), then
    ``cairn reindex`` on every served dir (:func:`reindex_all`). Name → what happened:
    ``packs`` (task → pack), ``ready``, ``log``, ``schema``, ``error`` (why serving failed),
    ``reindex`` (exit code, stderr)."""
    tmp = tmp_path_factory.mktemp("served")
    out: dict[str, dict] = {}
    for fixture in CATALOGUE:
        name = fixture["name"]
        where = tmp / name
        where.mkdir()
        data = unpack(name, where)
        seen: dict = {"data": data, "packs": {}, "error": None}
        server = Server(where, data, **fixture.get("env", {}))
        try:
            seen["ready"] = server.wait_ready()
            for task, _expected in TASKS:
                query = {"i": {"task": task, "retrieval": "HYBRID"}}
                seen["packs"][task] = server.graphql(PACK, query, fixture["token"])["contextPack"]
        except AssertionError as exc:  # reported by this fixture's test; the others still run
            seen["error"] = str(exc)
        finally:
            seen["log"] = server.stop()
        seen["schema"] = schema_of(data / "cairn.db")
        out[name] = seen
    runs = [(f["name"], ["reindex", "--data-dir", str(out[f["name"]]["data"])], f.get("env", {})) for f in CATALOGUE]
    for name, said in reindex_all(tmp, runs).items():
        out[name]["reindex"] = said
    return out


@pytest.mark.model
@pytest.mark.parametrize("fixture", CATALOGUE, ids=[f["name"] for f in CATALOGUE])
def test_serve_starts_and_packs_an_old_data_dir_then_reindex_works(fixture, served, head_schema):
    seen = served[fixture["name"]]
    assert seen["error"] is None, seen["error"]
    ready, log = seen["ready"], seen["log"]
    for task, expected in TASKS:
        pack = seen["packs"][task]
        top = pack["items"][0]
        assert top["externalId"] == expected, (task, pack)
        assert top["ranks"]["lexical"] == 1 and top["ranks"]["dense"] == 1, (task, pack)
    assert "Traceback" not in log, log
    for line in fixture["startLines"]:  # the one line saying which index was rebuilt and why
        assert sum(line in row for row in log.splitlines()) == 1, (line, log)
    if not fixture["startLines"]:
        assert "re-created" not in log and "lacks the tables" not in log, log  # today's layout: kept as is
    assert ready["ready"] is True
    assert seen["schema"] == head_schema  # migrated: every table and column of head

    code, stderr = seen["reindex"]
    assert code == 0, stderr
    assert "reindexed 3 passages lexically, 3 as vectors" in " ".join(stderr.split()), stderr


@pytest.fixture(scope="module")
def untouched(tmp_path_factory) -> dict[str, dict]:
    """Each fixture unpacked, then ``cairn reindex --lexical-only`` on each (:func:`reindex_all`).
    Name → ``reindex`` (exit code, stderr) and ``schema`` afterwards."""
    tmp = tmp_path_factory.mktemp("untouched")
    dirs = {}
    for fixture in CATALOGUE:
        where = tmp / fixture["name"]
        where.mkdir()
        dirs[fixture["name"]] = unpack(fixture["name"], where)
    runs = [
        (f["name"], ["reindex", "--lexical-only", "--data-dir", str(dirs[f["name"]])], f.get("env", {}))
        for f in CATALOGUE
    ]
    said = reindex_all(tmp, runs)
    return {name: {"reindex": said[name], "schema": schema_of(data / "cairn.db")} for name, data in dirs.items()}


@pytest.mark.parametrize("fixture", CATALOGUE, ids=[f["name"] for f in CATALOGUE])
def test_reindex_works_on_an_untouched_old_data_dir(fixture, untouched, head_schema):
    code, stderr = untouched[fixture["name"]]["reindex"]
    assert code == 0, stderr
    said = " ".join(stderr.split())
    assert "Traceback" not in stderr and "Aborted" not in stderr, stderr
    assert "reindexed 3 passages lexically, 0 as vectors, and the temporal statements of 3 versions" in said, said
    assert untouched[fixture["name"]]["schema"] == head_schema
