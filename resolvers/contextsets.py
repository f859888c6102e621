"""Context sets and library (SPEC §4): curation mutations (editors+) and word-match reads."""

from __future__ import annotations

from datetime import datetime

import strawberry
from strawberry.scalars import JSON

from cairn.app import contextsets as cs
from cairn.app.governance import Governed, Principal
from cairn.resolvers.packs import Trust
from cairn.resolvers.types import Info


@strawberry.type(
    description="A set's scope: retrieval and bound credentials see documents of these collections plus these documents."
)
class ContextSetScope:
    collection_ids: list[strawberry.ID]
    document_ids: list[strawberry.ID]


@strawberry.type(description="Where an approved answer comes from (a document, optionally one passage of it).")
class EntryCitation:
    document_id: strawberry.ID
    passage_id: strawberry.ID | None


@strawberry.type(description="Question → approved answer (trust APPROVED).")
class VerifiedAnswer:
    id: strawberry.ID
    position: int
    question: str
    answer: str
    citation: EntryCitation | None
    trust: Trust
    created_at: datetime
    created_by: strawberry.ID


@strawberry.type(description="Term → definition; aliases match like the term (case- and width-folded).")
class Definition:
    id: strawberry.ID
    position: int
    term: str
    definition: str
    aliases: list[str]
    trust: Trust
    created_at: datetime
    created_by: strawberry.ID


@strawberry.type(description="An instruction for agents using the set; position is its order.")
class Instruction:
    id: strawberry.ID
    position: int
    text: str
    trust: Trust
    created_at: datetime
    created_by: strawberry.ID


@strawberry.type(
    description="Evidence a pack with this set must include: a document (its current version) or one passage."
)
class RequiredEvidence:
    id: strawberry.ID
    position: int
    document_id: strawberry.ID
    passage_id: strawberry.ID | None
    created_at: datetime
    created_by: strawberry.ID


@strawberry.type(description="A curated context set (SPEC §4). Every change increments version.")
class ContextSet:
    id: strawberry.ID
    name: str
    description: str
    active: bool
    scope: ContextSetScope
    version: int
    created_at: datetime
    created_by: strawberry.ID = strawberry.field(description="Member id.")
    updated_at: datetime
    updated_by: strawberry.ID = strawberry.field(description="Member id.")
    verified_answers: list[VerifiedAnswer]
    definitions: list[Definition]
    instructions: list[Instruction]
    required_evidence: list[RequiredEvidence]


@strawberry.type(description="A definition matched by lookupDefinitions.")
class DefinitionMatch:
    context_set_id: strawberry.ID
    definition: Definition
    score: float = strawberry.field(
        description="1.0 same term/alias (case- and width-folded); 0.9 same analysed words; else word overlap (≤ 0.8; ≤ 0.3 in the definition text)."
    )
    matched_words: list[str]


@strawberry.type(description="A verified answer matched by matchVerifiedAnswers.")
class VerifiedAnswerMatch:
    context_set_id: strawberry.ID
    verified_answer: VerifiedAnswer
    score: float = strawberry.field(description="BM25 over stored questions (+0.3 × over answers); higher is better.")
    coverage: float = strawberry.field(
        description="Share (0–1) of the stored question's subject words (function words such as how/do/my "
        "not counted) found in your question; a set-first pack takes the answer at ≥ 0.7."
    )
    matched_words: list[str]


@strawberry.type(description="One recorded change of a context set.")
class ContextSetVersion:
    number: int
    actor_id: strawberry.ID = strawberry.field(description="Member who made the change.")
    actor_name: str = strawberry.field(description="That member's name (empty if the member was removed).")
    change: str
    changed_at: datetime
    snapshot: JSON = strawberry.field(description="The whole set after the change.")


@strawberry.input(description="Scope of a set: at most 8 collections and 100 documents.")
class ContextSetScopeInput:
    collection_ids: list[strawberry.ID] = strawberry.field(default_factory=list)
    document_ids: list[strawberry.ID] = strawberry.field(default_factory=list)


@strawberry.input(description="A document, or one passage of it.")
class EvidenceRefInput:
    document_id: strawberry.ID
    passage_id: strawberry.ID | None = None


@strawberry.input
class VerifiedAnswerInput:
    question: str = strawberry.field(description="1–1,000 characters.")
    answer: str = strawberry.field(description="1–8,000 characters.")
    citation: EvidenceRefInput | None = strawberry.field(default=None, description="Inside the set's scope.")


@strawberry.input
class DefinitionInput:
    term: str = strawberry.field(description="1–200 characters, unique in the set (case- and width-folded).")
    definition: str = strawberry.field(description="1–4,000 characters.")
    aliases: list[str] = strawberry.field(default_factory=list, description="At most 10, 1–200 characters each.")


@strawberry.input(
    description="Create a set. Limits: ≤ 2,000 verified answers, ≤ 2,000 definitions, ≤ 20 instructions (1–2,000 characters), ≤ 20 required evidence refs (live documents inside the scope)."
)
class CreateContextSetInput:
    name: str = strawberry.field(description="1–120 characters, unique in the workspace.")
    description: str = strawberry.field(default="", description="≤ 2,000 characters.")
    active: bool = True
    scope: ContextSetScopeInput | None = None
    verified_answers: list[VerifiedAnswerInput] | None = None
    definitions: list[DefinitionInput] | None = None
    instructions: list[str] | None = None
    required_evidence: list[EvidenceRefInput] | None = None


@strawberry.input(
    description="Change a set: a field left out (or null) is kept; a list given replaces that section whole."
)
class UpdateContextSetInput:
    name: str | None = None
    description: str | None = None
    active: bool | None = None
    scope: ContextSetScopeInput | None = None
    verified_answers: list[VerifiedAnswerInput] | None = None
    definitions: list[DefinitionInput] | None = None
    instructions: list[str] | None = None
    required_evidence: list[EvidenceRefInput] | None = None


def _write(i: CreateContextSetInput | UpdateContextSetInput) -> cs.ContextSetWrite:
    return cs.ContextSetWrite(
        name=i.name,
        description=i.description,
        active=i.active,
        collection_ids=tuple(i.scope.collection_ids) if i.scope is not None else None,
        document_ids=tuple(i.scope.document_ids) if i.scope is not None else None,
        verified_answers=(
            tuple(
                cs.VerifiedAnswerInput(
                    v.question,
                    v.answer,
                    v.citation.document_id if v.citation else None,
                    v.citation.passage_id if v.citation else None,
                )
                for v in i.verified_answers
            )
            if i.verified_answers is not None
            else None
        ),
        definitions=(
            tuple(cs.DefinitionInput(d.term, d.definition, tuple(d.aliases)) for d in i.definitions)
            if i.definitions is not None
            else None
        ),
        instructions=tuple(i.instructions) if i.instructions is not None else None,
        required_evidence=(
            tuple(cs.EvidenceRef(r.document_id, r.passage_id) for r in i.required_evidence)
            if i.required_evidence is not None
            else None
        ),
    )


def to_verified_answer(e: cs.Entry) -> VerifiedAnswer:
    """Service entry → GraphQL verified answer."""
    return VerifiedAnswer(
        id=strawberry.ID(e.id),
        position=e.position,
        question=e.key,
        answer=e.value,
        citation=EntryCitation(
            document_id=strawberry.ID(e.document_id),
            passage_id=strawberry.ID(e.passage_id) if e.passage_id is not None else None,
        )
        if e.document_id
        else None,
        trust=Trust(e.trust),
        created_at=e.created_at,
        created_by=strawberry.ID(e.created_by),
    )


def to_definition(e: cs.Entry) -> Definition:
    """Service entry → GraphQL definition."""
    return Definition(
        id=strawberry.ID(e.id),
        position=e.position,
        term=e.key,
        definition=e.value,
        aliases=list(e.aliases),
        trust=Trust(e.trust),
        created_at=e.created_at,
        created_by=strawberry.ID(e.created_by),
    )


def to_context_set(v: cs.ContextSetView) -> ContextSet:
    """Service view → GraphQL context set."""
    return ContextSet(
        id=strawberry.ID(v.id),
        name=v.name,
        description=v.description,
        active=v.active,
        scope=ContextSetScope(
            collection_ids=[strawberry.ID(c) for c in v.collection_ids],
            document_ids=[strawberry.ID(d) for d in v.document_ids],
        ),
        version=v.version,
        created_at=v.created_at,
        created_by=strawberry.ID(v.created_by),
        updated_at=v.updated_at,
        updated_by=strawberry.ID(v.updated_by),
        verified_answers=[to_verified_answer(e) for e in v.of("VERIFIED_ANSWER")],
        definitions=[to_definition(e) for e in v.of("DEFINITION")],
        instructions=[
            Instruction(
                id=strawberry.ID(e.id),
                position=e.position,
                text=e.value,
                trust=Trust(e.trust),
                created_at=e.created_at,
                created_by=strawberry.ID(e.created_by),
            )
            for e in v.of("INSTRUCTION")
        ],
        required_evidence=[
            RequiredEvidence(
                id=strawberry.ID(e.id),
                position=e.position,
                document_id=strawberry.ID(e.document_id or ""),
                passage_id=strawberry.ID(e.passage_id) if e.passage_id is not None else None,
                created_at=e.created_at,
                created_by=strawberry.ID(e.created_by),
            )
            for e in v.of("REQUIRED_EVIDENCE")
        ],
    )


def _create_request(input: CreateContextSetInput) -> cs.CreateContextSetRequest:
    return cs.CreateContextSetRequest(_write(input))


def _update_request(id: str, input: UpdateContextSetInput) -> cs.UpdateContextSetRequest:
    return cs.UpdateContextSetRequest(id, _write(input))


def _list_request(query: str | None = None, limit: int = cs.READ_LIMIT_DEFAULT) -> cs.ListContextSetsRequest:
    return cs.ListContextSetsRequest(query, limit)


def _get_request(context_set_id: str | None = None) -> cs.GetContextSetRequest:
    return cs.GetContextSetRequest(context_set_id)


def _lookup_request(
    term: str, context_set_id: str | None = None, limit: int = cs.READ_LIMIT_DEFAULT
) -> cs.LookupDefinitionsRequest:
    return cs.LookupDefinitionsRequest(term, context_set_id, limit)


def _match_request(
    question: str, context_set_id: str | None = None, limit: int = cs.READ_LIMIT_DEFAULT
) -> cs.MatchVerifiedAnswersRequest:
    return cs.MatchVerifiedAnswersRequest(question, context_set_id, limit)


def _versions_request(context_set_id: str, limit: int = cs.READ_LIMIT_DEFAULT) -> cs.ContextSetVersionsRequest:
    return cs.ContextSetVersionsRequest(context_set_id, limit)


@strawberry.type
class ContextSetQuery:
    @strawberry.field(
        description="Context sets by word match over name and description (scope context:read; no embedding cost). limit 1–50; query ≤ 500 characters. A bound credential sees only its set; agents only active sets.",
        extensions=[Governed("contextSets", validate=_list_request)],
    )
    async def context_sets(
        self, info: Info, principal: Principal, query: str | None = None, limit: int = cs.READ_LIMIT_DEFAULT
    ) -> list[ContextSet]:
        views = await cs.list_context_sets(info.context.services, principal, _list_request(query, limit))
        return [to_context_set(v) for v in views]

    @strawberry.field(
        description="One context set (default: the credential's bound set).",
        extensions=[Governed("contextSet", validate=_get_request)],
    )
    async def context_set(
        self, info: Info, principal: Principal, context_set_id: strawberry.ID | None = None
    ) -> ContextSet:
        return to_context_set(await cs.get_context_set(info.context.services, principal, _get_request(context_set_id)))

    @strawberry.field(
        description="Definitions whose term or alias matches (case and width folded, stemmed; CJK bigrams). Without contextSetId: the bound set, else every active set. term 1–200 characters; limit 1–50.",
        extensions=[Governed("lookupDefinitions", validate=_lookup_request)],
    )
    async def lookup_definitions(
        self,
        info: Info,
        term: str,
        principal: Principal,
        context_set_id: strawberry.ID | None = None,
        limit: int = cs.READ_LIMIT_DEFAULT,
    ) -> list[DefinitionMatch]:
        hits = await cs.lookup_definitions(
            info.context.services, principal, _lookup_request(term, context_set_id, limit)
        )
        return [
            DefinitionMatch(
                context_set_id=strawberry.ID(h.context_set_id),
                definition=to_definition(h.entry),
                score=h.score,
                matched_words=list(h.matched_words),
            )
            for h in hits
        ]

    @strawberry.field(
        description="Verified answers ranked for a question by word match (BM25; no embedding cost), with score, coverage and the matched words. question 1–1,000 characters; limit 1–50.",
        extensions=[Governed("matchVerifiedAnswers", validate=_match_request)],
    )
    async def match_verified_answers(
        self,
        info: Info,
        question: str,
        principal: Principal,
        context_set_id: strawberry.ID | None = None,
        limit: int = cs.READ_LIMIT_DEFAULT,
    ) -> list[VerifiedAnswerMatch]:
        hits = await cs.match_verified_answers(
            info.context.services, principal, _match_request(question, context_set_id, limit)
        )
        return [
            VerifiedAnswerMatch(
                context_set_id=strawberry.ID(h.context_set_id),
                verified_answer=to_verified_answer(h.entry),
                score=h.score,
                coverage=h.coverage,
                matched_words=list(h.matched_words),
            )
            for h in hits
        ]

    @strawberry.field(
        description="A set's recorded changes, newest first (who, when, what, the set after). limit 1–50.",
        extensions=[Governed("contextSetVersions", validate=_versions_request)],
    )
    async def context_set_versions(
        self, info: Info, context_set_id: strawberry.ID, principal: Principal, limit: int = cs.READ_LIMIT_DEFAULT
    ) -> list[ContextSetVersion]:
        rows = await cs.context_set_versions(info.context.services, principal, _versions_request(context_set_id, limit))
        return [
            ContextSetVersion(
                number=r.number,
                actor_id=strawberry.ID(r.actor_id),
                actor_name=r.actor_name,
                change=r.change,
                changed_at=r.changed_at,
                snapshot=JSON(r.snapshot),
            )
            for r in rows
        ]


@strawberry.type
class ContextSetMutation:
    @strawberry.mutation(
        description="Create a context set (editors and up; version 1, entries trust APPROVED).",
        extensions=[Governed("createContextSet", validate=_create_request)],
    )
    async def create_context_set(self, info: Info, input: CreateContextSetInput, principal: Principal) -> ContextSet:
        return to_context_set(await cs.create_context_set(info.context.services, principal, _create_request(input)))

    @strawberry.mutation(
        description="Change a context set (editors and up). Each change is a new version (who/when/what); active: false deactivates it, and credentials bound to it are refused (AGENT_CONTEXT_SET_INACTIVE).",
        extensions=[Governed("updateContextSet", validate=_update_request)],
    )
    async def update_context_set(
        self, info: Info, id: strawberry.ID, input: UpdateContextSetInput, principal: Principal
    ) -> ContextSet:
        return to_context_set(await cs.update_context_set(info.context.services, principal, _update_request(id, input)))
