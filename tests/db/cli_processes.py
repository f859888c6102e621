"""Running ``cairn`` as an installed user runs it: real processes, with only the ``cairn``
package importable (no clone on ``sys.path``, so a pickled top-level ``retrieval`` module is
not found, as in a wheel install), in a working directory outside the clone."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests import local_http

ROOT = Path(__file__).resolve().parents[2]


def package_only_path(tmp: Path) -> Path:
    """A folder holding only a ``cairn`` link to this clone's package (the PYTHONPATH to use)."""
    folder = tmp / "site"
    folder.mkdir(exist_ok=True)
    link = folder / "cairn"
    if not link.exists():
        link.symlink_to(ROOT / "cairn", target_is_directory=True)
    return folder


def cli_env(tmp: Path, **extra: str) -> dict[str, str]:
    """The environment of a ``cairn`` process: this clone's package only, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_")}
    env["PYTHONPATH"] = str(package_only_path(tmp))
    env.update(extra)
    return env


def cairn(tmp: Path, *args: str, timeout: int = 600, **extra: str) -> subprocess.CompletedProcess:
    """Run ``python -m cairn.app.cli ARGS`` in ``tmp`` (:func:`cli_env`) and wait for it."""
    return subprocess.run(
        [sys.executable, "-m", "cairn.app.cli", *args],
        capture_output=True,
        text=True,
        cwd=tmp,
        timeout=timeout,
        env=cli_env(tmp, **extra),
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A ``cairn serve`` process on a data dir; :meth:`stop` ends it and returns its stderr."""

    def __init__(self, tmp: Path, data: Path, **extra: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._log = (tmp / f"serve-{self.port}.log").open("w+")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "cairn.app.cli", "serve", "--port", str(self.port), "--data-dir", str(data)],
            cwd=tmp,
            env=cli_env(tmp, **extra),
            stdout=subprocess.DEVNULL,
            stderr=self._log,
        )

    def wait_ready(self, seconds: float = 300) -> dict:
        """``/readyz`` once ready; AssertionError (with the log) when the process ends first."""
        deadline = time.monotonic() + seconds
        ready: dict = {}
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"cairn serve ended ({self.process.returncode}): {self.log()}")
            try:
                ready = local_http.get(f"{self.url}/readyz", timeout=2).json()
                if ready.get("ready"):
                    return ready
            except httpx.HTTPError:
                pass
            time.sleep(0.25)
        raise AssertionError(f"cairn serve not ready after {seconds} s: {ready} {self.log()}")

    def graphql(self, query: str, variables: dict, token: str) -> dict:
        r = local_http.post(
            f"{self.url}/graphql",
            json={"query": query, "variables": variables},
            headers={"Authorization": f"Bearer {token}"},
            timeout=120,
        )
        body = r.json()
        assert r.status_code == 200 and "errors" not in body, body
        return body["data"]

    def log(self) -> str:
        self._log.flush()
        self._log.seek(0)
        return self._log.read()

    def stop(self) -> str:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=60)
        text = self.log()
        self._log.close()
        return text
