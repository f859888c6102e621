"""Decision input: the request/question validator (SPEC §8); raw-body parsing is
:mod:`app.decisions.body`.

Two steps, both pure (no I/O), shared by ``POST /api/v1/decisions`` and the GraphQL
``createDecision`` mutation:

1. :func:`parse_body` turns the raw HTTP body into a Python object, refusing what a plain
   ``json.loads`` would hide: duplicate keys (``object_pairs_hook``), ``NaN``/``Infinity``
   (``parse_constant``) and numbers outside the finite double range, bodies over 1 MiB
   (413), nesting over 16, more than 1,000 members in one object or array, control
   characters in strings other than ``\\n``, ``\\r``, ``\\t``, lone surrogates, non-UTF-8.
2. :func:`validate_request` checks the protocol structure: ``state`` XOR ``sessionId``
   (``null`` is not absent), case-sensitive field names, no unknown protocol fields
   (``model``, ``identity_id``, …), question / choice / level shapes. It takes the caller's
   :class:`Dialect`: GraphQL's (``sessionId``, ``CHOICE`` | ``SCORE``) by default, the HTTP
   wire format's (``session_id``, ``choice`` | ``score``; :data:`app.decisions.wire.WIRE`) on
   ``POST /api/v1/decisions``, so refusals name the fields the caller sent. The validated
   request is dialect-free (types ``CHOICE`` | ``SCORE``; stored questions carry those).

Every refusal is :class:`DecisionInputError` (400 ``invalid_decision_input``) naming the
field path (``questions[0].choices[1].value``) and, where one applies, the limit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from cairn.app.core.errors import CairnError
from cairn.app.core.text_rules import ErrorFactory, validate_identifier, validate_name
from cairn.app.decisions.body import _MAX_DOUBLE, DecisionInputError, _bad

MAX_QUESTIONS = 32
MIN_OPTIONS, MAX_OPTIONS = 2, 32
MAX_NAME_BYTES = 128
MAX_INSTRUCTIONS_CHARS = 4000
MAX_DESCRIPTION_CHARS = 2000
MAX_OPTION_CHARS = 500
MAX_SESSION_ID_BYTES = 256

TOP_LEVEL_FIELDS = ("state", "sessionId", "questions")
QUESTION_FIELDS = ("type", "name", "instructions", "choices", "levels")
CHOICE_FIELDS = ("value", "description")
LEVEL_FIELDS = ("label", "score", "description")
QUESTION_TYPES = ("CHOICE", "SCORE")
BOOL_TEXT = ["true", "false"]
"""How boolean choice values are shown to and scored by the judge (bench/decisions.py with
the served prompt and sum-PMI: ``true``/``false`` 79.5%, ``yes``/``no`` 70.5%)."""


@dataclass(frozen=True)
class Dialect:
    """The names a caller uses for the protocol's two dialect-dependent spellings.

    Attributes:
        session_key: The session id member (``sessionId`` in GraphQL, ``session_id`` on the wire).
        types: How CHOICE and SCORE are spelled, in that order (case-sensitive).
    """

    session_key: str = "sessionId"
    types: tuple[str, str] = QUESTION_TYPES


GRAPHQL = Dialect()


@dataclass(frozen=True)
class Option:
    """One choice (``value``) or level (``label`` + ``score``) of a question."""

    text: str
    value: str | bool | None = None
    score: float | int | None = None
    description: str | None = None


@dataclass(frozen=True)
class Question:
    """A validated question: ``type`` CHOICE or SCORE, its options in request order."""

    type: str
    name: str | None
    instructions: str
    options: tuple[Option, ...]
    raw: dict[str, Any] = field(compare=False, hash=False, default_factory=dict)


@dataclass(frozen=True)
class DecisionRequest:
    """A validated request: exactly one of ``state`` / ``session_id``, and the questions."""

    state: dict[str, Any] | None
    session_id: str | None
    questions: tuple[Question, ...]
    session_key: str = "sessionId"
    """How the caller spelled the session id (``field`` of a 404 on it)."""

    @property
    def mode(self) -> str:
        """``STATE`` or ``SESSION``."""
        return "STATE" if self.state is not None else "SESSION"


# ------------------------------------------------------------------------------- structure


def _unknown(obj: dict[str, Any], allowed: tuple[str, ...], path: str) -> None:
    for key in obj:
        if key not in allowed:
            hint = next((a for a in allowed if a.lower() == key.lower()), None)
            more = f" (field names are case-sensitive: did you mean {hint!r}?)" if hint else ""
            raise _bad(
                f"{path}{'.' if path else ''}{key} is not a field of this protocol{more}; allowed: "
                f"{', '.join(allowed)}",
                f"{path}{'.' if path else ''}{key}",
            )


def _text(obj: dict[str, Any], key: str, path: str, *, required: bool, max_chars: int) -> str | None:
    if key not in obj:
        if required:
            raise _bad(f"{path} is required", path)
        return None
    value = obj[key]
    if value is None:
        raise _bad(f"{path} is null; omit it or send a non-empty string (null is not the same as absent)", path)
    if not isinstance(value, str):
        raise _bad(f"{path} must be a string, not {type(value).__name__}", path)
    if not value.strip():
        raise _bad(f"{path} must not be empty", path)
    if len(value) > max_chars:
        raise _bad(f"{path} has {len(value)} characters; at most {max_chars}", path, limit=max_chars)
    return value


def validate_session_id(value: Any, path: str = "sessionId", *, error: ErrorFactory = DecisionInputError) -> str:
    """``sessionId``: 1–256 bytes, an identifier (:func:`app.core.text_rules.validate_identifier`), no ``/ \\ ? #``.

    Raises:
        DecisionInputError (or ``error``): naming ``path``.
    """

    def _bad(message: str, field: str, **extra: Any) -> CairnError:
        return error(message, field=field, **extra)

    if value is None:
        raise _bad(
            f"{path} is null; send a session id or omit it and send state (null is not the same as absent)", path
        )
    if not isinstance(value, str):
        raise _bad(f"{path} must be a string, not {type(value).__name__}", path)
    size = len(value.encode("utf-8", "surrogatepass"))
    if not 1 <= size <= MAX_SESSION_ID_BYTES:
        raise _bad(
            f"{path} must be 1–{MAX_SESSION_ID_BYTES} bytes (got {size})", path, limit=f"1-{MAX_SESSION_ID_BYTES}"
        )
    validate_identifier(value, path, MAX_SESSION_ID_BYTES, error=error)
    for i, ch in enumerate(value):
        if ch in "/\\?#":
            raise _bad(f"{path} must not contain / \\ ? # (found {ch!r} at offset {i})", path)
    return value


def _options(q: dict[str, Any], qtype: str, qpath: str, shown: str) -> tuple[Option, ...]:
    key, other = ("choices", "levels") if qtype == "CHOICE" else ("levels", "choices")
    if other in q:
        raise _bad(f"{qpath}.{other} is not allowed on a {shown} question (use {key})", f"{qpath}.{other}")
    path = f"{qpath}.{key}"
    if key not in q:
        raise _bad(f"{path} is required for a {shown} question", path)
    items = q[key]
    if not isinstance(items, list):
        raise _bad(f"{path} must be an array of {MIN_OPTIONS}–{MAX_OPTIONS} objects", path)
    if not MIN_OPTIONS <= len(items) <= MAX_OPTIONS:
        raise _bad(
            f"{path} has {len(items)} items; a question needs {MIN_OPTIONS}–{MAX_OPTIONS}",
            path,
            limit=f"{MIN_OPTIONS}-{MAX_OPTIONS}",
        )
    out: list[Option] = []
    seen: set[tuple[type, Any]] = set()
    for i, item in enumerate(items):
        ipath = f"{path}[{i}]"
        if not isinstance(item, dict):
            raise _bad(f"{ipath} must be an object", ipath)
        if qtype == "CHOICE":
            _unknown(item, CHOICE_FIELDS, ipath)
            if "value" not in item:
                raise _bad(f"{ipath}.value is required", f"{ipath}.value")
            value = item["value"]
            if value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)):
                kind = "null" if value is None else "a number"
                raise _bad(
                    f"{ipath}.value is {kind}; a choice value is a non-empty string or a boolean", f"{ipath}.value"
                )
            if isinstance(value, str):
                if not value.strip():
                    raise _bad(f"{ipath}.value must be a non-empty string", f"{ipath}.value")
                if len(value) > MAX_OPTION_CHARS:
                    raise _bad(
                        f"{ipath}.value has {len(value)} characters; at most {MAX_OPTION_CHARS}",
                        f"{ipath}.value",
                        limit=MAX_OPTION_CHARS,
                    )
            elif not isinstance(value, bool):
                raise _bad(f"{ipath}.value must be a non-empty string or a boolean", f"{ipath}.value")
            ident = (type(value), value)
            if ident in seen:
                raise _bad(
                    f"{ipath}.value {value!r} repeats an earlier choice; values are unique in a question",
                    f"{ipath}.value",
                )
            seen.add(ident)
            desc = _text(item, "description", f"{ipath}.description", required=False, max_chars=MAX_DESCRIPTION_CHARS)
            text = (BOOL_TEXT[0] if value else BOOL_TEXT[1]) if isinstance(value, bool) else value
            out.append(Option(text=text, value=value, description=desc))
        else:
            _unknown(item, LEVEL_FIELDS, ipath)
            label = _text(item, "label", f"{ipath}.label", required=True, max_chars=MAX_OPTION_CHARS)
            if "score" not in item:
                raise _bad(f"{ipath}.score is required", f"{ipath}.score")
            score = item["score"]
            if isinstance(score, bool) or not isinstance(score, (int, float)):
                raise _bad(f"{ipath}.score must be a finite number", f"{ipath}.score")
            if not math.isfinite(score) or abs(score) > _MAX_DOUBLE:
                raise _bad(f"{ipath}.score must be a finite number", f"{ipath}.score")
            ident = (str, label)
            if ident in seen:
                raise _bad(
                    f"{ipath}.label {label!r} repeats an earlier level; labels are unique in a question",
                    f"{ipath}.label",
                )
            seen.add(ident)
            desc = _text(item, "description", f"{ipath}.description", required=False, max_chars=MAX_DESCRIPTION_CHARS)
            out.append(Option(text=str(label), score=score, description=desc))
    return tuple(out)


def validate_request(body: dict[str, Any], dialect: Dialect = GRAPHQL) -> DecisionRequest:
    """Validate a parsed request object against the decision protocol (SPEC §8).

    Args:
        body: The parsed body (``parse_body``) or the GraphQL input rebuilt as a dict, where an
            absent field is a missing key and ``null`` is ``None``.
        dialect: The caller's spelling of ``sessionId`` and the question types (:class:`Dialect`).

    Returns:
        The validated :class:`DecisionRequest`.

    Raises:
        DecisionInputError: the first violation, naming its field path.
    """
    sk = dialect.session_key
    _unknown(body, ("state", sk, "questions"), "")
    has_state, has_session = "state" in body, sk in body
    if has_state and has_session:
        raise _bad(f"send exactly one of state and {sk}, not both (a null value counts as sent)", "state")
    if not has_state and not has_session:
        raise _bad(f"send exactly one of state (a non-empty JSON object) and {sk}", "state")
    state = session_id = None
    if has_state:
        state = body["state"]
        if state is None:
            raise _bad(
                f"state is null; send a non-empty JSON object, or omit state and send {sk} "
                "(null is not the same as absent)",
                "state",
            )
        if not isinstance(state, dict):
            raise _bad(f"state must be a JSON object, not {type(state).__name__}", "state")
        if not state:
            raise _bad("state must be a non-empty JSON object", "state")
        if "session_context" in state:
            raise _bad("state.session_context is reserved; rename that field", "state.session_context")
    else:
        session_id = validate_session_id(body[sk], sk)
    if "questions" not in body:
        raise _bad("questions is required", "questions")
    questions = body["questions"]
    if not isinstance(questions, list):
        raise _bad("questions must be an array of question objects", "questions")
    if not 1 <= len(questions) <= MAX_QUESTIONS:
        raise _bad(
            f"questions has {len(questions)} items; send 1–{MAX_QUESTIONS}", "questions", limit=f"1-{MAX_QUESTIONS}"
        )
    out: list[Question] = []
    names: set[str] = set()
    choice, score = dialect.types
    for i, q in enumerate(questions):
        qpath = f"questions[{i}]"
        if not isinstance(q, dict):
            raise _bad(f"{qpath} must be an object", qpath)
        _unknown(q, QUESTION_FIELDS, qpath)
        if "type" not in q:
            raise _bad(f"{qpath}.type is required ({choice} or {score})", f"{qpath}.type")
        shown = q["type"]
        if shown not in dialect.types:
            raise _bad(f"{qpath}.type must be {choice} or {score} (case-sensitive), not {shown!r}", f"{qpath}.type")
        qtype = QUESTION_TYPES[dialect.types.index(shown)]
        name = None
        if "name" in q:
            name = q["name"]
            npath = f"{qpath}.name"
            if name is None:
                raise _bad(f"{npath} is null; omit it or send a non-empty name (null is not the same as absent)", npath)
            if not isinstance(name, str) or not name:
                raise _bad(f"{npath} must be a non-empty string", npath)
            if len(name.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
                raise _bad(f"{npath} is over {MAX_NAME_BYTES} bytes", npath, limit=MAX_NAME_BYTES)
            validate_name(name, npath, MAX_NAME_BYTES, error=DecisionInputError)
            if any(ord(c) < 0x20 or ord(c) == 0x7F for c in name):
                raise _bad(f"{npath} must not contain control characters", npath)
            if name in names:
                raise _bad(f"{npath} {name!r} is used by an earlier question; names are unique in a request", npath)
            names.add(name)
        instructions = _text(
            q, "instructions", f"{qpath}.instructions", required=True, max_chars=MAX_INSTRUCTIONS_CHARS
        )
        out.append(
            Question(
                type=qtype,
                name=name,
                instructions=instructions or "",
                options=_options(q, qtype, qpath, shown),
                raw={**q, "type": qtype},
            )
        )
    return DecisionRequest(state=state, session_id=session_id, questions=tuple(out), session_key=sk)
