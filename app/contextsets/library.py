"""Library reads (SPEC §4, scope ``context:read``): list and get sets, look up definitions, match
verified answers — by word match only (:mod:`app.contextsets.matching`), no embedding cost.

Scope: a bound credential sees only its bound set (naming another is
``AGENT_CONTEXT_SET_SCOPE_REFUSED``; omitting ``contextSetId`` means the bound set; a
deactivated bound set is refused at authentication). Agents read active sets only
(``AGENT_CONTEXT_SET_INACTIVE`` for an inactive one); members (editors curating) also see
inactive sets. Without ``contextSetId`` an unbound caller's lookups search every active
set of the workspace.

Limits: ``limit`` 1–50 (default 10); ``query`` ≤ 500 characters; ``term`` 1–200;
``question`` 1–1,000. Outside → ``BAD_USER_INPUT`` naming the field and the limit.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from cairn.app.contextsets.loading import check_set_access, load_set, load_set_cached
from cairn.app.contextsets.matching import INDEXES, AnswerIndex, DefinitionIndex, terms
from cairn.app.contextsets.types import (
    QUERY_MAX,
    QUESTION_MAX,
    TERM_MAX,
    ContextSetView,
    Entry,
    validate_limit,
)
from cairn.app.core.errors import BadInput, ContextSetInactive
from cairn.app.core.models import ContextSet
from cairn.app.core.text_rules import validate_identifier, validate_text
from cairn.app.governance import DatabasePort, Principal


@dataclass(frozen=True)
class DefinitionHit:
    """A definition found by :func:`lookup_definitions`."""

    context_set_id: str
    entry: Entry
    score: float
    matched_words: tuple[str, ...]


@dataclass(frozen=True)
class AnswerHit:
    """A verified answer found by :func:`match_verified_answers` (``coverage`` in 0–1)."""

    context_set_id: str
    entry: Entry
    score: float
    coverage: float
    matched_words: tuple[str, ...]


def _text(value: str, field: str, max_len: int) -> None:
    validate_text(value, field, max_len)
    if not value.strip():
        raise BadInput(f"{field} must contain non-whitespace text", field=field, limit=f"1-{max_len}")


def validate_list(query: str | None, limit: int) -> None:
    """``contextSets`` arguments (module doc limits)."""
    if query is not None:
        validate_text(query, "query", QUERY_MAX, min_len=0)
    validate_limit(limit)


def validate_lookup(term: str, context_set_id: str | None, limit: int) -> None:
    """``lookupDefinitions`` arguments (module doc limits)."""
    _text(term, "term", TERM_MAX)
    if context_set_id is not None:
        validate_identifier(context_set_id, "contextSetId")
    validate_limit(limit)


def validate_match(question: str, context_set_id: str | None, limit: int) -> None:
    """``matchVerifiedAnswers`` arguments (module doc limits)."""
    _text(question, "question", QUESTION_MAX)
    if context_set_id is not None:
        validate_identifier(context_set_id, "contextSetId")
    validate_limit(limit)


def _usable(principal: Principal, view: ContextSetView, field: str) -> None:
    if principal.is_agent and not view.active:
        raise ContextSetInactive(f"context set {view.id!r} ({view.name}) is deactivated", field=field)


async def _sets_for(s: AsyncSession, principal: Principal, set_id: str | None) -> list[ContextSetView]:
    """The sets a lookup searches (module doc)."""
    if set_id is None and principal.context_set_id is not None:
        set_id = principal.context_set_id
    if set_id is not None:
        check_set_access(principal, set_id)
        view = await load_set_cached(s, principal.workspace_id, set_id)
        _usable(principal, view, "contextSetId")
        return [view]
    ids = (
        await s.execute(
            select(col(ContextSet.id))
            .where(col(ContextSet.workspace_id) == principal.workspace_id, col(ContextSet.active).is_(True))
            .order_by(ContextSet.name, ContextSet.id)
        )
    ).scalars()
    return [await load_set_cached(s, principal.workspace_id, i) for i in list(ids)]


def definition_index(view: ContextSetView) -> tuple[DefinitionIndex, list[Entry]]:
    """The (cached) definition index of a set version and its entries in index order."""
    entries = view.of("DEFINITION")
    key = (view.id, view.version, "DEFINITION")
    idx = INDEXES.get(key)
    if idx is None:
        idx = DefinitionIndex([(e.key, e.aliases, e.value) for e in entries])
        INDEXES.put(key, idx)
    assert isinstance(idx, DefinitionIndex)
    return idx, entries


def answer_index(view: ContextSetView) -> tuple[AnswerIndex, list[Entry]]:
    """The (cached) verified-answer index of a set version and its entries in index order."""
    entries = view.of("VERIFIED_ANSWER")
    key = (view.id, view.version, "VERIFIED_ANSWER")
    idx = INDEXES.get(key)
    if idx is None:
        idx = AnswerIndex([e.key for e in entries], [e.value for e in entries])
        INDEXES.put(key, idx)
    assert isinstance(idx, AnswerIndex)
    return idx, entries


async def list_context_sets(
    services: DatabasePort, principal: Principal, query: str | None, limit: int
) -> list[ContextSetView]:
    """Sets of the workspace, best word match of ``query`` over name and description first
    (ties and no query: by name); a bound credential sees only its set, agents only active ones.

    Raises:
        BadInput: a limit.
    """
    validate_list(query, limit)
    async with services.db.session() as s:
        stmt = select(col(ContextSet.id)).where(col(ContextSet.workspace_id) == principal.workspace_id)
        if principal.context_set_id is not None:
            stmt = stmt.where(col(ContextSet.id) == principal.context_set_id)
        if principal.is_agent:
            stmt = stmt.where(col(ContextSet.active).is_(True))
        ids = list((await s.execute(stmt.order_by(ContextSet.name, ContextSet.id))).scalars())
        views = [await load_set(s, principal.workspace_id, i) for i in ids]
    if query and query.strip():
        q = set(terms(query))
        scored = []
        for v in views:
            have = set(terms(f"{v.name} {v.description}"))
            hit = len(q & have)
            if hit:
                scored.append((-hit, v.name, v.id, v))
        views = [x[3] for x in sorted(scored, key=lambda x: x[:3])]
    return views[:limit]


async def get_context_set(services: DatabasePort, principal: Principal, set_id: str | None) -> ContextSetView:
    """One set (``set_id``, else the bound set).

    Raises:
        BadInput: no id and not bound. NotFound: no such set. ContextSetScopeRefused: another
        set than the bound one. ContextSetInactive: an agent reading an inactive set.
    """
    if set_id is None:
        if principal.context_set_id is None:
            raise BadInput("contextSetId is required (this caller is not bound to a context set)", field="contextSetId")
        set_id = principal.context_set_id
    validate_identifier(set_id, "contextSetId")
    check_set_access(principal, set_id)
    async with services.db.session() as s:
        view = await load_set(s, principal.workspace_id, set_id)
    _usable(principal, view, "contextSetId")
    return view


async def lookup_definitions(
    services: DatabasePort, principal: Principal, term: str, set_id: str | None, limit: int
) -> list[DefinitionHit]:
    """Definitions whose term or alias matches ``term`` (scores in :mod:`~app.contextsets.matching`),
    best first across the searched sets (ties: set name, position).

    Raises:
        BadInput: a limit. NotFound / ContextSetScopeRefused / ContextSetInactive: the set.
    """
    validate_lookup(term, set_id, limit)
    async with services.db.session() as s:
        views = await _sets_for(s, principal, set_id)
    hits: list[tuple[float, str, int, DefinitionHit]] = []
    for v in views:
        idx, entries = definition_index(v)
        for m in idx.lookup(term, limit):
            e = entries[m.index]
            hits.append((-m.score, v.name, e.position, DefinitionHit(v.id, e, m.score, m.matched_words)))
    hits.sort(key=lambda x: x[:3])
    return [h[3] for h in hits[:limit]]


async def match_verified_answers(
    services: DatabasePort, principal: Principal, question: str, set_id: str | None, limit: int
) -> list[AnswerHit]:
    """Verified answers ranked for ``question`` (BM25 over stored questions and answers, module
    :mod:`~app.contextsets.matching`), best first across the searched sets.

    Raises:
        BadInput: a limit. NotFound / ContextSetScopeRefused / ContextSetInactive: the set.
    """
    validate_match(question, set_id, limit)
    async with services.db.session() as s:
        views = await _sets_for(s, principal, set_id)
    hits: list[tuple[float, str, int, AnswerHit]] = []
    for v in views:
        idx, entries = answer_index(v)
        for m in idx.match(question, limit):
            e = entries[m.index]
            hits.append((-m.score, v.name, e.position, AnswerHit(v.id, e, m.score, m.coverage, m.matched_words)))
    hits.sort(key=lambda x: x[:3])
    return [h[3] for h in hits[:limit]]
