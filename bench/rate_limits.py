"""Latency the rate limit adds to one call: one ``RateLimiter.check`` (one upsert transaction).

Runs ``--calls`` sequential checks (a mix of subjects and classes, all under the limit) on a
fresh, migrated SQLite file and, if reachable, a fresh PostgreSQL database, and prints the
median, p95 and p99 in microseconds per check. The check is the whole cost the adapter adds
(one pooled session, ``INSERT … ON CONFLICT DO UPDATE … RETURNING``, commit).

    python -m bench.rate_limits [--calls 2000] [--postgres-url postgresql+asyncpg://postgres@127.0.0.1:5432/postgres]
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import statistics
import tempfile
import time
from pathlib import Path

from cairn.app.core.db import Database
from cairn.app.core.migrate import upgrade_database
from cairn.app.governance.operation import RATE_CLASSES
from cairn.app.governance.rate_limits import RateLimiter


async def measure(url: str, calls: int) -> list[float]:
    """Seconds per check for ``calls`` sequential checks (after 50 warm-up checks)."""
    db = Database(url)
    limiter = RateLimiter(dict.fromkeys(RATE_CLASSES, 10**9))
    subjects = [f"agent:{i:016x}" for i in range(20)]
    try:
        for i in range(50):
            await limiter.check(db, subjects[i % 20], RATE_CLASSES[i % 4])
        out = []
        for i in range(calls):
            t = time.perf_counter()
            await limiter.check(db, subjects[i % 20], RATE_CLASSES[i % 4])
            out.append(time.perf_counter() - t)
        return out
    finally:
        await db.dispose()


def report(label: str, seconds: list[float]) -> None:
    """Print median / p95 / p99 in µs."""
    us = sorted(s * 1e6 for s in seconds)
    q = statistics.quantiles(us, n=100)
    print(f"{label:<11} n={len(us)}  median {statistics.median(us):7.0f} µs  p95 {q[94]:7.0f} µs  p99 {q[98]:7.0f} µs")


def main() -> None:
    """Command-line entry point (see module doc)."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--postgres-url", default="postgresql+asyncpg://postgres@127.0.0.1:5432/postgres")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite+aiosqlite:///{Path(tmp) / 'cairn.db'}"
        upgrade_database(url)
        report("sqlite", asyncio.run(measure(url, args.calls)))
    name = f"cairn_bench_{secrets.token_hex(4)}"
    admin = args.postgres_url.replace("postgresql+asyncpg://", "postgresql://")

    async def sql(statement: str) -> None:
        import asyncpg

        conn = await asyncpg.connect(admin)
        try:
            await conn.execute(statement)
        finally:
            await conn.close()

    try:
        asyncio.run(sql(f'CREATE DATABASE "{name}"'))
    except Exception as exc:  # noqa: BLE001 - PostgreSQL is optional here
        print(f"postgresql  skipped ({exc})")
        return
    try:
        url = f"{args.postgres_url.rsplit('/', 1)[0]}/{name}"
        upgrade_database(url)
        report("postgresql", asyncio.run(measure(url, args.calls)))
    finally:
        asyncio.run(sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


if __name__ == "__main__":
    main()
