"""Leases of running decisions on SQLite and PostgreSQL (issue 32, item 18; :mod:`app.decisions.lease`):
a lapsed lease reads FAILED (two readers agree), a live one keeps RUNNING, the heartbeat keeps a
long decision's lease, a process that lost its lease cannot overwrite the mark, and start-up
sweeps lapsed decisions. The killed-server case is tests/db/test_decision_crash.py."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from sqlalchemy import select, update

from cairn.app.core.db import Database
from cairn.app.core.ids import utcnow
from cairn.app.core.models import Decision, DecisionIdempotency
from cairn.app.decisions.judges import OpenAIJudge
from cairn.app.decisions.request import validate_request
from cairn.app.decisions.service import DecisionRunner
from tests.db.test_decision_crash import SilentUpstream
from tests.db.test_decision_runner import REQ, _principal


async def _running(db, principal, decision_id: str, *, lease_in: float | None, key: str | None = None) -> None:
    """A RUNNING decision as a process left it (lease ``lease_in`` seconds from now; None: no lease)."""
    now = utcnow()
    async with db.session() as s:
        s.add(
            Decision(
                id=decision_id,
                workspace_id=principal.workspace_id,
                principal_id=principal.id,
                member_id=principal.member_id,
                source="api",
                status="RUNNING",
                mode="STATE",
                questions=[],
                created_at=now - timedelta(seconds=5),
                expires_at=now + timedelta(days=1),
                lease_expires_at=None if lease_in is None else now + timedelta(seconds=lease_in),
            )
        )
        if key is not None:
            s.add(
                DecisionIdempotency(
                    id=f"idem_{decision_id}",
                    principal_id=principal.id,
                    key=key,
                    request_sha256="a" * 64,
                    decision_id=decision_id,
                    state="RUNNING",
                    created_at=now,
                    expires_at=now + timedelta(days=1),
                )
            )


async def _keys(db, principal) -> list[tuple[str, str]]:
    async with db.session() as s:
        rows = (
            await s.execute(select(DecisionIdempotency).where(DecisionIdempotency.principal_id == principal.id))
        ).scalars()
        return sorted((r.decision_id or "", r.state) for r in rows)


async def test_a_lapsed_lease_reads_failed_and_two_readers_agree(db, db_url):
    principal = await _principal(db)
    await _running(db, principal, "dec_lapsed", lease_in=-1, key="k-lapsed")
    other = Database(db_url)  # a second process's engine
    try:
        one, two = await asyncio.gather(
            DecisionRunner(db, lambda: None).get(principal, "dec_lapsed"),
            DecisionRunner(other, lambda: None).get(principal, "dec_lapsed"),
        )
    finally:
        await other.dispose()
    assert one == two
    assert (one["status"], one["error"]["code"]) == ("FAILED", "decision_internal_error")
    assert "process running this decision stopped" in one["error"]["message"] and one["completedAt"]
    assert await _keys(db, principal) == []  # the key is free: a retry runs again


async def test_a_retry_of_a_lapsed_key_marks_the_decision_and_runs_again(db):
    principal = await _principal(db)
    await _running(db, principal, "dec_retry", lease_in=-1, key="k-retry")
    runner = DecisionRunner(db, lambda: None, context_tokens=64)
    big = {"state": {"text": "word " * 200}, "questions": REQ["questions"]}
    out = await runner.create(
        principal, prepare=lambda: validate_request(big), sha="a" * 64, key="k-retry", source="api"
    )
    assert out.error.code == "decision_context_too_large" and out.error.extra["decisionId"] != "dec_retry"
    dead = await runner.get(principal, "dec_retry")
    assert (dead["status"], dead["error"]["code"]) == ("FAILED", "decision_internal_error")


async def test_a_live_lease_keeps_the_decision_running_and_its_key_busy(db):
    principal = await _principal(db)
    await _running(db, principal, "dec_live", lease_in=600, key="k-live")
    runner = DecisionRunner(db, lambda: None)
    assert (await runner.get(principal, "dec_live"))["status"] == "RUNNING"
    busy = await runner.create(
        principal, prepare=lambda: validate_request(REQ), sha="a" * 64, key="k-live", source="api"
    )
    assert (busy.error.code, busy.error.extra["decisionId"]) == ("decision_in_progress", "dec_live")


async def test_start_up_sweeps_only_lapsed_decisions(db):
    principal = await _principal(db)
    await _running(db, principal, "dec_sw_lapsed", lease_in=-1, key="k-sw1")
    await _running(db, principal, "dec_sw_none", lease_in=None)
    await _running(db, principal, "dec_sw_live", lease_in=600, key="k-sw2")
    runner = DecisionRunner(db, lambda: None)
    assert await runner.sweep_lapsed() >= 2  # other tests' leftovers on this database may count too
    status = {d: (await runner.get(principal, d))["status"] for d in ("dec_sw_lapsed", "dec_sw_none", "dec_sw_live")}
    assert status == {"dec_sw_lapsed": "FAILED", "dec_sw_none": "FAILED", "dec_sw_live": "RUNNING"}
    assert await _keys(db, principal) == [("dec_sw_live", "RUNNING")]


async def _judge_started(db, principal) -> str:
    for _ in range(200):
        await asyncio.sleep(0.05)
        async with db.session() as s:
            found = (
                await s.execute(
                    select(Decision.id).where(Decision.principal_id == principal.id, Decision.judge_runs == 1)
                )
            ).scalar_one_or_none()
        if found:
            return found
    raise AssertionError("the judge never started")


async def test_the_heartbeat_keeps_a_decision_running_past_its_lease(db):
    """A 3 s lease, a judge that never answers: 5 s later a reader still sees RUNNING (renewed)."""
    principal = await _principal(db)
    upstream = SilentUpstream()
    try:
        judge = OpenAIJudge(f"http://127.0.0.1:{upstream.port}/v1", "m", timeout=60)
        runner = DecisionRunner(db, lambda: judge, timeout_seconds=60, lease_seconds=3)
        task = asyncio.create_task(
            runner.create(principal, prepare=lambda: validate_request(REQ), sha="b" * 64, key="k-beat", source="api")
        )
        decision_id = await _judge_started(db, principal)
        await asyncio.sleep(5)
        assert (await DecisionRunner(db, lambda: None).get(principal, decision_id))["status"] == "RUNNING"
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    finally:
        upstream.close()


async def test_a_process_that_lost_its_lease_cannot_overwrite_the_failed_mark(db):
    """A live runner whose lease a reader found lapsed (as after a long stall): the reader's FAILED
    stays, the runner's own ending (here: cancelled) is not stored, and the runner's caller is
    told the same failure."""
    principal = await _principal(db)
    upstream = SilentUpstream()
    try:
        judge = OpenAIJudge(f"http://127.0.0.1:{upstream.port}/v1", "m", timeout=2)
        runner = DecisionRunner(db, lambda: judge, timeout_seconds=60, lease_seconds=600)
        task = asyncio.create_task(
            runner.create(principal, prepare=lambda: validate_request(REQ), sha="c" * 64, key="k-lost", source="api")
        )
        decision_id = await _judge_started(db, principal)
        async with db.session() as s:  # as if its process had stalled past the lease
            await s.execute(
                update(Decision)
                .where(Decision.id == decision_id)
                .values(lease_expires_at=utcnow() - timedelta(seconds=1))
            )
        read = await DecisionRunner(db, lambda: None).get(principal, decision_id)
        assert read["error"]["code"] == "decision_internal_error"
        out = await task  # the judge call times out after 2 s (504), which must not replace the mark
        assert out.error.code == "decision_internal_error" and out.error.extra["decisionId"] == decision_id
        after = await runner.get(principal, decision_id)
        assert (after["status"], after["error"], after["completedAt"]) == ("FAILED", read["error"], read["completedAt"])
        assert await _keys(db, principal) == []
    finally:
        upstream.close()
