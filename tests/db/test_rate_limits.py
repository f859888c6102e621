"""The rate limiter on both databases: counting, windows, concurrency, cleanup, unlimited."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import select

from cairn.app.core.models import RateLimitCounter
from cairn.app.governance.rate_limits import RateLimited, RateLimiter


class Clock:
    """A settable clock (Unix seconds)."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


async def test_counts_refuse_over_the_limit_and_reset_in_the_next_window(db):
    clock = Clock(1_800_000_013.4)  # 13.4 s into a minute window
    limiter = RateLimiter({"packs": 3, "reads": 0}, clock=clock)
    assert [await limiter.check(db, "agent:a", "packs") for _ in range(3)] == [1, 2, 3]
    with pytest.raises(RateLimited) as exc:
        await limiter.check(db, "agent:a", "packs")
    err = exc.value
    assert (err.http_status, err.code) == (429, "RATE_LIMITED")
    assert err.extensions() == {
        "code": "RATE_LIMITED",
        "rateClass": "packs",
        "limit": 3,
        "window": 60,
        "retryAfter": 47,
    }
    assert err.message == "at most 3 packs per minute per credential; retry after 47 s"
    assert await limiter.check(db, "agent:b", "packs") == 1  # another credential
    assert await limiter.check(db, "member:a", "packs") == 1  # a member with the same id is another subject
    assert await limiter.check(db, "agent:a", "writes") is None  # no limit configured: unlimited
    assert await limiter.check(db, "agent:a", "reads") is None  # 0 = unlimited
    clock.now += 47  # the next window
    assert await limiter.check(db, "agent:a", "packs") == 1


async def test_a_concurrent_burst_passes_exactly_the_limit(db):
    limiter = RateLimiter({"decisions": 4}, clock=Clock(1_800_000_100.0))

    async def one():
        try:
            await limiter.check(db, "agent:burst", "decisions")
            return "ok"
        except RateLimited:
            return "limited"

    results = await asyncio.gather(*(one() for _ in range(9)))
    assert sorted(results) == ["limited"] * 5 + ["ok"] * 4
    async with db.session() as s:
        hits = (
            await s.execute(select(RateLimitCounter.hits).where(RateLimitCounter.subject == "agent:burst"))
        ).scalar_one()
    assert hits == 9  # every call counted once, none lost


async def test_windows_older_than_the_previous_one_are_deleted(db):
    clock = Clock(1_800_001_020.0)
    limiter = RateLimiter({"reads": 10}, clock=clock)
    for _ in range(4):  # four consecutive windows, a minute apart (so each call may clean up)
        await limiter.check(db, "agent:old", "reads")
        clock.now += 60
    async with db.session() as s:
        starts = (
            (
                await s.execute(
                    select(RateLimitCounter.window_start)
                    .where(RateLimitCounter.subject == "agent:old")
                    .order_by(RateLimitCounter.window_start)
                )
            )
            .scalars()
            .all()
        )
    last = int((clock.now - 60) // 60) * 60
    assert starts == [last - 60, last]  # the current window and the previous one are kept


def test_unknown_classes_are_refused():
    with pytest.raises(ValueError, match="unknown rate classes \\['bulk'\\]"):
        RateLimiter({"bulk": 1})
