"""A damaged or missing derived index (issue 32 item 15), through the ``cairn`` command.

Each case damages one index of a data dir made by ``cairn ingest`` (Whoosh: a segment file
truncated, overwritten in the middle, deleted; the table of contents truncated or garbage;
Qdrant: the edge shard's config, WAL or segment garbage, qdrant-client local mode's storage
garbage). Then every command that opens the indexes stops with one line naming the index and
``cairn reindex --data-dir …`` (``cairn serve`` with uvicorn's start-up failure code 3, the
others with 2), nothing changed; ``cairn reindex`` rebuilds it from SQL, after which the
indexes open again. A deleted index folder is no damage: it is rebuilt at start-up.

``ingest`` and ``reindex`` run in this process (:func:`tests.db.cli_in_process.run_cli`: what
they print and return is the subject, and a process of their own would import torch and the
model again, ~13 s of CPU each); ``cairn serve`` runs as the real process whose start-up
failure code is asserted.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.db.cli_in_process import run_cli, without_cairn_settings
from tests.db.cli_processes import cli_env, free_port

pytestmark = pytest.mark.model  # ingest and reindex load the embedding model

DOCS = {
    "volcano.txt": "Mount Etna is an active stratovolcano on the east coast of Sicily.",
    "granite.md": "Granite is a coarse-grained igneous rock made mostly of quartz and feldspar.",
    "tower-ja.txt": "東京タワーは東京都港区芝公園にある電波塔です。",
}


def _segment(data: Path) -> Path:
    return next((data / "whoosh").glob("*.seg"))


def _toc(data: Path) -> Path:
    return next((data / "whoosh").glob("*.toc"))


def _overwrite(path: Path, at: float, size: int = 64) -> None:
    raw = bytearray(path.read_bytes())
    start = min(int(len(raw) * at), max(len(raw) - size, 0))
    raw[start : start + size] = os.urandom(size)
    path.write_bytes(bytes(raw))


def _truncate(path: Path, fraction: float) -> None:
    os.truncate(path, int(path.stat().st_size * fraction))


def _edge(data: Path) -> Path:
    return data / "qdrant" / "cairn_passages"


def _every_file(folder: Path, damage) -> None:
    for f in folder.rglob("*"):
        if f.is_file() and f.stat().st_size:
            damage(f)


WHOOSH = "BM25 index"
QDRANT = "vector store"
CASES = {  # name -> (backend, damage, which index must be named)
    "segment-truncated": ("edge", lambda d: _truncate(_segment(d), 0.5), WHOOSH),
    "segment-garbage-in-the-middle": ("edge", lambda d: _overwrite(_segment(d), 0.5), WHOOSH),
    "segment-deleted": ("edge", lambda d: _segment(d).unlink(), WHOOSH),
    "toc-truncated": ("edge", lambda d: _truncate(_toc(d), 0.5), WHOOSH),
    "toc-garbage": ("edge", lambda d: _overwrite(_toc(d), 0.3), WHOOSH),
    "edge-config-garbage": ("edge", lambda d: (_edge(d) / "edge_config.json").write_text("{oops"), QDRANT),
    "edge-wal-garbage": ("edge", lambda d: _every_file(_edge(d) / "wal", lambda f: _overwrite(f, 0.0)), QDRANT),
    "edge-segment-garbage": (
        "edge",
        lambda d: _every_file(_edge(d) / "segments", lambda f: _overwrite(f, 0.0)),
        QDRANT,
    ),
    "local-storage-garbage": (
        "local",
        lambda d: _every_file(d / "qdrant" / "collection", lambda f: _overwrite(f, 0.0, 4096)),
        QDRANT,
    ),
}


def cairn(tmp: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    """``cairn ARGS`` in this process, in ``tmp``, with only the ``CAIRN_*`` settings ``env``."""
    return run_cli(*args, env=without_cairn_settings(**env), cwd=tmp)


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> dict[str, Path]:
    """A data dir per vector backend holding :data:`DOCS` (both legs indexed)."""
    tmp = tmp_path_factory.mktemp("stores")
    docs = tmp / "docs"
    docs.mkdir()
    for name, text in DOCS.items():
        (docs / name).write_text(text, encoding="utf-8")
    made = {}
    for backend in ("edge", "local"):
        data = tmp / backend
        r = cairn(tmp, "ingest", str(docs), "-c", "notes", "--data-dir", str(data), CAIRN_VECTOR_BACKEND=backend)
        assert r.returncode == 0, r.stderr
        made[backend] = data
    return {**made, "docs": docs}


def _copy(stores: dict[str, Path], backend: str, tmp: Path) -> Path:
    data = tmp / "data"
    shutil.copytree(stores[backend], data, symlinks=True)
    return data


def _one_line(r: subprocess.CompletedProcess, code: int) -> str:
    lines = [line for line in r.stderr.splitlines() if line.startswith("error: ")]
    assert r.returncode == code and len(lines) == 1, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr and "Aborted" not in r.stderr, r.stderr
    return lines[0]


@pytest.mark.parametrize("case", CASES)
def test_a_damaged_index_is_named_in_one_line_and_reindex_rebuilds_it(case, stores, tmp_path):
    backend, damage, what = CASES[case]
    data = _copy(stores, backend, tmp_path)
    damage(data)
    env = {"CAIRN_VECTOR_BACKEND": backend}
    folder = data / "whoosh" if what == WHOOSH else (_edge(data) if backend == "edge" else data / "qdrant")

    r = cairn(tmp_path, "ingest", str(stores["docs"]), "-c", "notes", "--data-dir", str(data), **env)
    line = _one_line(r, 2)
    assert line.startswith(f"error: the {what} at {folder} cannot be read ("), line
    assert line.endswith(f"rebuild it from SQL with `cairn reindex --data-dir {data}` (the database is not affected)")

    r = cairn(tmp_path, "reindex", "--data-dir", str(data), **env)
    assert r.returncode == 0, r.stderr
    said = " ".join(r.stderr.split())
    assert f"the {what} at {folder} cannot be read (" in said and "it was re-created empty" in said, said
    assert "reindexed 3 passages lexically, 3 as vectors" in said, said

    r = cairn(tmp_path, "ingest", str(stores["docs"]), "-c", "notes", "--data-dir", str(data), **env)
    assert r.returncode == 0, r.stderr  # opens again; the three documents are unchanged


@pytest.mark.slow  # a `cairn serve` process
def test_serve_on_a_truncated_segment_exits_3_with_one_line(stores, tmp_path):
    data = _copy(stores, "edge", tmp_path)
    _truncate(_segment(data), 0.5)
    r = subprocess.run(
        [sys.executable, "-m", "cairn.app.cli", "serve", "--port", str(free_port()), "--data-dir", str(data)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
        env=cli_env(tmp_path, CAIRN_EMBEDDER="none"),
    )
    line = _one_line(r, 3)
    assert line.startswith(f"error: cannot start: the BM25 index at {data / 'whoosh'} cannot be read ("), line
    assert line.endswith(f"`cairn reindex --data-dir {data}` (the database is not affected)"), line


@pytest.mark.slow  # a `cairn serve` process
def test_serve_on_a_damaged_vector_store_exits_3_with_one_line(stores, tmp_path):
    data = _copy(stores, "edge", tmp_path)
    (_edge(data) / "edge_config.json").write_text("{oops")
    r = subprocess.run(
        [sys.executable, "-m", "cairn.app.cli", "serve", "--port", str(free_port()), "--data-dir", str(data)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
        env=cli_env(tmp_path),
    )
    line = _one_line(r, 3)
    assert line.startswith(f"error: cannot start: the vector store at {_edge(data)} cannot be read ("), line


@pytest.mark.parametrize("folder", ["whoosh", "qdrant"])
def test_a_deleted_index_folder_is_rebuilt_at_start_up(folder, stores, tmp_path):
    data = _copy(stores, "edge", tmp_path)
    shutil.rmtree(data / folder)  # index_state.json still says every change was applied
    r = cairn(tmp_path, "ingest", str(stores["docs"]), "-c", "notes", "--data-dir", str(data))
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    indexed = report["lexicalIndexed"] if folder == "whoosh" else report["vectorIndexed"]
    assert indexed == 3, report  # caught up from SQL although nothing new was ingested
