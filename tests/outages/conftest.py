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

import contextlib
import glob
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.graphql.conftest import _free_port
from tests.workers.test_workers import Worker

VOLUME_MIB = 48
"""Size of the test volume: the data dir of an empty server (SQLite, Whoosh, the Qdrant Edge
shard) plus room to ingest a few documents."""


def _missing(reason: str) -> None:
    if os.environ.get("CAIRN_REQUIRE_POSTGRES") == "1":
        pytest.fail(f"CAIRN_REQUIRE_POSTGRES=1 but {reason}")
    pytest.skip(reason)


def _pg_bin(name: str) -> str | None:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return found[-1] if found else shutil.which(name)


@dataclass
class OwnPostgres:
    """A PostgreSQL cluster of the test's own under ``/tmp``."""

    folder: Path
    port: int
    pg_ctl: str

    @property
    def url(self) -> str:
        """Its ``postgres`` database as an async SQLAlchemy URL (TCP on 127.0.0.1)."""
        return f"postgresql+asyncpg://postgres@127.0.0.1:{self.port}/postgres"

    def _ctl(self, *args: str) -> None:
        cmd = [self.pg_ctl, "-D", str(self.folder / "data"), *args]
        if os.geteuid() == 0:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        subprocess.run(cmd, check=True, capture_output=True, timeout=60)

    def start(self) -> None:
        """Start it and wait until it accepts connections."""
        self._ctl(
            "-o",
            f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1",
            "-l",
            str(self.folder / "log"),
            "-w",
            "start",
        )

    def stop(self) -> None:
        """Stop it (fast shutdown: open connections are ended, as when a server goes down)."""
        self._ctl("-m", "fast", "-w", "stop")


@pytest.fixture
def own_postgres() -> Iterator[OwnPostgres]:
    """A started :class:`OwnPostgres` on a free port; stopped and removed after the test."""
    initdb, pg_ctl = _pg_bin("initdb"), _pg_bin("pg_ctl")
    if initdb is None or pg_ctl is None:
        _missing("no initdb/pg_ctl installed (PostgreSQL server binaries) to start a PostgreSQL of the test's own")
    as_root = os.geteuid() == 0
    if as_root:
        try:
            owner = pwd.getpwnam("postgres")
        except KeyError:
            _missing("running as root and there is no 'postgres' user to run initdb as")
    folder = Path(tempfile.mkdtemp(prefix="cairn-pg-", dir="/tmp"))
    if as_root:
        os.chown(folder, owner.pw_uid, owner.pw_gid)
    cmd = [initdb, "-A", "trust", "-U", "postgres", "-D", str(folder / "data")]
    if as_root:
        cmd = ["runuser", "-u", "postgres", "--", *cmd]
    subprocess.run(cmd, check=True, capture_output=True, timeout=120)
    pg = OwnPostgres(folder, _free_port(), pg_ctl)
    pg.start()
    try:
        yield pg
    finally:
        with contextlib.suppress(Exception):
            pg._ctl("-m", "immediate", "stop")
        shutil.rmtree(folder, ignore_errors=True)


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
