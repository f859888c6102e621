"""Context-set services: one function per GraphQL operation, ``fn(services, principal, request)``.

``request`` is a frozen dataclass of the operation's input that validates itself when built
(``BadInput`` naming the field and the limit; GraphQL and MCP only convert to it, and the
governance adapter builds it in its validate step); each function opens and commits
its own session (in :mod:`app.contextsets.library` for reads by word match,
:mod:`app.contextsets.store` for curation) and returns domain objects, which the GraphQL
layer (``resolvers/contextsets.py``) converts.

``services`` is the process's :class:`app.context.Services` (only ``db`` is used; not
imported here: ``app.context`` imports the packages).
"""

from __future__ import annotations

from dataclasses import InitVar, dataclass

from cairn.app.contextsets import library, store
from cairn.app.contextsets.library import AnswerHit, DefinitionHit, validate_list, validate_lookup, validate_match
from cairn.app.contextsets.types import (
    READ_LIMIT_DEFAULT,
    ContextSetView,
    ContextSetWrite,
    VersionView,
    validate_limit,
    validate_write,
)
from cairn.app.core.errors import BadInput
from cairn.app.core.text_rules import validate_identifier
from cairn.app.governance import DatabasePort, Principal


@dataclass(frozen=True)
class ListContextSetsRequest:
    """``contextSets``: word match over name and description (``query`` ≤ 500 characters; ``limit`` 1–50)."""

    query: str | None = None
    limit: int = READ_LIMIT_DEFAULT

    def __post_init__(self) -> None:
        validate_list(self.query, self.limit)


@dataclass(frozen=True)
class GetContextSetRequest:
    """``contextSet``: one set (None: the credential's bound set)."""

    context_set_id: str | None = None

    def __post_init__(self) -> None:
        if self.context_set_id is not None:
            validate_identifier(self.context_set_id, "contextSetId")


@dataclass(frozen=True)
class LookupDefinitionsRequest:
    """``lookupDefinitions``: ``term`` 1–200 characters; ``context_set_id`` None = the bound set, else every active set."""

    term: str
    context_set_id: str | None = None
    limit: int = READ_LIMIT_DEFAULT

    def __post_init__(self) -> None:
        validate_lookup(self.term, self.context_set_id, self.limit)


@dataclass(frozen=True)
class MatchVerifiedAnswersRequest:
    """``matchVerifiedAnswers``: ``question`` 1–1,000 characters; sets as :class:`LookupDefinitionsRequest`."""

    question: str
    context_set_id: str | None = None
    limit: int = READ_LIMIT_DEFAULT

    def __post_init__(self) -> None:
        validate_match(self.question, self.context_set_id, self.limit)


@dataclass(frozen=True)
class ContextSetVersionsRequest:
    """``contextSetVersions``: a set's recorded changes, newest first (``limit`` 1–50)."""

    context_set_id: str
    limit: int = READ_LIMIT_DEFAULT

    def __post_init__(self) -> None:
        validate_identifier(self.context_set_id, "contextSetId")
        validate_limit(self.limit)


@dataclass(frozen=True)
class CreateContextSetRequest:
    """``createContextSet``: every field of ``write`` (``name`` required); ``field_prefix``: the
    transport's path to the input (GraphQL ``input``), named in errors."""

    write: ContextSetWrite
    field_prefix: InitVar[str] = "input"

    def __post_init__(self, field_prefix: str) -> None:
        validate_write(self.write, field_prefix, creating=True)


@dataclass(frozen=True)
class UpdateContextSetRequest:
    """``updateContextSet``: the set's id and the fields to replace (at least one)."""

    context_set_id: str
    write: ContextSetWrite
    field_prefix: InitVar[str] = "input"

    def __post_init__(self, field_prefix: str) -> None:
        validate_identifier(self.context_set_id, "id")
        if self.write == ContextSetWrite():
            raise BadInput(f"{field_prefix} must change at least one field", field=field_prefix)
        validate_write(self.write, field_prefix)


async def list_context_sets(
    services: DatabasePort, principal: Principal, request: ListContextSetsRequest
) -> list[ContextSetView]:
    """Sets of the workspace (:func:`app.contextsets.library.list_context_sets`).

    Raises:
        BadInput: a limit.
    """
    return await library.list_context_sets(services, principal, request.query, request.limit)


async def get_context_set(
    services: DatabasePort, principal: Principal, request: GetContextSetRequest
) -> ContextSetView:
    """One set (:func:`app.contextsets.library.get_context_set`).

    Raises:
        BadInput: no id and not bound. NotFound. ContextSetScopeRefused. ContextSetInactive.
    """
    return await library.get_context_set(services, principal, request.context_set_id)


async def lookup_definitions(
    services: DatabasePort, principal: Principal, request: LookupDefinitionsRequest
) -> list[DefinitionHit]:
    """Definitions matching a term, best first (:func:`app.contextsets.library.lookup_definitions`).

    Raises:
        BadInput: a limit. NotFound / ContextSetScopeRefused / ContextSetInactive: the set.
    """
    return await library.lookup_definitions(services, principal, request.term, request.context_set_id, request.limit)


async def match_verified_answers(
    services: DatabasePort, principal: Principal, request: MatchVerifiedAnswersRequest
) -> list[AnswerHit]:
    """Verified answers ranked for a question (:func:`app.contextsets.library.match_verified_answers`).

    Raises:
        BadInput: a limit. NotFound / ContextSetScopeRefused / ContextSetInactive: the set.
    """
    return await library.match_verified_answers(
        services, principal, request.question, request.context_set_id, request.limit
    )


async def context_set_versions(
    services: DatabasePort, principal: Principal, request: ContextSetVersionsRequest
) -> list[VersionView]:
    """A set's recorded changes, newest first (:func:`app.contextsets.store.context_set_versions`).

    Raises:
        NotFound: no such set. ContextSetScopeRefused: a bound credential asking for another set.
    """
    return await store.context_set_versions(services, principal, request.context_set_id, request.limit)


async def create_context_set(
    services: DatabasePort, principal: Principal, request: CreateContextSetRequest
) -> ContextSetView:
    """Create a set, version 1 (:func:`app.contextsets.store.create_context_set`).

    Raises:
        BadInput: a limit. NotFound: a scope id or reference. ContextSetNameTaken,
        ContextSetLimit (409).
    """
    return await store.create_context_set(services, principal, request.write)


async def update_context_set(
    services: DatabasePort, principal: Principal, request: UpdateContextSetRequest
) -> ContextSetView:
    """Change a set; a new version is recorded (:func:`app.contextsets.store.update_context_set`).

    Raises:
        NotFound: no such set or a reference. BadInput / ContextSetNameTaken: as creation.
    """
    return await store.update_context_set(services, principal, request.context_set_id, request.write)
