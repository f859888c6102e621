"""Decisions: create (with Idempotency-Key), run the judge, store, read back (SPEC §8).

Flow of :func:`create_decision` (shared by ``POST /api/v1/decisions`` and GraphQL):

1. With an ``Idempotency-Key``: purge expired records, then look the key up for this
   credential. Found → different body SHA-256: 409 ``idempotency_key_reused``; still
   running: 409 ``decision_in_progress`` (``decisionId``); done: the stored response is
   returned as it was (decision or error), nothing runs again.
2. Validate (``prepare()``); resolve the session (404 when missing, not the caller's, or
   archived). These are refusals *before acceptance*: no decision is created; with a key the
   error is stored and replayed.
3. Accept: insert the decision (``RUNNING``) and the key record in ONE transaction. The
   unique constraint on (principal, key) is the lock: of N concurrent identical requests
   exactly one inserts, the others get the in-progress 409 — across processes too.
4. Run: build the context, increment ``judge_runs``, score in a worker thread under the
   timeout (``decision_timeout_seconds``). Store ``COMPLETED`` + answers or ``FAILED`` + error;
   failures carry ``decisionId``.
5. Finish the key record: completed decisions and deterministic failures are stored for
   replay (validation 400, 404, 402 quota, 422 context, 500/502); *transient* failures
   (429 rate limited, 503 unavailable, 504 timeout, 499 cancelled) release the key, so a
   retry with the same key and body runs again (and creates a new decision; the failed one
   stays readable with ``status: FAILED``).

Retention: key records 24 h (``IDEMPOTENCY_TTL``); decisions 30 days in retaining
workspaces, 24 h in non-retaining ones; expired rows are purged on every create.
A running decision holds a lease its process renews (:mod:`app.decisions.lease`): once it
lapses (the process died), any read or retry marks the decision FAILED
``decision_internal_error`` and frees its key, so a retry runs again; should that process still
finish, its result is not stored, and it neither finishes nor releases a later key record.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from cairn.app.core.db import Database, rows_matched
from cairn.app.core.errors import CairnError, NotFound
from cairn.app.core.ids import as_utc, new_id, utcnow
from cairn.app.core.models import Decision, DecisionIdempotency, Workspace
from cairn.app.core.text_rules import validate_identifier
from cairn.app.decisions import sessions as session_service
from cairn.app.decisions.errors import (
    DecisionCancelled,
    DecisionContextReadFailed,
    DecisionInProgress,
    DecisionInputError,
    DecisionInternalError,
    JudgeError,
)
from cairn.app.decisions.idempotency import (  # noqa: F401 - two names re-exported for tests
    IDEMPOTENCY_TTL,
    Outcome,
    body_sha256,
    error_json,
    replay_or_conflict,
    validate_idempotency_key,
)
from cairn.app.decisions.judges import timeout_error
from cairn.app.decisions.judging import answer_all, session_context, state_context
from cairn.app.decisions.lease import LAPSED_MESSAGE, Heartbeat, fail_if_lapsed, is_lapsed, sweep_lapsed
from cairn.app.decisions.request import DecisionRequest
from cairn.app.governance import Principal
from cairn.app.observability import span

RETENTION_RETAINING = timedelta(days=30)
RETENTION_NON_RETAINING = timedelta(hours=24)
SESSION_MESSAGES_READ = 200


def decision_json(row: Decision) -> dict[str, Any]:
    """The public decision object (camelCase; times ISO-8601 UTC with ``Z``)."""

    def iso(v: datetime | None) -> str | None:
        return as_utc(v).isoformat().replace("+00:00", "Z") if v is not None else None

    return {
        "id": row.id,
        "sessionId": row.session_id,
        "source": row.source,
        "status": row.status,
        "questions": row.questions,
        "answers": row.answers or [],
        "context": {"mode": row.mode, **(row.context_info or {})},
        "error": row.error,
        "judge": row.judge,
        "judgeRuns": row.judge_runs,
        "createdAt": iso(row.created_at),
        "completedAt": iso(row.completed_at),
    }


class DecisionRunner:
    """Creates and reads decisions for one process.

    Args:
        db: The :class:`~app.core.db.Database`.
        get_judge: Returns the judge (built lazily by the caller).
        timeout_seconds: Deadline of one decision's judge work.
        context_tokens: Context budget in cl100k tokens.
        lease_seconds: A running decision's lease (:mod:`app.decisions.lease`), renewed every third.
    """

    def __init__(
        self,
        db: Database,
        get_judge: Callable[[], Any],
        *,
        timeout_seconds: float = 60.0,
        context_tokens: int = 1500,
        lease_seconds: float = 30.0,
    ) -> None:
        self.db = db
        self.get_judge = get_judge
        self.timeout_seconds = timeout_seconds
        self.context_tokens = context_tokens
        self.lease_seconds = lease_seconds

    async def _purge(self, s: AsyncSession) -> None:
        now = utcnow()
        await s.execute(delete(DecisionIdempotency).where(col(DecisionIdempotency.expires_at) < now))
        await s.execute(delete(Decision).where(col(Decision.expires_at) < now))

    async def _lookup(self, principal: Principal, key: str) -> DecisionIdempotency | None:
        async with self.db.session() as s:
            rec = (
                await s.execute(
                    select(DecisionIdempotency).where(
                        col(DecisionIdempotency.principal_id) == principal.id, col(DecisionIdempotency.key) == key
                    )
                )
            ).scalar_one_or_none()
            if rec is not None and rec.state == "RUNNING":
                running = await s.get(Decision, rec.decision_id) if rec.decision_id else None
                if running is None or is_lapsed(running, utcnow()):
                    # its process died: the decision is FAILED and the key freed (compare-and-set;
                    # a concurrent reader that did it first leaves nothing to do), then run again
                    if running is not None:
                        await fail_if_lapsed(s, running.id)
                    await s.execute(
                        delete(DecisionIdempotency).where(
                            col(DecisionIdempotency.id) == rec.id, col(DecisionIdempotency.state) == "RUNNING"
                        )
                    )
                    return None
            return rec

    async def _store_refusal(self, principal: Principal, key: str, sha: str, exc: CairnError) -> Outcome:
        now = utcnow()
        try:
            async with self.db.session() as s:
                s.add(
                    DecisionIdempotency(
                        id=new_id("idem"),
                        principal_id=principal.id,
                        key=key,
                        request_sha256=sha,
                        state="DONE",
                        response_status=exc.http_status,
                        response_body={"error": error_json(exc)},
                        created_at=now,
                        expires_at=now + IDEMPOTENCY_TTL,
                    )
                )
        except IntegrityError:
            rec = await self._lookup(principal, key)
            if rec is not None:
                return replay_or_conflict(rec, sha) or Outcome(error=exc)
        return Outcome(error=exc)

    async def create(
        self, principal: Principal, *, prepare: Callable[[], DecisionRequest], sha: str, key: str | None, source: str
    ) -> Outcome:
        """Create and run one decision (module doc, steps 1–5).

        Args:
            principal: The caller.
            prepare: Parses and validates the input (raises :class:`DecisionInputError`).
            sha: Fingerprint of the exact request (``body_sha256``).
            key: The validated Idempotency-Key, or None.
            source: ``api`` (HTTP) or ``graphql``.
        """
        if key is not None:
            async with self.db.session() as s:
                await self._purge(s)
            rec = await self._lookup(principal, key)
            if rec is not None:
                return replay_or_conflict(rec, sha)  # type: ignore[return-value]
        try:
            request = prepare()
            if request.session_id is not None:
                async with self.db.session() as s:
                    sk = request.session_key
                    sess = await session_service.get_session(
                        s, principal=principal, session_id=request.session_id, field=sk
                    )
                    if sess.archived_at is not None:
                        raise NotFound(f"{sk}: session {request.session_id} is archived", field=sk)
        except (DecisionInputError, NotFound) as exc:
            if key is None:
                return Outcome(error=exc)
            return await self._store_refusal(principal, key, sha, exc)

        now = utcnow()
        async with self.db.session() as s:
            ws = await s.get(Workspace, principal.workspace_id)
            retention = RETENTION_RETAINING if ws is not None and ws.retaining else RETENTION_NON_RETAINING
        row = Decision(
            id=new_id("dec"),
            workspace_id=principal.workspace_id,
            principal_id=principal.id,
            member_id=principal.member_id,
            session_id=request.session_id,
            source=source,
            status="RUNNING",
            mode=request.mode,
            questions=[dict(q.raw) for q in request.questions],
            created_at=now,
            expires_at=now + retention,
            lease_expires_at=now + timedelta(seconds=self.lease_seconds),
        )
        try:
            async with self.db.session() as s:
                s.add(row)
                if key is not None:
                    s.add(
                        DecisionIdempotency(
                            id=new_id("idem"),
                            principal_id=principal.id,
                            key=key,
                            request_sha256=sha,
                            decision_id=row.id,
                            state="RUNNING",
                            created_at=now,
                            expires_at=now + IDEMPOTENCY_TTL,
                        )
                    )
        except IntegrityError:
            rec = await self._lookup(principal, key or "")
            if rec is None:  # the winner released a transient failure in between: report in progress
                return Outcome(
                    error=DecisionInProgress("a concurrent request with this Idempotency-Key just finished; retry")
                )
            return replay_or_conflict(rec, sha)  # type: ignore[return-value]

        try:
            async with Heartbeat(self.db, row.id, self.lease_seconds):
                outcome = await self._run(principal, row, request)
        except asyncio.CancelledError:  # 499: the decision is FAILED; free the key for a retry
            if key is not None:
                await asyncio.shield(self._release_key(principal, key, row.id))
            raise
        if key is not None:
            await self._finish_key(principal, key, outcome, row.id)
        return outcome

    @staticmethod
    def _key_of(principal: Principal, key: str, decision_id: str) -> tuple:
        # the key record of THIS decision: after a takeover (see _lookup) the key belongs to
        # another decision, which this one must neither finish nor release
        return (
            DecisionIdempotency.principal_id == principal.id,
            DecisionIdempotency.key == key,
            DecisionIdempotency.decision_id == decision_id,
        )

    async def _release_key(self, principal: Principal, key: str, decision_id: str) -> None:
        async with self.db.session() as s:
            await s.execute(delete(DecisionIdempotency).where(*self._key_of(principal, key, decision_id)))

    async def _run(self, principal: Principal, row: Decision, request: DecisionRequest) -> Outcome:
        error: CairnError | None = None
        answers = None
        info: dict[str, Any] = {}
        try:
            if request.state is not None:
                context, info = state_context(request.state, self.context_tokens)
            else:
                try:
                    async with self.db.session() as s:
                        msgs = await session_service.recent_messages(
                            s, session_id=row.session_id or "", limit=SESSION_MESSAGES_READ
                        )
                        pairs = [(m.role, m.content) for m in msgs]
                except Exception:  # noqa: BLE001 - the read itself failed
                    raise DecisionContextReadFailed("reading the session's messages failed") from None
                context, info = session_context(pairs, self.context_tokens)
            judge = self.get_judge()
            row.judge = judge.name
            async with self.db.session() as s:
                await s.execute(
                    update(Decision)
                    .where(col(Decision.id) == row.id)
                    .values(judge_runs=Decision.judge_runs + 1, judge=judge.name)
                )
            row.judge_runs += 1
            # the judge's work in a trace span (its thread inherits it; a no-op with tracing off)
            with span("decision.judge", {"cairn.judge": judge.name, "cairn.decision_id": row.id}):
                work = asyncio.ensure_future(
                    asyncio.to_thread(answer_all, judge, request, context, time.monotonic() + self.timeout_seconds)
                )
                try:
                    answers = await asyncio.wait_for(asyncio.shield(work), timeout=self.timeout_seconds)
                except TimeoutError:
                    # the worker thread stops at its next question (answer_all's deadline); wait for
                    # it, so the Idempotency-Key is freed only when no judge run is left behind
                    await asyncio.gather(work, return_exceptions=True)
                    raise timeout_error(self.timeout_seconds) from None
        except asyncio.CancelledError:
            error = DecisionCancelled("the decision request was cancelled", transient=True)
            await asyncio.shield(self._save(row, info, None, error))
            raise
        except CairnError as exc:
            error = exc
        except Exception:
            import logging

            logging.getLogger("cairn.decisions").exception("decision %s failed", row.id)
            error = DecisionInternalError("the decision failed inside Cairn; quote the decision id when reporting it")
        if not await self._save(row, info, answers, error):  # its lease lapsed: a reader marked it FAILED
            error = DecisionInternalError(LAPSED_MESSAGE)
        if error is not None:
            error.extra["decisionId"] = row.id
            return Outcome(error=error)
        return Outcome(decision=decision_json(row))

    async def _save(
        self, row: Decision, info: dict[str, Any], answers: list[dict[str, Any]] | None, error: CairnError | None
    ) -> bool:
        """Store the result on a still-``RUNNING`` decision; False (``row`` then holds the stored
        record) when a reader had marked it FAILED because its lease lapsed."""
        status = "FAILED" if error is not None else "COMPLETED"
        stored_error = {"code": error.code, "message": error.message} if error is not None else None
        async with self.db.session() as s:
            result = await s.execute(
                update(Decision)
                .where(col(Decision.id) == row.id, col(Decision.status) == "RUNNING")
                .values(status=status, answers=answers, context_info=info, error=stored_error, completed_at=utcnow())
                .execution_options(synchronize_session=False)
            )
            stored = await s.get(Decision, row.id, populate_existing=True)
        if stored is not None:
            for name in ("status", "answers", "context_info", "error", "completed_at", "lease_expires_at"):
                setattr(row, name, getattr(stored, name))
        return rows_matched(result) == 1

    async def _finish_key(self, principal: Principal, key: str, outcome: Outcome, decision_id: str) -> None:
        async with self.db.session() as s:
            where = self._key_of(principal, key, decision_id)
            if isinstance(outcome.error, JudgeError) and outcome.error.transient:
                await s.execute(delete(DecisionIdempotency).where(*where))
                return
            if outcome.decision is not None:
                body: dict[str, Any] = {"decision": outcome.decision}
                status = 200
            elif outcome.error is not None:
                body, status = {"error": error_json(outcome.error)}, outcome.error.http_status
            else:
                raise RuntimeError("an outcome holds a decision or an error")
            await s.execute(
                update(DecisionIdempotency)
                .where(*where)
                .values(state="DONE", response_status=status, response_body=body)
            )

    async def get(self, principal: Principal, decision_id: str) -> dict[str, Any]:
        """A decision of the caller's workspace made by the same member (failed ones included).

        A ``RUNNING`` decision whose lease lapsed (its process died) is marked FAILED first
        (:func:`app.decisions.lease.fail_if_lapsed`; concurrent readers agree).

        Raises:
            BadInput: ``decision_id`` is not an id. NotFound: unknown id, another member's, or purged.
        """
        validate_identifier(decision_id, "id")
        async with self.db.session() as s:
            row = await s.get(Decision, decision_id)
            if row is None or row.workspace_id != principal.workspace_id or row.member_id != principal.member_id:
                raise NotFound(f"no decision {decision_id!r} is accessible to this caller", field="id")
            if is_lapsed(row, utcnow()):
                await fail_if_lapsed(s, decision_id)
                fresh = await s.get(Decision, decision_id, populate_existing=True)
                if fresh is None:  # purged meanwhile
                    raise NotFound(f"no decision {decision_id!r} is accessible to this caller", field="id")
                row = fresh
        return decision_json(row)

    async def sweep_lapsed(self) -> int:
        """Mark every running decision whose lease lapsed FAILED (start-up); how many it marked."""
        return await sweep_lapsed(self.db)

    async def judge_runs(self, decision_id: str) -> int:
        """How many times the judge ran for a decision (0 when unknown)."""
        async with self.db.session() as s:
            row = await s.get(Decision, decision_id)
        return row.judge_runs if row else 0
