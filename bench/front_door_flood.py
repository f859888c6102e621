"""Many-operation documents against a real server: their cost, and what they do to another
workspace's packs (issue 32 item 1).

Starts ``cairn.app.main`` (SQLite, ``embedder=none``) in a subprocess — whichever code is first
on ``PYTHONPATH``, so the same script measures an old checkout and a new one — with two
workspaces: a *victim* (owner token, 40 documents) and an *attacker* (a viewer member token).
The attack document is 399 operations ``query qN { __typename }`` sent with ``operationName``,
a fresh comment in front each time so no parse or validation cache helps. Prints:

- ``attack solo``: latency of one attack request on an idle server (≈ its event-loop time);
- ``victim alone`` / ``victim under attack``: p50 and max of LEXICAL ``contextPack`` calls,
  the second while ``--attackers`` threads send attack documents back to back;
- ``healthz under attack``: p50 and max of ``GET /healthz``;
- the attackers' request count and status codes.

    PYTHONPATH=<checkout> .venv/bin/python -m bench.front_door_flood [--attackers 3] [--packs 30]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter

import httpx

from cairn.app.core.config import Settings
from cairn.app.core.db import Database
from cairn.app.core.migrate import upgrade_database
from cairn.app.identity import service as identity

SERVER = """
import sys, uvicorn
from cairn.app.core.config import Settings
from cairn.app.main import create_app
uvicorn.run(create_app(Settings(data_dir=sys.argv[1], embedder="none")), host="127.0.0.1",
            port=int(sys.argv[2]), log_level="warning")
"""
PACK = '{ contextPack(input: {task: "invoice region billing latency", retrieval: LEXICAL}) { packId } }'
TOPICS = ["billing", "invoice", "region", "latency", "support", "Frankfurt", "customers", "tickets"]


def attack_document() -> str:
    return f"# {uuid.uuid4()}\n" + " ".join(f"query q{i} {{ __typename }}" for i in range(399))


async def bootstrap(url: str) -> dict[str, str]:
    db = Database(url)
    try:
        async with db.session() as s:
            victim = await identity.create_workspace(s, name="victim")
            attacker = await identity.create_workspace(s, name="attacker")
            _m, owner = await identity.create_member(s, workspace_id=victim.id, name="owner", role="owner")
            _m, viewer = await identity.create_member(s, workspace_id=attacker.id, name="viewer", role="viewer")
    finally:
        await db.dispose()
    return {"victim": owner.token, "attacker": viewer.token}


def gql(client: httpx.Client, base: str, token: str, query: str, **extra) -> httpx.Response:
    return client.post(
        f"{base}/graphql", json={"query": query, **extra}, headers={"Authorization": f"Bearer {token}"}, timeout=120
    )


def timed(fn) -> float:
    started = time.perf_counter()
    fn()
    return (time.perf_counter() - started) * 1000


def summary(ms: list[float]) -> str:
    return f"p50 {statistics.median(ms):7.1f} ms  max {max(ms):7.1f} ms  (n={len(ms)})"


def main() -> None:
    """Run the measurement and print one line per figure."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attackers", type=int, default=3)
    parser.add_argument("--packs", type=int, default=30)
    args = parser.parse_args()
    data_dir = tempfile.mkdtemp(prefix="cairn-flood-")
    settings = Settings(data_dir=data_dir, embedder="none")
    upgrade_database(settings.resolved_database_url)
    tokens = asyncio.run(bootstrap(settings.resolved_database_url))
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-c", SERVER, data_dir, str(port)], env=os.environ.copy())
    base = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client() as client:
            for _ in range(600):
                try:
                    if client.get(f"{base}/readyz", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                time.sleep(0.2)
            coll = gql(client, base, tokens["victim"], 'mutation { createCollection(name: "h") { id } }')
            coll_id = coll.json()["data"]["createCollection"]["id"]
            for i in range(40):
                text = " ".join(f"The {TOPICS[(i + j) % 8]} note {i}.{j} covers {TOPICS[j % 8]}." for j in range(60))
                r = gql(
                    client,
                    base,
                    tokens["victim"],
                    "mutation($i: UpsertDocumentInput!) { upsertDocument(input: $i) { documentId } }",
                    variables={
                        "i": {"collectionId": coll_id, "externalId": f"d{i}", "title": f"Doc {i}", "text": text}
                    },
                )
                assert not r.json().get("errors"), r.text
            solo = [timed(lambda: gql(client, base, tokens["attacker"], attack_document(), operationName="q7"))]
            solo += [
                timed(lambda: gql(client, base, tokens["attacker"], attack_document(), operationName="q7"))
                for _ in range(19)
            ]
            status = gql(client, base, tokens["attacker"], attack_document(), operationName="q7")
            print(f"attack solo          {summary(solo)}  status {status.status_code}")
            for _ in range(3):
                gql(client, base, tokens["victim"], PACK)  # warm up
            alone = [timed(lambda: gql(client, base, tokens["victim"], PACK)) for _ in range(args.packs)]
            print(f"victim alone         {summary(alone)}")
            stop = threading.Event()
            statuses: Counter[int] = Counter()

            def attack() -> None:
                with httpx.Client() as own:
                    while not stop.is_set():
                        r = gql(own, base, tokens["attacker"], attack_document(), operationName="q7")
                        statuses[r.status_code] += 1

            threads = [threading.Thread(target=attack) for _ in range(args.attackers)]
            for t in threads:
                t.start()
            time.sleep(2)
            started = time.perf_counter()
            under = [timed(lambda: gql(client, base, tokens["victim"], PACK)) for _ in range(args.packs)]
            health = [timed(lambda: client.get(f"{base}/healthz", timeout=120)) for _ in range(20)]
            elapsed = time.perf_counter() - started + 2
            stop.set()
            for t in threads:
                t.join()
            print(f"victim under attack  {summary(under)}")
            print(f"healthz under attack {summary(health)}")
            total = sum(statuses.values())
            print(f"attackers: {total} requests in {elapsed:.1f} s, statuses {dict(statuses)}")
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
