"""Every data dir an earlier commit on main could make starts on this code (issue 32 item 14).

The fixtures (``tests/fixtures/datadirs/*.tar.gz``, listed with the commit that made each in
``fixtures.json`` and the README there) were made by the old code itself: three tiny
documents ingested and an owner added. Each test unpacks one and runs the real ``cairn``
processes as an installed user would (only the ``cairn`` package importable: an old Whoosh
schema pickled as top-level ``retrieval.analysis`` finds no such module): ``cairn serve``
migrates the database, rebuilds what is of an older layout from SQL with one line, becomes
ready and packs the fixture's documents on both legs; ``cairn reindex`` works on the same
dir and on an untouched copy.
"""

from __future__ import annotations

import json
import sqlite3
import tarfile
from pathlib import Path

import pytest

from cairn.app.core.migrate import upgrade_database
from tests.db.cli_processes import Server, cairn

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "datadirs"
CATALOGUE = json.loads((FIXTURES / "fixtures.json").read_text(encoding="utf-8"))

PACK = """query($i: ContextPackInput!) { contextPack(input: $i) {
  complete incompleteReasons items { externalId ranks { lexical dense } } } }"""

TASKS = [  # task -> the fixture document that must head its HYBRID pack (found by both legs)
    ("an active volcano in Sicily erupting lava", "volcano.txt"),
    ("igneous rock made of quartz and feldspar", "granite.md"),
    ("東京タワーの高さ", "tower-ja.txt"),
]


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


@pytest.mark.model
@pytest.mark.parametrize("fixture", CATALOGUE, ids=[f["name"] for f in CATALOGUE])
def test_serve_starts_and_packs_an_old_data_dir_then_reindex_works(fixture, tmp_path, head_schema):
    data = unpack(fixture["name"], tmp_path)
    server = Server(tmp_path, data, **fixture.get("env", {}))
    try:
        ready = server.wait_ready()
        for task, expected in TASKS:
            pack = server.graphql(PACK, {"i": {"task": task, "retrieval": "HYBRID"}}, fixture["token"])["contextPack"]
            top = pack["items"][0]
            assert top["externalId"] == expected, (task, pack)
            assert top["ranks"]["lexical"] == 1 and top["ranks"]["dense"] == 1, (task, pack)
    finally:
        log = server.stop()
    assert "Traceback" not in log, log
    for line in fixture["startLines"]:  # the one line saying which index was rebuilt and why
        assert sum(line in row for row in log.splitlines()) == 1, (line, log)
    if not fixture["startLines"]:
        assert "re-created" not in log and "lacks the tables" not in log, log  # today's layout: kept as is
    assert ready["ready"] is True
    assert schema_of(data / "cairn.db") == head_schema  # migrated: every table and column of head

    r = cairn(tmp_path, "reindex", "--data-dir", str(data), **fixture.get("env", {}))
    assert r.returncode == 0, r.stderr
    assert "reindexed 3 passages lexically, 3 as vectors" in " ".join(r.stderr.split()), r.stderr


@pytest.mark.parametrize("fixture", CATALOGUE, ids=[f["name"] for f in CATALOGUE])
def test_reindex_works_on_an_untouched_old_data_dir(fixture, tmp_path, head_schema):
    data = unpack(fixture["name"], tmp_path)
    r = cairn(tmp_path, "reindex", "--lexical-only", "--data-dir", str(data), **fixture.get("env", {}))
    assert r.returncode == 0, r.stderr
    said = " ".join(r.stderr.split())
    assert "Traceback" not in r.stderr and "Aborted" not in r.stderr, r.stderr
    assert "reindexed 3 passages lexically, 0 as vectors, and the temporal statements of 3 versions" in said, said
    assert schema_of(data / "cairn.db") == head_schema
