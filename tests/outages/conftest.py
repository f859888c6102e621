"""Fixtures for the outage tests: a PostgreSQL of the test's own (started and stopped at will, on
a port of its own — never the machine's 5432), a small tmpfs volume, and a ``cairn serve``
subprocess on them.

- :func:`own_postgres`: ``initdb -A trust`` + ``pg_ctl`` under ``/tmp`` as the ``postgres`` user
  (initdb refuses root); skips with the reason when no ``initdb`` is installed, fails instead
  when ``CAIRN_REQUIRE_POSTGRES=1``.
- :func:`small_volume`: a ``tmpfs`` of 48 MiB mounted for the test and unmounted after it; skips
  with the reason when mounting is not permitted (not root, no ``CAP_SYS_ADMIN``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.graphql.conftest import _free_port
from tests.private_postgres import OwnPostgres, private_postgres
from tests.workers.test_workers import Worker

VOLUME_MIB = 48
"""Size of the test volume: the data dir of an empty server (SQLite, Whoosh, the Qdrant Edge
shard) plus room to ingest a few documents."""


@pytest.fixture
def own_postgres() -> Iterator[OwnPostgres]:
    """A started :class:`tests.private_postgres.OwnPostgres` on a free port; stopped and removed after the test."""
    with private_postgres() as pg:
        yield pg


@pytest.fixture
def small_volume(tmp_path: Path) -> Iterator[Path]:
    """A :data:`VOLUME_MIB` MiB tmpfs mounted at ``tmp_path/vol`` for the test."""
    mount = tmp_path / "vol"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={VOLUME_MIB}m", "tmpfs", str(mount)], capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs volume (needs root): {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False, capture_output=True)


def serve(name: str, data_dir: Path, **env: str) -> Worker:
    """Start ``cairn serve`` on ``data_dir`` and a free port with ``CAIRN_*`` overrides (returns at
    once; :func:`tests.workers.test_workers.wait_ready`). Its output goes to
    ``data_dir.parent / f"{name}.log"`` (off the data dir's volume)."""
    port = _free_port()
    full_env = dict(os.environ, CAIRN_LOG_LEVEL="WARNING", CAIRN_CHUNK_MAX_TOKENS="200", **env)
    log = open(data_dir.parent / f"{name}.log", "ab")  # noqa: SIM115 - the process owns it
    proc = subprocess.Popen(
        [sys.executable, "-m", "cairn.app.cli", "serve", "--port", str(port), "--data-dir", str(data_dir)],
        cwd=ROOT,
        env=full_env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    return Worker(name, data_dir, port, proc, log)
