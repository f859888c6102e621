"""A PostgreSQL cluster of a test's own (``initdb -A trust`` + ``pg_ctl`` under ``/tmp``, on a free
port, run as the ``postgres`` user when the tests run as root: initdb refuses root) — never the
machine's 5432.

Used where the shared server cannot do: the outage tests stop and start it, and the change-log
tests need a cluster where no other test's transaction is open (the log's read horizon is
server-wide on PostgreSQL: any open transaction of a concurrent test file holds a follower's
cursor back, which made those tests fail under ``pytest -n 2``).
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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


@contextlib.contextmanager
def private_postgres() -> Iterator[OwnPostgres]:
    """A started :class:`OwnPostgres` on a free port; stopped and removed on exit.

    Skips with the reason when no ``initdb``/``pg_ctl`` is installed, fails instead with
    ``CAIRN_REQUIRE_POSTGRES=1`` (CI)."""
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
