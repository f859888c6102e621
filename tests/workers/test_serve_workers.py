"""``cairn serve --workers 2`` on the embedded default (SQLite, Whoosh, Qdrant Edge): one port,
two real processes, each with its own indexes under ``<data dir>/workers/<k>``.

Both processes answer (``/readyz`` names each: slot, pid); a document written through the port
reaches both processes' indexes (each one's change-log cursor passes the write) and every pack
afterwards, whichever process serves it; the data dir stays locked (a second ``serve`` and
``cairn ingest`` are refused); a worker killed with ``kill -9`` is replaced by uvicorn, and the
new process takes the freed slot, rebuilds its deleted indexes before it accepts a connection
(meanwhile every answer comes from the ready process), and serves the same packs; a parent
killed with ``kill -9`` takes its processes with it and frees the data dir. With metrics on, a
scrape of the port reports the calls of both processes (and of a process killed since), whichever
process takes it. Each process loads the embedding model (~10 s)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from cairn.app.core.migrate import upgrade_database
from tests import local_http
from tests.conftest import ROOT, drop_postgres_database, postgres_database
from tests.graphql.conftest import _bootstrap, _free_port
from tests.workers.test_workers import PACK_QUERY, TOPICS, gql

pytestmark = pytest.mark.slow  # `cairn serve` processes

LAG_BOUND_SECONDS = 10.0
"""A write through one process until the other's indexes have it: the poll interval (0.5 s)
plus applying the change (encoding on a busy 2-core machine)."""


def cli(data_dir: Path, *args: str, env: dict[str, str] | None = None, **kw) -> subprocess.Popen:
    """A ``cairn`` subprocess on ``data_dir`` (stdout and stderr piped unless given)."""
    kw.setdefault("stdout", subprocess.PIPE)
    kw.setdefault("stderr", subprocess.STDOUT)
    return subprocess.Popen(
        [sys.executable, "-m", "cairn.app.cli", *args, "--data-dir", str(data_dir)], cwd=ROOT, env=env, **kw
    )


def readyz(url: str) -> tuple[int, dict]:
    r = local_http.get(f"{url}/readyz", timeout=5)  # a new connection each call: either process may answer
    return r.status_code, r.json()


def ready_workers(url: str, proc: subprocess.Popen, want: int, timeout: float = 240) -> dict[int, int]:
    """Poll ``/readyz`` until ``want`` distinct ready processes answered; slot → pid."""
    seen: dict[int, int] = {}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and len(seen) < want:
        assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else proc.returncode
        try:
            status, body = readyz(url)
        except httpx.HTTPError:
            time.sleep(0.1)
            continue
        if status == 200:
            seen[body["worker"]["slot"]] = body["worker"]["pid"]
        time.sleep(0.02)
    assert len(seen) == want, f"ready processes seen: {seen}"
    return seen


def pack_ids(url: str, task: str, token: str, retrieval: str) -> list[str]:
    data = gql(url, PACK_QUERY, {"i": {"task": task, "retrieval": retrieval}}, token)
    return [item["externalId"] for item in data["contextPack"]["items"]]


def answer_correctly_until(url: str, token: str, done: Callable[[set[int]], bool], timeout: float) -> dict[int, dict]:
    """Ask ``/readyz`` and a HYBRID pack (the topics in turn, a new connection each) until
    ``done(pids that answered)``; every answer must be 200 and rank the topic's document first,
    whichever process gives it. Returns pid → its ``worker`` object."""
    seen: dict[int, dict] = {}
    deadline = time.monotonic() + timeout
    answers = 0
    while not done(set(seen)):
        assert time.monotonic() < deadline, f"not done after {timeout} s; answered: {seen}"
        try:
            status, body = readyz(url)
            ext, _title, text = TOPICS[answers % len(TOPICS)]
            first = pack_ids(url, text, token, "HYBRID")[0]
        except httpx.HTTPError:
            time.sleep(0.1)
            continue
        assert status == 200 and first == ext, (status, body, first, ext)
        answers += 1
        seen[body["worker"]["pid"]] = body["worker"]
        time.sleep(0.05)
    return seen


def listening_sockets(pid: int, port: int) -> set[int]:
    """Inodes of the TCP sockets in LISTEN state on ``port`` that process ``pid`` holds
    (``/proc/net/tcp`` and ``/proc/<pid>/fd``)."""
    listen = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[3] == "0A" and int(fields[1].split(":")[1], 16) == port:
            listen.add(int(fields[9]))
    held = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            held.add(int(target[8:-1]))
    return listen & held


def simultaneous_pids(port: int, n: int) -> set[int]:
    """Open ``n`` connections at once, then ask ``/readyz`` on each: the pids that answered."""
    import http.client

    conns = [http.client.HTTPConnection("127.0.0.1", port, timeout=30) for _ in range(n)]
    for c in conns:
        c.connect()
    pids = set()
    for c in conns:
        c.request("GET", "/readyz")
        pids.add(json.loads(c.getresponse().read())["worker"]["pid"])
        c.close()
    return pids


def scrapes_by_pid(port: int, n: int = 8) -> dict[int, dict[str, float]]:
    """Open ``n`` connections at once; on each ask ``/readyz`` (which process holds it) and then
    ``/metrics`` on the same keep-alive connection. Returns pid → {sample name: sum of its values
    over all label sets} for the ``cairn_*_total`` counters."""
    import http.client

    from prometheus_client.parser import text_string_to_metric_families

    conns = [http.client.HTTPConnection("127.0.0.1", port, timeout=30) for _ in range(n)]
    for c in conns:
        c.connect()
    scrapes: dict[int, dict[str, float]] = {}
    for c in conns:
        c.request("GET", "/readyz")
        pid = json.loads(c.getresponse().read())["worker"]["pid"]
        c.request("GET", "/metrics")
        response = c.getresponse()
        assert response.status == 200
        totals: dict[str, float] = {}
        for family in text_string_to_metric_families(response.read().decode()):
            for sample in family.samples:
                if sample.name.startswith("cairn_") and sample.name.endswith("_total"):
                    totals[sample.name] = totals.get(sample.name, 0.0) + sample.value
        scrapes[pid] = totals
        c.close()
    return scrapes


def cursor_seq(data_dir: Path, slot: int) -> int:
    path = data_dir / "workers" / str(slot) / "index_state.json"
    return json.loads(path.read_text())["seq"] if path.exists() else 0


@pytest.mark.timeout(900)  # several `cairn serve` processes, each loading the model: ~200 s at load 15
def test_serve_two_workers_on_the_embedded_default(tmp_path):
    data_dir = tmp_path / "data"
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    env = dict(
        os.environ,
        CAIRN_INDEX_POLL_SECONDS="0.5",
        CAIRN_LOG_LEVEL="WARNING",
        CAIRN_RATE_LIMIT_PACKS_PER_MINUTE="0",
        CAIRN_METRICS="true",
    )
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    log = open(tmp_path / "serve.log", "w+b")  # noqa: SIM115 - the process owns it
    (data_dir / "workers" / "metrics").mkdir(parents=True)
    (data_dir / "workers" / "metrics" / "counter_1.db").write_bytes(b"an earlier run's file")
    server = cli(data_dir, "serve", "--port", str(port), "--workers", "2", env=env, stdout=log)
    try:
        slots = ready_workers(url, server, 2)
        assert sorted(slots) == [0, 1] and len(set(slots.values())) == 2 and server.pid not in slots.values()
        assert not (data_dir / "workers" / "metrics" / "counter_1.db").exists()  # an earlier run's counts
        # each process listens on its own socket (SO_REUSEPORT), the parent on none, and 8
        # clients connecting at once reach both (with one shared socket, the process that woke
        # first took all 8 in ~40 % of tries; here all 8 on one has probability 1/128 per try)
        listening = {pid: listening_sockets(pid, port) for pid in slots.values()}
        assert [len(v) for v in listening.values()] == [1, 1] and len(set().union(*listening.values())) == 2
        assert listening_sockets(server.pid, port) == set()
        assert any(len(simultaneous_pids(port, 8)) == 2 for _try in range(3))
        # another serve on the port (any data dir) is refused, naming this one
        other = cli(tmp_path / "other", "serve", "--port", str(port), "--workers", "2", env=env)
        out = other.communicate(timeout=60)[0].decode()
        assert other.returncode == 2, out
        assert out.strip().splitlines()[-1] == (
            f"error: cannot listen on 127.0.0.1:{port}: another cairn serve (pid {server.pid}) uses this port"
        )
        _status, body = readyz(url)
        assert body["worker"]["of"] == 2
        assert body["worker"]["indexes"] == str((data_dir / "workers" / str(body["worker"]["slot"])).resolve())

        # the parent keeps the data dir: a second server and the CLI's ingest are refused
        second = cli(data_dir, "serve", "--port", str(_free_port()), "--workers", "2", env=env)
        out = second.communicate(timeout=60)[0].decode()
        assert second.returncode == 2 and f"in use by process {server.pid}" in out, out
        docs = tmp_path / "docs"
        docs.mkdir()
        (docs / "a.txt").write_text("anything")
        ingest = cli(data_dir, "ingest", str(docs), "--collection", "c", env=env)
        out = ingest.communicate(timeout=60)[0].decode()
        assert ingest.returncode == 2 and "in use" in out, out

        tokens, _ids = asyncio.run(_bootstrap(f"sqlite+aiosqlite:///{(data_dir / 'cairn.db').resolve()}"))
        owner = tokens["owner"]
        agent = gql(
            url,
            "mutation($i:CreateAgentCredentialInput!){createAgentCredential(input:$i){token}}",
            {"i": {"name": "agent", "scopes": ["context:read"], "expiresInDays": 30}},
            owner,
        )["createAgentCredential"]["token"]
        coll = gql(url, "mutation($n:String!){createCollection(name:$n){id}}", {"n": "earth"}, owner)[
            "createCollection"
        ]["id"]
        for ext, title, text in TOPICS:
            gql(
                url,
                "mutation($i:UpsertDocumentInput!){upsertDocument(input:$i){documentId}}",
                {"i": {"collectionId": coll, "externalId": ext, "title": title, "text": text}},
                owner,
            )
        log_seq = _last_change_seq(data_dir)
        assert log_seq >= len(TOPICS)
        deadline = time.monotonic() + LAG_BOUND_SECONDS
        while time.monotonic() < deadline and min(cursor_seq(data_dir, k) for k in (0, 1)) < log_seq:
            time.sleep(0.1)
        assert [cursor_seq(data_dir, k) >= log_seq for k in (0, 1)] == [True, True]

        # every pack now has each document first, whichever process answers (new connection each)
        for _round in range(3):
            for ext, title, text in TOPICS:
                for mode in ("LEXICAL", "DENSE", "HYBRID"):
                    assert pack_ids(url, f"{title}: {text}", agent, mode)[0] == ext, (ext, mode)

        # metrics: a scrape of the port counts both processes' calls, whichever process takes it
        # (each served about half of the packs above; an earlier run's file was removed at start)
        packs = 3 * len(TOPICS) * 3
        scrapes: dict[int, dict[str, float]] = {}
        for _try in range(3):
            scrapes.update(scrapes_by_pid(port))
        assert set(scrapes) == set(slots.values()), scrapes
        for pid, totals in scrapes.items():
            assert totals["cairn_packs_total"] == packs, (pid, totals)
            assert totals["cairn_ingest_documents_total"] == len(TOPICS), (pid, totals)
            assert totals["cairn_calls_total"] == packs + len(TOPICS) + 2, (pid, totals)  # + credential, collection

        # kill -9 one process and delete its indexes: uvicorn starts another, which takes the freed
        # slot and catches up from the database *before* it accepts a connection — meanwhile every
        # answer (readyz, packs) comes from a ready process, none from a partial index
        victim_slot = 1
        os.kill(slots[victim_slot], signal.SIGKILL)
        time.sleep(0.2)
        shutil.rmtree(data_dir / "workers" / str(victim_slot))
        answered = answer_correctly_until(url, agent, lambda pids: bool(pids - set(slots.values())), 240)
        replaced = next(w for w in answered.values() if w["pid"] not in slots.values())
        assert replaced is not None and replaced["slot"] == victim_slot, replaced
        assert cursor_seq(data_dir, victim_slot) >= log_seq  # rebuilt from the database
        log.flush()
        assert (
            f"Child process [{slots[victim_slot]}] died" in (tmp_path / "serve.log").read_text()
        )  # the operator sees it
        for ext, title, text in TOPICS:
            assert pack_ids(url, text, agent, "HYBRID")[0] == ext
        # the killed process's counts stay in the sums (a counter never goes back)
        for totals in scrapes_by_pid(port).values():
            assert totals["cairn_packs_total"] >= packs + len(TOPICS) and totals["cairn_ingest_documents_total"] == len(
                TOPICS
            ), totals

        # SIGHUP: uvicorn's rolling restart starts a process while both others hold their slots;
        # it takes a new slot, catches up, and only then replaces an old one — no wrong answer
        old = {replaced["pid"], slots[1 - victim_slot]}
        server.send_signal(signal.SIGHUP)
        answered = answer_correctly_until(
            url, agent, lambda pids: len(pids - old) >= 2 and not any(_alive(pid) for pid in old), 300
        )
        new = set(answered) - old
        assert not any(_alive(pid) for pid in old) and len(new) >= 2, (old, new)

        # kill -9 the parent: its processes notice and stop, and the data dir is free again
        workers = sorted(new)
        server.kill()
        server.wait()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any(_alive(pid) for pid in workers):
            time.sleep(0.1)
        assert not any(_alive(pid) for pid in workers)
        ingest = cli(data_dir, "ingest", str(docs), "--collection", "c", "--lexical-only", env=env)
        out = ingest.communicate(timeout=120)[0].decode()
        assert ingest.returncode == 0, out
    finally:
        if server.poll() is None:
            server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.seek(0)
        print(log.read().decode()[-3000:])
        log.close()


def _alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (a zombie counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _last_change_seq(data_dir: Path) -> int:
    """The newest entry of the SQL change log (what both processes' cursors must reach)."""
    import sqlite3

    with sqlite3.connect(data_dir / "cairn.db") as conn:
        return int(conn.execute("SELECT COALESCE(MAX(seq), 0) FROM index_change").fetchone()[0])


def test_serve_stops_when_a_worker_process_cannot_start(tmp_path):
    """A worker slot that cannot be made (``workers`` is a file): each process exits with uvicorn's
    start-up-failure code and one line, and ``serve`` stops (exit 2) instead of restarting them
    forever."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    (data_dir / "workers").write_text("not a folder")
    server = cli(data_dir, "serve", "--port", str(_free_port()), "--workers", "2")
    out = server.communicate(timeout=120)[0].decode()
    assert server.returncode == 2, out
    assert "cannot start: [Errno 20] Not a directory" in out or "cannot start: [Errno 17] File exists" in out, out
    assert out.strip().splitlines()[-1] == "error: a worker process could not start (its message is above); stopped"
    assert "Traceback" not in out, out


def test_serve_on_a_port_in_use_says_so_in_one_line(tmp_path):
    import socket

    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        for extra in ([], ["--workers", "2"]):
            server = cli(tmp_path / "data", "serve", "--port", str(port), *extra)
            out = server.communicate(timeout=120)[0].decode()
            assert server.returncode == 2, out
            assert out.strip().splitlines()[-1] == f"error: cannot listen on 127.0.0.1:{port}: Address already in use"
            assert "Cairn on http" not in out, out
            assert not (tmp_path / "data").exists()  # refused before the data dir is made or locked


@contextlib.contextmanager
def schema_table_locked(pg_url: str) -> Iterator[None]:
    """``alembic_version`` of ``pg_url`` locked (ACCESS EXCLUSIVE) by an open transaction until
    the block ends: every start-up's migration check waits on it, for ever."""
    import asyncpg

    loop = asyncio.new_event_loop()
    conn = loop.run_until_complete(
        asyncpg.connect(pg_url.replace("postgresql+asyncpg://", "postgresql://"), timeout=10)
    )
    try:
        loop.run_until_complete(conn.execute("BEGIN; LOCK TABLE alembic_version IN ACCESS EXCLUSIVE MODE"))
        yield
    finally:
        loop.run_until_complete(conn.close(timeout=10))
        loop.close()


def sessions_waiting_on_a_lock(pg_url: str) -> int:
    """Sessions of ``pg_url``'s database waiting for a lock now (``pg_stat_activity``)."""
    import asyncpg

    async def count() -> int:
        conn = await asyncpg.connect(pg_url.replace("postgresql+asyncpg://", "postgresql://"), timeout=10)
        try:
            return await conn.fetchval(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND wait_event_type = 'Lock'",
                pg_url.rsplit("/", 1)[1],
            )
        finally:
            await conn.close()

    return asyncio.run(count())


@pytest.mark.parametrize("workers", [1, 2])
def test_sigterm_during_start_up_stops_serve_and_its_processes_at_once(tmp_path, workers):
    """A start-up that cannot end (the database keeps its schema table locked, so each
    process's migration check in the lifespan waits): SIGTERM to ``cairn serve`` ends it, and
    each of its processes, within seconds, killed by the signal. Before, SIGTERM during a
    lifespan start-up only set uvicorn's flag, read once the start-up returned: the processes
    (and the parent waiting for them) never ended."""
    pg_url = postgres_database()
    server = None
    children: list[int] = []
    try:
        upgrade_database(pg_url)
        env = dict(os.environ, CAIRN_DATABASE_URL=pg_url, CAIRN_EMBEDDER="none", CAIRN_LOG_LEVEL="WARNING")
        extra = ["--workers", str(workers)] if workers > 1 else []
        with schema_table_locked(pg_url):
            server = cli(tmp_path / "data", "serve", "--port", str(_free_port()), "--no-migrate", *extra, env=env)
            deadline = time.monotonic() + 180
            while sessions_waiting_on_a_lock(pg_url) < workers:  # each process is in its start-up
                assert server.poll() is None, server.stdout.read().decode() if server.stdout else server.returncode
                assert time.monotonic() < deadline, "the processes never reached the locked table"
                time.sleep(0.2)
            if workers > 1:
                children = [p for p in _children(server.pid) if _alive(p) and "spawn_main" in _cmdline(p)]
                assert len(children) == workers, children
            started = time.monotonic()
            server.send_signal(signal.SIGTERM)
            out = server.communicate(timeout=60)[0].decode()
            stopped_in = time.monotonic() - started
        # the parent passes SIGTERM on and waits for its processes, which stop at once
        assert stopped_in < 20, (stopped_in, out)
        assert not any(_alive(pid) for pid in children), children
        if workers == 1:
            assert server.returncode == -signal.SIGTERM, (server.returncode, out)
        assert "SIGTERM during start-up: stopping now" in out, out
    finally:
        if server is not None and server.poll() is None:
            server.kill()
            server.wait()
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        drop_postgres_database(pg_url)


def _children(pid: int) -> list[int]:
    """The pids whose parent is ``pid`` (``/proc``)."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text()
    except OSError:
        return ""
