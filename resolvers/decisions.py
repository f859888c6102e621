"""Decisions and agent sessions over GraphQL (SPEC §8).

``createDecision`` runs the same validator as ``POST /api/v1/decisions``: the typed input is
rebuilt as a dict (an omitted field is absent, an explicit ``null`` stays ``null``) and
``state`` (a JSON scalar) gets the body limits. ``idempotencyKey`` is the Idempotency-Key;
the "same body" fingerprint is the SHA-256 of the input as canonical JSON (sorted keys),
because a GraphQL request's bytes also hold the query text.
"""

from __future__ import annotations

import json
from datetime import datetime
from enum import Enum
from typing import Any

import strawberry
from strawberry.scalars import JSON
from strawberry.types.unset import UNSET

from cairn.app import decisions as session_service
from cairn.app.core.errors import BadInput
from cairn.app.core.text_rules import validate_identifier
from cairn.app.decisions import (
    DecisionSubmission,
    NewSession,
    SessionAppend,
    SessionList,
    SessionRead,
    SessionView,
    body_sha256,
    check_json_value,
    validate_idempotency_key,
    validate_request,
    validate_session_id,
)
from cairn.app.governance import Governed, Principal
from cairn.resolvers.types import Info


@strawberry.enum(description="CHOICE picks one of choices[].value; SCORE picks one of levels[] and returns its score.")
class DecisionQuestionType(Enum):
    CHOICE = "CHOICE"
    SCORE = "SCORE"


@strawberry.input(description="A candidate value: a non-empty string or a boolean (numbers and null are refused).")
class DecisionChoiceInput:
    value: JSON | None = UNSET
    description: str | None = UNSET


@strawberry.input(description="A scoring level: non-empty label and a finite score.")
class DecisionLevelInput:
    label: str | None = UNSET
    score: float | None = UNSET
    description: str | None = UNSET


@strawberry.input(description="One question: CHOICE with 2–32 choices or SCORE with 2–32 levels.")
class DecisionQuestionInput:
    type: DecisionQuestionType
    instructions: str | None = UNSET
    name: str | None = strawberry.field(default=UNSET, description="Optional; non-empty, ≤ 128 bytes, unique.")
    choices: list[DecisionChoiceInput] | None = UNSET
    levels: list[DecisionLevelInput] | None = UNSET


@strawberry.input(description="Exactly one of state (non-empty JSON object) and sessionId; null is not absent.")
class CreateDecisionInput:
    questions: list[DecisionQuestionInput] | None = UNSET
    state: JSON | None = UNSET
    session_id: str | None = UNSET


@strawberry.type
class DecisionOptionProbability:
    value: JSON | None = strawberry.field(description="CHOICE: the choice value.")
    label: str | None = strawberry.field(description="SCORE: the level label.")
    score: float | None = strawberry.field(description="SCORE: the level score.")
    probability: float


@strawberry.type
class DecisionAnswer:
    type: str
    name: str | None
    value: JSON | None = strawberry.field(description="CHOICE: the chosen value (string or boolean).")
    score: float | None = strawberry.field(description="SCORE: the chosen level's score.")
    label: str | None = strawberry.field(description="SCORE: the chosen level's label.")
    probabilities: list[DecisionOptionProbability]


@strawberry.type
class DecisionContext:
    mode: str = strawberry.field(description="STATE | SESSION")
    tokens: int | None
    messages: int | None
    omitted_messages: int | None


@strawberry.type
class DecisionError:
    code: str
    message: str


@strawberry.type(description="A structured decision; status RUNNING | COMPLETED | FAILED.")
class Decision:
    id: strawberry.ID
    session_id: str | None
    source: str
    status: str
    questions: JSON
    answers: list[DecisionAnswer]
    context: DecisionContext
    error: DecisionError | None
    judge: str
    judge_runs: int
    created_at: datetime
    completed_at: datetime | None


@strawberry.input
class SessionMessageInput:
    role: str = strawberry.field(description="user | assistant | system | tool")
    content: str = strawberry.field(description="1–32,000 characters.")


@strawberry.type
class SessionMessage:
    ordinal: int
    role: str
    content: str
    created_at: datetime


@strawberry.type(description="An agent session of recent messages (decisions can run on it by sessionId).")
class AgentSession:
    id: strawberry.ID
    title: str | None
    message_count: int
    archived: bool
    created_at: datetime
    updated_at: datetime
    archived_at: datetime | None
    messages: list[SessionMessage] = strawberry.field(description="The newest messages, oldest first.")


def _to_decision(d: dict[str, Any]) -> Decision:
    ctx = d.get("context") or {}
    answers = []
    for a in d.get("answers") or []:
        answers.append(
            DecisionAnswer(
                type=a["type"],
                name=a.get("name"),
                value=a.get("value"),
                score=a.get("score"),
                label=a.get("label"),
                probabilities=[
                    DecisionOptionProbability(
                        value=p.get("value"), label=p.get("label"), score=p.get("score"), probability=p["probability"]
                    )
                    for p in a.get("probabilities", [])
                ],
            )
        )
    err = d.get("error")
    return Decision(
        id=d["id"],
        session_id=d.get("sessionId"),
        source=d["source"],
        status=d["status"],
        questions=d["questions"],
        answers=answers,
        context=DecisionContext(
            mode=ctx.get("mode", ""),
            tokens=ctx.get("tokens"),
            messages=ctx.get("messages"),
            omitted_messages=ctx.get("omittedMessages"),
        ),
        error=DecisionError(code=err["code"], message=err["message"]) if err else None,
        judge=d.get("judge", ""),
        judge_runs=d.get("judgeRuns", 0),
        created_at=datetime.fromisoformat(d["createdAt"].replace("Z", "+00:00")),
        completed_at=(
            datetime.fromisoformat(d["completedAt"].replace("Z", "+00:00")) if d.get("completedAt") else None
        ),
    )


def _present(obj: Any, names: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for attr, key in names.items():
        v = getattr(obj, attr)
        if v is not UNSET:
            out[key] = v
    return out


def input_as_dict(input: CreateDecisionInput) -> dict[str, Any]:
    """The GraphQL input as the wire-format dict (absent fields missing, nulls kept)."""
    body = _present(input, {"state": "state", "session_id": "sessionId", "questions": "questions"})
    if isinstance(body.get("questions"), list):
        qs = []
        for q in body["questions"]:
            d = _present(
                q,
                {
                    "type": "type",
                    "name": "name",
                    "instructions": "instructions",
                    "choices": "choices",
                    "levels": "levels",
                },
            )
            d["type"] = q.type.value
            if isinstance(d.get("choices"), list):
                d["choices"] = [_present(c, {"value": "value", "description": "description"}) for c in d["choices"]]
            if isinstance(d.get("levels"), list):
                d["levels"] = [
                    _present(lv, {"label": "label", "score": "score", "description": "description"})
                    for lv in d["levels"]
                ]
            qs.append(d)
        body["questions"] = qs
    return body


def _validate_create(input: CreateDecisionInput, idempotency_key: str | None = None) -> None:
    body = input_as_dict(input)
    if body.get("state") is not None:
        check_json_value(body["state"], "input.state")
    validate_request(body)
    if idempotency_key is not None:
        validate_idempotency_key([idempotency_key])


def _validate_id(id: str) -> None:
    validate_identifier(id, "id")


def _validate_session_create(title: str | None = None, messages: list[SessionMessageInput] | None = None) -> None:
    session_service.validate_title(title)
    if messages:
        session_service.validate_messages([session_service.MessageIn(m.role, m.content) for m in messages])


def _validate_append(session_id: str, messages: list[SessionMessageInput]) -> None:
    validate_session_id(session_id, error=BadInput)
    session_service.validate_messages([session_service.MessageIn(m.role, m.content) for m in messages])


def _validate_session_read(id: str, last_messages: int = 50) -> None:
    validate_session_id(id, "id", error=BadInput)
    if not 0 <= last_messages <= session_service.MAX_READ:
        raise BadInput(
            f"lastMessages must be 0–{session_service.MAX_READ}",
            field="lastMessages",
            limit=f"0-{session_service.MAX_READ}",
        )


def _validate_sessions(include_archived: bool = False, limit: int = 50) -> None:
    if not 1 <= limit <= session_service.MAX_READ:
        raise BadInput(
            f"limit must be 1–{session_service.MAX_READ}", field="limit", limit=f"1-{session_service.MAX_READ}"
        )


def _to_session(view: SessionView) -> AgentSession:
    row, messages = view.session, view.messages
    return AgentSession(
        id=strawberry.ID(row.id),
        title=row.title,
        message_count=row.message_count,
        archived=row.archived_at is not None,
        created_at=row.created_at,
        updated_at=row.updated_at,
        archived_at=row.archived_at,
        messages=[
            SessionMessage(ordinal=m.ordinal, role=m.role, content=m.content, created_at=m.created_at) for m in messages
        ],
    )


@strawberry.type
class DecisionQuery:
    @strawberry.field(
        description="A decision by id (failed ones too, with status FAILED and error).",
        extensions=[Governed("decision", validate=_validate_id)],
    )
    async def decision(self, info: Info, id: strawberry.ID, principal: Principal) -> Decision:
        return _to_decision(await session_service.read_decision(info.context.services, principal, id))

    @strawberry.field(
        description="One of your agent sessions with its newest messages (0–200, default 50).",
        extensions=[Governed("session", validate=_validate_session_read)],
    )
    async def session(
        self, info: Info, id: strawberry.ID, principal: Principal, last_messages: int = 50
    ) -> AgentSession:
        request = SessionRead(session_id=id, last_messages=last_messages)
        return _to_session(await session_service.read_session(info.context.services, principal, request))

    @strawberry.field(
        description="Your agent sessions, most recently updated first (no messages).",
        extensions=[Governed("sessions", validate=_validate_sessions)],
    )
    async def sessions(
        self, info: Info, principal: Principal, include_archived: bool = False, limit: int = 50
    ) -> list[AgentSession]:
        request = SessionList(include_archived=include_archived, limit=limit)
        return [
            _to_session(v) for v in await session_service.list_agent_sessions(info.context.services, principal, request)
        ]


@strawberry.type
class DecisionMutation:
    @strawberry.mutation(
        description="Run a structured decision over state or a session (SPEC §8).",
        extensions=[Governed("createDecision", validate=_validate_create)],
    )
    async def create_decision(
        self, info: Info, input: CreateDecisionInput, principal: Principal, idempotency_key: str | None = None
    ) -> Decision:
        body = input_as_dict(input)
        sha = body_sha256(json.dumps(body, sort_keys=True, ensure_ascii=False).encode("utf-8"))
        key = validate_idempotency_key([idempotency_key]) if idempotency_key is not None else None
        request = DecisionSubmission(body=body, sha256=sha, idempotency_key=key, source="graphql")
        outcome = await session_service.submit_decision(info.context.services, principal, request)
        if outcome.error is not None:
            raise outcome.error
        return _to_decision(outcome.decision or {})

    @strawberry.mutation(
        description="Start an agent session, optionally with its first messages.",
        extensions=[Governed("createSession", validate=_validate_session_create)],
    )
    async def create_session(
        self,
        info: Info,
        principal: Principal,
        title: str | None = None,
        messages: list[SessionMessageInput] | None = None,
    ) -> AgentSession:
        msgs = tuple(session_service.MessageIn(m.role, m.content) for m in messages or [])
        request = NewSession(title=title, messages=msgs)
        return _to_session(await session_service.start_session(info.context.services, principal, request))

    @strawberry.mutation(
        description="Append 1–100 messages to an unarchived session of yours.",
        extensions=[Governed("appendSessionMessages", validate=_validate_append)],
    )
    async def append_session_messages(
        self, info: Info, session_id: strawberry.ID, messages: list[SessionMessageInput], principal: Principal
    ) -> AgentSession:
        msgs = tuple(session_service.MessageIn(m.role, m.content) for m in messages)
        request = SessionAppend(session_id=session_id, messages=msgs)
        return _to_session(await session_service.append_to_session(info.context.services, principal, request))

    @strawberry.mutation(
        description="Archive a session: read-only, and refused as decision context (404).",
        extensions=[Governed("archiveSession", validate=_validate_session_read)],
    )
    async def archive_session(self, info: Info, id: strawberry.ID, principal: Principal) -> AgentSession:
        return _to_session(await session_service.close_session(info.context.services, principal, id))
