"""Context-set services: one function per GraphQL operation, ``fn(services, principal, request)``.

``request`` is a frozen dataclass of the operation's input; each function opens and commits
its own session (in :mod:`app.contextsets.library` for reads by word match,
:mod:`app.contextsets.store` for curation) and returns domain objects, which the GraphQL
layer (``resolvers/contextsets.py``) converts.

``services`` is the process's :class:`app.context.Services` (only ``db`` is used; not
imported here: ``app.context`` imports the packages).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cairn.app.contextsets import library, store
from cairn.app.contextsets.library import AnswerHit, DefinitionHit
from cairn.app.contextsets.types import READ_LIMIT_DEFAULT, ContextSetView, ContextSetWrite, VersionView
from cairn.app.governance import Principal


@dataclass(frozen=True)
class ListContextSetsRequest:
    """``contextSets``: word match over name and description (``query`` ≤ 500 characters; ``limit`` 1–50)."""

    query: str | None = None
    limit: int = READ_LIMIT_DEFAULT


@dataclass(frozen=True)
class GetContextSetRequest:
    """``contextSet``: one set (None: the credential's bound set)."""

    context_set_id: str | None = None


@dataclass(frozen=True)
class LookupDefinitionsRequest:
    """``lookupDefinitions``: ``term`` 1–200 characters; ``context_set_id`` None = the bound set, else every active set."""

    term: str
    context_set_id: str | None = None
    limit: int = READ_LIMIT_DEFAULT


@dataclass(frozen=True)
class MatchVerifiedAnswersRequest:
    """``matchVerifiedAnswers``: ``question`` 1–1,000 characters; sets as :class:`LookupDefinitionsRequest`."""

    question: str
    context_set_id: str | None = None
    limit: int = READ_LIMIT_DEFAULT


@dataclass(frozen=True)
class ContextSetVersionsRequest:
    """``contextSetVersions``: a set's recorded changes, newest first (``limit`` 1–50)."""

    context_set_id: str
    limit: int = READ_LIMIT_DEFAULT


@dataclass(frozen=True)
class UpdateContextSetRequest:
    """``updateContextSet``: the set's id and the fields to replace."""

    context_set_id: str
    write: ContextSetWrite


async def list_context_sets(
    services: Any, principal: Principal, request: ListContextSetsRequest
) -> list[ContextSetView]:
    """Sets of the workspace (:func:`app.contextsets.library.list_context_sets`).

    Raises:
        BadInput: a limit.
    """
    return await library.list_context_sets(services, principal, request.query, request.limit)


async def get_context_set(services: Any, principal: Principal, request: GetContextSetRequest) -> ContextSetView:
    """One set (:func:`app.contextsets.library.get_context_set`).

    Raises:
        BadInput: no id and not bound. NotFound. ContextSetScopeRefused. ContextSetInactive.
    """
    return await library.get_context_set(services, principal, request.context_set_id)


async def lookup_definitions(
    services: Any, principal: Principal, request: LookupDefinitionsRequest
) -> list[DefinitionHit]:
    """Definitions matching a term, best first (:func:`app.contextsets.library.lookup_definitions`).

    Raises:
        BadInput: a limit. NotFound / ContextSetScopeRefused / ContextSetInactive: the set.
    """
    return await library.lookup_definitions(services, principal, request.term, request.context_set_id, request.limit)


async def match_verified_answers(
    services: Any, principal: Principal, request: MatchVerifiedAnswersRequest
) -> list[AnswerHit]:
    """Verified answers ranked for a question (:func:`app.contextsets.library.match_verified_answers`).

    Raises:
        BadInput: a limit. NotFound / ContextSetScopeRefused / ContextSetInactive: the set.
    """
    return await library.match_verified_answers(
        services, principal, request.question, request.context_set_id, request.limit
    )


async def context_set_versions(
    services: Any, principal: Principal, request: ContextSetVersionsRequest
) -> list[VersionView]:
    """A set's recorded changes, newest first (:func:`app.contextsets.store.context_set_versions`).

    Raises:
        NotFound: no such set. ContextSetScopeRefused: a bound credential asking for another set.
    """
    return await store.context_set_versions(services, principal, request.context_set_id, request.limit)


async def create_context_set(services: Any, principal: Principal, request: ContextSetWrite) -> ContextSetView:
    """Create a set, version 1 (:func:`app.contextsets.store.create_context_set`).

    Raises:
        BadInput: a limit. NotFound: a scope id or reference. ContextSetNameTaken,
        ContextSetLimit (409).
    """
    return await store.create_context_set(services, principal, request)


async def update_context_set(services: Any, principal: Principal, request: UpdateContextSetRequest) -> ContextSetView:
    """Change a set; a new version is recorded (:func:`app.contextsets.store.update_context_set`).

    Raises:
        NotFound: no such set or a reference. BadInput / ContextSetNameTaken: as creation.
    """
    return await store.update_context_set(services, principal, request.context_set_id, request.write)
