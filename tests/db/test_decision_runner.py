"""The decision runner on SQLite and PostgreSQL: which failures are replayed for an
Idempotency-Key, and how upstream HTTP failures map to the SPEC §8 codes."""

from __future__ import annotations

import asyncio
import socket
import threading

import httpx
import pytest

from cairn.app.decisions.judges import JudgeError, OpenAIJudge
from cairn.app.decisions.request import validate_request
from cairn.app.decisions.service import DecisionRunner
from cairn.app.governance.auth import Principal
from tests import factories

REQ = {
    "state": {"message": "resolved"},
    "questions": [{"type": "CHOICE", "instructions": "Resolved?", "choices": [{"value": True}, {"value": False}]}],
}


async def _principal(db) -> Principal:
    async with db.session() as s:
        ws = await factories.workspace(s)
        m, _token = await factories.member(s, workspace_id=ws.id, role="editor")
    return factories.member_principal(m)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_transient_upstream_failures_release_the_key_and_are_readable(db):
    principal = await _principal(db)
    judge = OpenAIJudge(f"http://127.0.0.1:{_closed_port()}/v1", "m", timeout=5)
    runner = DecisionRunner(db, lambda: judge, timeout_seconds=10)
    first = await runner.create(principal, prepare=lambda: validate_request(REQ), sha="a" * 64, key="k1", source="api")
    assert (first.error.code, first.error.http_status) == ("decision_upstream_unavailable", 503)
    failed = await runner.get(principal, first.error.extra["decisionId"])
    assert (failed["status"], failed["error"]["code"], failed["judgeRuns"]) == (
        "FAILED",
        "decision_upstream_unavailable",
        1,
    )
    again = await runner.create(principal, prepare=lambda: validate_request(REQ), sha="a" * 64, key="k1", source="api")
    assert not again.replayed and again.error.extra["decisionId"] != first.error.extra["decisionId"]


async def test_deterministic_failures_are_replayed_with_the_same_decision(db):
    principal = await _principal(db)
    runner = DecisionRunner(db, lambda: None, timeout_seconds=10, context_tokens=64)
    big = {"state": {"text": "word " * 200}, "questions": REQ["questions"]}
    first = await runner.create(principal, prepare=lambda: validate_request(big), sha="b" * 64, key="k2", source="api")
    assert (first.error.code, first.error.http_status) == ("decision_context_too_large", 422)
    again = await runner.create(principal, prepare=lambda: validate_request(big), sha="b" * 64, key="k2", source="api")
    assert again.replayed and again.error.code == "decision_context_too_large"
    assert again.error.extra["decisionId"] == first.error.extra["decisionId"]
    assert await runner.judge_runs(first.error.extra["decisionId"]) == 0


def _silent_server() -> tuple[socket.socket, int]:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    return srv, srv.getsockname()[1]


def test_a_silent_upstream_is_a_timeout():
    srv, port = _silent_server()
    conns = []
    t = threading.Thread(target=lambda: conns.append(srv.accept()), daemon=True)
    t.start()
    try:
        with pytest.raises(JudgeError) as e:
            OpenAIJudge(f"http://127.0.0.1:{port}/v1", "m", timeout=0.5).score("p", [" a"])
        assert (e.value.code, e.value.http_status, e.value.transient) == ("decision_timeout", 504, True)
    finally:
        for c, _ in conns:
            c.close()
        srv.close()


@pytest.mark.parametrize(
    "status,headers,text,code,http",
    [
        (429, {"Retry-After": "7"}, '{"error":"slow down"}', "decision_rate_limited", 429),
        (429, {}, '{"error":{"code":"insufficient_quota"}}', "decision_quota_exhausted", 402),
        (402, {}, "payment required", "decision_quota_exhausted", 402),
        (413, {}, "too large", "decision_context_too_large", 422),
        (400, {}, '{"error":"This model\'s maximum context length is 2048 tokens"}', "decision_context_too_large", 422),
        (503, {}, "overloaded", "decision_upstream_unavailable", 503),
        (504, {}, "gateway timeout", "decision_timeout", 504),
        (500, {}, "boom", "decision_upstream_error", 502),
        (200, {}, "<html>not json</html>", "decision_invalid_upstream_response", 502),
    ],
)
def test_upstream_status_mapping(status, headers, text, code, http):
    response = httpx.Response(status, headers=headers, text=text)
    with pytest.raises(JudgeError) as e:
        OpenAIJudge("http://x/v1", "m")._check(response)
    assert (e.value.code, e.value.http_status) == (code, http)
    if status == 429 and code == "decision_rate_limited":
        assert e.value.retry_after == 7 and e.value.transient


def test_an_echo_body_without_logprobs_is_an_invalid_upstream_response():
    from cairn.app.decisions.judges import _echo_score

    with pytest.raises(JudgeError) as e:
        _echo_score({"choices": [{"text": "p a"}]}, " a", 1)
    assert e.value.code == "decision_invalid_upstream_response"
    lp = {"text_offset": [0, 2, 4, 6], "tokens": ["Q:", " A", ".", " b"], "token_logprobs": [None, -1.0, -0.5, -2.0]}
    good = {"choices": [{"text": "Q: A. b", "logprobs": lp}], "usage": {"completion_tokens": 1}}
    s = _echo_score(good, " A.", 2)  # option " A." is the prompt's tail; " b" is the generated token
    assert (s.logprob, s.tokens) == (-1.5, 2)
    s = _echo_score({"choices": [{"text": "Q: A. b", "logprobs": lp}]}, " A.", 2)  # no usage: by offsets
    assert (s.logprob, s.tokens) == (-1.5, 2)


async def test_a_cancelled_decision_is_failed_499_and_frees_its_key(db):
    import asyncio

    from sqlalchemy import select

    from cairn.app.core.models import Decision, DecisionIdempotency

    principal = await _principal(db)
    srv, port = _silent_server()  # accepts, never answers: the judge call hangs until cancelled
    try:
        judge = OpenAIJudge(f"http://127.0.0.1:{port}/v1", "m", timeout=30)
        runner = DecisionRunner(db, lambda: judge, timeout_seconds=30)
        task = asyncio.create_task(
            runner.create(principal, prepare=lambda: validate_request(REQ), sha="d" * 64, key="k-cancel", source="api")
        )
        for _ in range(100):
            await asyncio.sleep(0.05)
            async with db.session() as s:
                running = (
                    (
                        await s.execute(
                            select(Decision).where(Decision.principal_id == principal.id, Decision.judge_runs == 1)
                        )
                    )
                    .scalars()
                    .all()
                )
            if running:
                break
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        async with db.session() as s:
            row = (await s.execute(select(Decision).where(Decision.principal_id == principal.id))).scalar_one()
            keys = (
                (await s.execute(select(DecisionIdempotency).where(DecisionIdempotency.principal_id == principal.id)))
                .scalars()
                .all()
            )
        assert (row.status, row.error["code"]) == ("FAILED", "decision_cancelled")
        assert keys == []
    finally:
        srv.close()


async def test_a_key_left_running_by_a_dead_process_is_taken_over(db):
    from datetime import timedelta

    from cairn.app.core.ids import utcnow
    from cairn.app.core.models import Decision, DecisionIdempotency

    principal = await _principal(db)
    old = utcnow() - timedelta(seconds=200)
    async with db.session() as s:
        s.add(
            Decision(
                id="dec_dead",
                workspace_id=principal.workspace_id,
                principal_id=principal.id,
                member_id=principal.member_id,
                source="api",
                status="RUNNING",
                mode="STATE",
                questions=[],
                created_at=old,
                expires_at=old + timedelta(days=1),
            )
        )
        s.add(
            DecisionIdempotency(
                id="idem_dead",
                principal_id=principal.id,
                key="k-dead",
                request_sha256="e" * 64,
                decision_id="dec_dead",
                state="RUNNING",
                created_at=old,
                expires_at=old + timedelta(days=1),
            )
        )
    runner = DecisionRunner(db, lambda: None, timeout_seconds=10, context_tokens=64)
    big = {"state": {"text": "word " * 200}, "questions": REQ["questions"]}
    out = await runner.create(
        principal, prepare=lambda: validate_request(big), sha="e" * 64, key="k-dead", source="api"
    )
    assert out.error.code == "decision_context_too_large" and out.error.extra["decisionId"] != "dec_dead"
    dead = await runner.get(principal, "dec_dead")
    assert (dead["status"], dead["error"]["code"]) == ("FAILED", "decision_internal_error")


async def test_a_timed_out_decision_stops_judging_before_its_key_is_freed(db):
    """Three questions against an upstream that accepts and never answers (each judge call
    times out after 1.5 s): the runner's 0.3 s deadline stops the worker after the first
    question, and a retry with the same key starts only after that worker has ended."""
    principal = await _principal(db)
    srv, port = _silent_server()
    accepted: list = []

    def accept_all():
        while True:
            try:
                accepted.append(srv.accept())
            except OSError:
                return

    threading.Thread(target=accept_all, daemon=True).start()
    try:
        judge = OpenAIJudge(f"http://127.0.0.1:{port}/v1", "m", timeout=1.5)
        runner = DecisionRunner(db, lambda: judge, timeout_seconds=0.3)
        req = {"state": {"m": "x"}, "questions": [dict(REQ["questions"][0], name=f"q{i}") for i in range(3)]}
        first = await runner.create(
            principal, prepare=lambda: validate_request(req), sha="e" * 64, key="k-slow", source="api"
        )
        assert first.error.code == "decision_timeout" and first.error.http_status == 504
        # when the runner answers, its worker has finished: the upstream call is closed, not in flight
        conn = accepted[0][0]
        conn.settimeout(0.3)
        closed = False
        try:
            while conn.recv(65536):
                pass
            closed = True
        except TimeoutError:
            closed = False
        assert closed, "the timed-out judge call was still in flight when the decision returned"
        await asyncio.sleep(2.0)  # a worker left running would open more upstream calls here
        assert len(accepted) == 1
    finally:
        srv.close()
        for conn, _ in accepted:  # else each is a ResourceWarning in whatever test collects it
            conn.close()


async def test_a_decision_whose_key_was_taken_over_leaves_the_new_holders_key_alone(db):
    """A decision still running when its key record is taken over because its lease lapsed (a
    stalled process) must not release or finish the new holder's record when it ends. Before: its
    cancellation deleted the new holder's stored outcome, so the key ran a third time."""
    from datetime import timedelta

    from sqlalchemy import select, update

    from cairn.app.core.ids import utcnow
    from cairn.app.core.models import Decision, DecisionIdempotency

    principal = await _principal(db)
    srv, port = _silent_server()
    try:
        judge = OpenAIJudge(f"http://127.0.0.1:{port}/v1", "m", timeout=30)
        slow = DecisionRunner(db, lambda: judge, timeout_seconds=30)
        task = asyncio.create_task(
            slow.create(principal, prepare=lambda: validate_request(REQ), sha="f" * 64, key="k-over", source="api")
        )
        for _ in range(100):
            await asyncio.sleep(0.05)
            async with db.session() as s:
                if (
                    await s.execute(
                        select(Decision).where(Decision.principal_id == principal.id, Decision.judge_runs == 1)
                    )
                ).first():
                    break
        async with db.session() as s:  # as if its process had stopped renewing the lease
            await s.execute(
                update(Decision)
                .where(Decision.principal_id == principal.id, Decision.judge_runs == 1)
                .values(lease_expires_at=utcnow() - timedelta(seconds=1))
            )
        fast = DecisionRunner(db, lambda: None, timeout_seconds=10, context_tokens=64)
        big = {"state": {"text": "word " * 200}, "questions": REQ["questions"]}
        second = await fast.create(
            principal, prepare=lambda: validate_request(big), sha="9" * 64, key="k-over", source="api"
        )
        assert second.error.code == "decision_context_too_large"
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        async with db.session() as s:
            rec = (await s.execute(select(DecisionIdempotency).where(DecisionIdempotency.key == "k-over"))).scalar_one()
        assert (rec.decision_id, rec.state) == (second.error.extra["decisionId"], "DONE")
        third = await fast.create(
            principal, prepare=lambda: validate_request(big), sha="9" * 64, key="k-over", source="api"
        )
        assert third.replayed and third.error.extra["decisionId"] == second.error.extra["decisionId"]
    finally:
        srv.close()
