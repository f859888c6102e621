"""Issue 32 item 16: a full data volume is a coded 503 ``STORAGE_FULL``, ``/readyz`` follows it,
writes work again once space returns (no restart), and ``serve`` refuses to start without space.

Real ``cairn serve`` processes on a real small volume (:func:`small_volume`, a tmpfs mounted for
the test), SQLite, Whoosh and — in the vector test — the Qdrant Edge engine and the real model.
The volume is filled by a filler file, as any other tenant of a disk would fill it.
"""

from __future__ import annotations

import asyncio
import errno
import gc
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cairn.app.core.migrate import upgrade_database
from tests import local_http
from tests.conftest import ROOT, drop_postgres_database, postgres_database
from tests.graphql.conftest import _bootstrap, _free_port
from tests.outages.conftest import serve
from tests.workers.test_workers import Worker, stop, wait_ready

MIB = 1024 * 1024
UPSERT = "mutation($i:UpsertDocumentInput!){upsertDocument(input:$i){documentId status}}"
PACK = "query($i: ContextPackInput!) { contextPack(input: $i) { items { externalId } } }"


def free_bytes(path: Path) -> int:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def fill(volume: Path, leave: int) -> Path:
    """A filler file taking all but ``leave`` bytes of the volume's free space."""
    filler = volume / "filler.bin"
    size = max(free_bytes(volume) - leave, 0)
    with open(filler, "wb") as f:
        chunk = b"\xa5" * MIB
        while size > 0:
            n = min(size, len(chunk))
            f.write(chunk[:n])
            size -= n
    return filler


def call(w: Worker, query: str, variables: dict, token: str):
    return local_http.post(
        f"{w.url}/graphql",
        json={"query": query, "variables": variables},
        headers={"Authorization": f"Bearer {token}"},
        timeout=120,
    )


def prepare(volume: Path, url: str | None = None) -> dict[str, str]:
    """Migrate the store (``url``, default the volume's SQLite file) and make the members
    (tokens by role)."""
    url = url or f"sqlite+aiosqlite:///{volume / 'cairn.db'}"
    upgrade_database(url)
    tokens, _ids = asyncio.run(_bootstrap(url))
    return tokens


def ingest_until_refused(w: Worker, token: str, coll: str, words: int) -> tuple[int, dict, int]:
    """Upsert distinct documents until one is refused; ``(status, body, accepted)`` of it."""
    for n in range(400):
        text = " ".join(f"filler{n}w{i} lorem{i % 97}" for i in range(words))
        r = call(
            w, UPSERT, {"i": {"collectionId": coll, "externalId": f"fill-{n}", "title": f"F{n}", "text": text}}, token
        )
        body = r.json()
        if body.get("errors") or r.status_code != 200:
            return r.status_code, body, n
    raise AssertionError("the volume never filled up")


def assert_storage_full(status: int, body: dict) -> None:
    assert status == 503, (status, body)
    ext = body["errors"][0]["extensions"]
    assert ext["code"] == "STORAGE_FULL" and ext["retryAfter"] == 30, body
    assert "free space" in body["errors"][0]["message"], body


def wait_readyz(w: Worker, want: int, timeout: float = 30) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        status, body = w.readyz()
        if status == want or time.monotonic() > deadline:
            assert status == want, body
            return body
        time.sleep(0.2)


@pytest.mark.slow  # a `cairn serve` process
def test_serve_refuses_to_start_below_the_minimum_free_space(small_volume):
    fill(small_volume, leave=6 * MIB)
    env = dict(os.environ, CAIRN_MIN_FREE_MB="16", CAIRN_EMBEDDER="none")
    for args in (["serve", "--port", str(_free_port())], ["ingest", str(ROOT / "README.md"), "-c", "docs"]):
        done = subprocess.run(
            [sys.executable, "-m", "cairn.app.cli", *args, "--data-dir", str(small_volume)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2 and len(lines) == 1, (args, done.returncode, done.stderr)
        assert lines[0].startswith("error: not starting: only "), lines
        assert "MiB free" in lines[0] and "CAIRN_MIN_FREE_MB=16" in lines[0], lines
    # a minimum that is no size at all is refused as a setting, in one line
    done = subprocess.run(
        [sys.executable, "-m", "cairn.app.cli", "serve", "--data-dir", str(small_volume)],
        cwd=ROOT,
        env=dict(env, CAIRN_MIN_FREE_MB="-1"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "CAIRN_MIN_FREE_MB" in done.stderr, done.stderr


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request, small_volume) -> Iterator[str | None]:
    """None: the volume's SQLite file; else a fresh database on the machine's PostgreSQL (the
    indexes stay on the small volume)."""
    if request.param == "sqlite":
        yield None
        return
    url = postgres_database()
    try:
        yield url
    finally:
        drop_postgres_database(url)


@pytest.mark.slow  # a `cairn serve` process
def test_full_volume_while_serving_is_503_then_writes_work_again_without_restart(small_volume, database_url):
    """Lexical only (Whoosh, and SQLite or PostgreSQL), no minimum: the volume really runs out
    under a write."""
    tokens = prepare(small_volume, database_url)
    owner = tokens["owner"]
    extra = {"CAIRN_DATABASE_URL": database_url} if database_url else {}
    w = serve("full-lexical", small_volume, CAIRN_EMBEDDER="none", CAIRN_MIN_FREE_MB="0", **extra)
    try:
        wait_ready(w, timeout=240)
        coll = call(w, 'mutation{createCollection(name:"docs"){id}}', {}, owner).json()["data"]["createCollection"][
            "id"
        ]
        filler = fill(small_volume, leave=1 * MIB)
        status, body, _accepted = ingest_until_refused(w, owner, coll, words=4000)
        assert_storage_full(status, body)
        assert w.proc.poll() is None  # still serving
        ready = wait_readyz(w, 503)
        assert ready["storage"] != "ok" and ready["reason"] == ready["storage"], ready

        filler.unlink()  # space returns: no restart
        assert wait_readyz(w, 200)["storage"] == "ok"
        text = "The zanzibarite procedure restores the archive after an outage."
        r = call(w, UPSERT, {"i": {"collectionId": coll, "externalId": "after", "title": "After", "text": text}}, owner)
        assert r.status_code == 200 and not r.json().get("errors"), r.text
        pack = call(w, PACK, {"i": {"task": "zanzibarite procedure", "retrieval": "LEXICAL"}}, owner).json()
        assert [i["externalId"] for i in pack["data"]["contextPack"]["items"]][:1] == ["after"], pack
    finally:
        stop(w)


@pytest.mark.slow  # a `cairn serve` process
def test_vector_index_writes_stop_at_the_minimum_instead_of_sigbus(small_volume):
    """The embedded Qdrant engine grows memory-mapped files (a full volume is SIGBUS, not an
    error): index writes are refused at ``CAIRN_MIN_FREE_MB`` and the process keeps serving."""
    tokens = prepare(small_volume)
    owner = tokens["owner"]
    w = serve("full-vectors", small_volume, CAIRN_MIN_FREE_MB="8")
    try:
        wait_ready(w, timeout=300)
        coll = call(w, 'mutation{createCollection(name:"docs"){id}}', {}, owner).json()["data"]["createCollection"][
            "id"
        ]
        filler = fill(small_volume, leave=9 * MIB)
        status, body, _accepted = ingest_until_refused(w, owner, coll, words=1500)
        assert_storage_full(status, body)
        assert w.proc.poll() is None, "the server died (SIGBUS?)"
        assert "CAIRN_MIN_FREE_MB" in wait_readyz(w, 503)["reason"]

        filler.unlink()
        wait_readyz(w, 200)
        text = "The quokkalith checklist covers vector index recovery."
        r = call(w, UPSERT, {"i": {"collectionId": coll, "externalId": "after", "title": "After", "text": text}}, owner)
        assert r.status_code == 200 and not r.json().get("errors"), r.text
        pack = call(w, PACK, {"i": {"task": "quokkalith checklist", "retrieval": "HYBRID"}}, owner).json()
        assert [i["externalId"] for i in pack["data"]["contextPack"]["items"]][:1] == ["after"], pack
    finally:
        stop(w)


# Whoosh leaves a column reader of the failed segment for the garbage collector (closed there)
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_whoosh_commit_that_ran_out_of_space_releases_the_write_lock(small_volume):
    """The index itself (no server): a commit failing with ENOSPC used to keep Whoosh's write
    lock, so every later write failed with ``LockError`` until a restart."""
    from cairn.retrieval.lexical import WhooshIndex
    from cairn.retrieval.lexical.schema import IndexedPassage

    index = WhooshIndex(small_volume / "whoosh")

    def passages(prefix: str, n: int, words: int) -> list[IndexedPassage]:
        return [
            IndexedPassage(
                f"{prefix}{i:04d}", "ws", "coll", f"doc{i}", "T", " ".join(f"{prefix}{i}x{j}" for j in range(words))
            )
            for i in range(n)
        ]

    filler = fill(small_volume, leave=256 * 1024)
    try:
        index.add(passages("big", 200, 300))
    except OSError as exc:
        # kept, as a server keeps it (the GraphQL error's cause, the log record): its traceback
        # holds the failed writer, so a lock left on it stays held
        failure = exc
    else:
        raise AssertionError("the commit should have run out of space")
    assert failure.errno == errno.ENOSPC
    filler.unlink()
    index.add(passages("ok", 3, 5))  # the lock is free again: no LockError
    assert index.has(["ok0000", "ok0002"]) == {"ok0000", "ok0002"}
    index.close()
    del failure
    gc.collect()  # Whoosh's leftover reader is closed here, under this test's warning filter
