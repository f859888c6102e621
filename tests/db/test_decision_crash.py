"""A decision whose server is killed (``kill -9``) mid-judge reads FAILED after its lease, on a
real ``cairn serve`` (issue 32, item 18).

On SQLite only: what the database does here (a lapsed lease read as FAILED, the key of a lapsed
decision run again, the start-up sweep) is the same SQL that tests/db/test_decision_lease.py runs
on SQLite and PostgreSQL; what this test adds is the process killed mid-call, which does not
depend on the database. The PostgreSQL run of it cost two more ``cairn serve`` starts (23 s at
load 16 on 2 cores).

The judge is the OpenAI-compatible one pointed at a loopback socket that accepts and never
answers, so the decision is RUNNING for as long as the server lives.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from datetime import datetime
from pathlib import Path

import httpx
import pytest

from tests import local_http
from tests.db.test_cli import ROOT, cairn

pytestmark = pytest.mark.slow  # `cairn serve` processes, one killed

LEASE_SECONDS = 6
BODY = json.dumps(
    {
        "state": {"ticket": "the customer says the fix works"},
        "questions": [
            {
                "type": "choice",
                "name": "resolved",
                "instructions": "Resolved?",
                "choices": [{"value": True}, {"value": False}],
            }
        ],
    }
).encode()


@pytest.fixture
def store(tmp_path):
    """``(data_dir, env)`` of an empty store (the data dir's SQLite file; module doc)."""
    return tmp_path / "data", {"CAIRN_EMBEDDER": "none", "CAIRN_DECISION_LEASE_SECONDS": str(LEASE_SECONDS)}


class SilentUpstream:
    """A loopback socket that accepts judge calls and never answers (``accepted`` counts them)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.conns: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                self.conns.append(self.sock.accept()[0])
            except OSError:
                return

    def close(self) -> None:
        self.sock.close()
        for c in self.conns:
            c.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(data: Path, env: dict[str, str]) -> tuple[subprocess.Popen, str]:
    """A real ``cairn serve`` on ``data`` with ``env``; returns it and its URL once /readyz says ready."""
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "cairn.app.cli", "serve", "--port", str(port), "--data-dir", str(data)],
        cwd=ROOT,
        env=dict(os.environ, **env),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(480):
        try:
            if local_http.get(f"{url}/readyz", timeout=2).json().get("ready"):
                return server, url
        except httpx.HTTPError:
            pass
        if server.poll() is not None:
            break
        time.sleep(0.25)
    server.kill()
    server.wait(timeout=30)
    raise AssertionError("cairn serve did not become ready")


def decide(url: str, token: str, key: str) -> httpx.Response:
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}", "Idempotency-Key": key}
    return local_http.post(f"{url}/api/v1/decisions", content=BODY, headers=headers, timeout=120)


def test_a_decision_of_a_killed_server_reads_failed_after_its_lease_and_its_key_runs_again(store):
    data, env = store
    owner = json.loads(cairn("members", "add", "olga", "--role", "owner", data_dir=data, env=env).stdout)
    made = cairn(
        "credentials", "create", "--creator", owner["memberId"], "--scope", "decisions:run", data_dir=data, env=env
    )
    token = json.loads(made.stdout)["token"]
    upstream = SilentUpstream()
    judge = {"CAIRN_JUDGE": "openai", "CAIRN_JUDGE_TIMEOUT_SECONDS": "300"}
    first, url = serve(data, {**env, **judge, "CAIRN_JUDGE_URL": f"http://127.0.0.1:{upstream.port}/v1"})
    second = None
    try:
        # the first request hangs in the judge call; it dies with the server
        threading.Thread(target=lambda: _swallow(decide, url, token, "k-crash"), daemon=True).start()
        for _ in range(400):
            if upstream.conns:
                break
            time.sleep(0.05)
        assert upstream.conns, "the judge was never called"
        busy = decide(url, token, "k-crash")  # same key, same body, still running
        assert busy.status_code == 409 and busy.json()["error"]["code"] == "decision_in_progress", busy.text
        decision_id = busy.json()["error"]["decision_id"]
        auth = {"Authorization": f"Bearer {token}"}
        assert local_http.get(f"{url}/api/v1/decisions/{decision_id}", headers=auth).json()["status"] == "running"

        os.kill(first.pid, signal.SIGKILL)
        first.wait(timeout=30)
        # the next server's judge is unreachable: a decision that runs again fails at once (503)
        dead_judge = {**judge, "CAIRN_JUDGE_URL": f"http://127.0.0.1:{_free_port()}/v1"}
        second, url = serve(data, {**env, **dead_judge})
        read: dict = {}
        for _ in range(int((LEASE_SECONDS + 60) / 0.25)):  # the lease runs out within LEASE_SECONDS
            r = local_http.get(f"{url}/api/v1/decisions/{decision_id}", headers=auth)
            assert r.status_code == 200, r.text
            read = r.json()
            if read["status"] != "running":
                break
            time.sleep(0.25)
        assert read["status"] == "failed", read
        assert read["error"]["code"] == "decision_internal_error"
        assert "process running this decision stopped" in read["error"]["message"]
        assert read["completed_at"] is not None
        # GraphQL reads the same record
        gql = local_http.post(
            f"{url}/graphql",
            json={
                "query": "query($i:ID!){decision(id:$i){status error{code message} completedAt}}",
                "variables": {"i": decision_id},
            },
            headers=auth,
        ).json()["data"]["decision"]
        assert (gql["status"], gql["error"]["code"]) == ("FAILED", "decision_internal_error")
        assert _instant(gql["completedAt"]) == _instant(read["completed_at"])  # GraphQL: +00:00, wire: Z
        # the crashed request never had a response: a retry with its key runs again (a new decision)
        again = decide(url, token, "k-crash")
        assert again.status_code == 503 and again.json()["error"]["code"] == "decision_upstream_unavailable", again.text
        assert again.json()["error"]["decision_id"] != decision_id
        after = local_http.get(f"{url}/api/v1/decisions/{decision_id}", headers=auth).json()
        assert (after["status"], after["error"]["code"]) == ("failed", "decision_internal_error")
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.terminate()
                proc.wait(timeout=30)
        upstream.close()


def _instant(iso: str) -> datetime:
    return datetime.fromisoformat(iso.replace("Z", "+00:00"))


def _swallow(fn, *args) -> None:
    try:
        fn(*args)
    except httpx.HTTPError:  # the server was killed under it
        pass
