"""Context sets (SPEC §4): requests, domain objects and the limits every write and read enforces.

A context set holds approved entries of four kinds (plus query templates, which live in
their own table): ``VERIFIED_ANSWER`` (question → answer, optional cited document/passage),
``DEFINITION`` (term → definition, aliases), ``INSTRUCTION`` (ordered text) and
``REQUIRED_EVIDENCE`` (a document, or one passage of it). Limits are checked before any
database work; a value outside one is refused with ``BAD_USER_INPUT`` naming the field and
the limit, never clamped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from cairn.app.core.errors import BadInput
from cairn.app.core.text_rules import validate_identifier, validate_name, validate_text

KINDS = ("VERIFIED_ANSWER", "DEFINITION", "INSTRUCTION", "REQUIRED_EVIDENCE")
TRUST_APPROVED = "APPROVED"

MAX_SETS_PER_WORKSPACE = 200
NAME_MAX = 120
DESCRIPTION_MAX = 2_000
MAX_SCOPE_COLLECTIONS = 8
MAX_SCOPE_DOCUMENTS = 100
MAX_VERIFIED_ANSWERS = 2_000
QUESTION_MAX = 1_000
ANSWER_MAX = 8_000
MAX_DEFINITIONS = 2_000
TERM_MAX = 200
DEFINITION_MAX = 4_000
MAX_ALIASES = 10
MAX_INSTRUCTIONS = 20
INSTRUCTION_MAX = 2_000
MAX_REQUIRED_EVIDENCE = 20

# library reads
READ_LIMIT_DEFAULT, READ_LIMIT_MAX = 10, 50
QUERY_MAX = 500


@dataclass(frozen=True)
class VerifiedAnswerInput:
    """Question → approved answer; ``document_id``/``passage_id`` cite where the answer comes from."""

    question: str
    answer: str
    document_id: str | None = None
    passage_id: str | None = None


@dataclass(frozen=True)
class DefinitionInput:
    """Term → definition; ``aliases`` are other spellings matched like the term."""

    term: str
    definition: str
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class EvidenceRef:
    """A required document (its current version's passages) or one passage of it."""

    document_id: str
    passage_id: str | None = None


@dataclass(frozen=True)
class ContextSetWrite:
    """Create (every field) or update (``None`` = keep; a list given replaces that section whole).

    Attributes:
        collection_ids / document_ids: The scope (≤ 8 collections, ≤ 100 documents).
        instructions: In order; their order is the pack order.
    """

    name: str | None = None
    description: str | None = None
    active: bool | None = None
    collection_ids: tuple[str, ...] | None = None
    document_ids: tuple[str, ...] | None = None
    verified_answers: tuple[VerifiedAnswerInput, ...] | None = None
    definitions: tuple[DefinitionInput, ...] | None = None
    instructions: tuple[str, ...] | None = None
    required_evidence: tuple[EvidenceRef, ...] | None = None


def _count(items: tuple | None, field_name: str, limit: int) -> None:
    if items is not None and len(items) > limit:
        raise BadInput(f"{field_name} has {len(items)} entries; the limit is {limit:,}", field=field_name, limit=limit)


def validate_write(w: ContextSetWrite, prefix: str = "input", *, creating: bool = False) -> None:
    """Check every limit of a create/update (module doc); no database access.

    Raises:
        BadInput: naming the field (``input.definitions[3].term``) and the limit.
    """
    if creating and w.name is None:
        raise BadInput(f"{prefix}.name is required", field=f"{prefix}.name")
    if w.name is not None:
        validate_name(w.name, f"{prefix}.name", NAME_MAX)
    if w.description is not None:
        validate_text(w.description, f"{prefix}.description", DESCRIPTION_MAX, min_len=0)
    _count(w.collection_ids, f"{prefix}.scope.collectionIds", MAX_SCOPE_COLLECTIONS)
    _count(w.document_ids, f"{prefix}.scope.documentIds", MAX_SCOPE_DOCUMENTS)
    for name, ids in (("collectionIds", w.collection_ids), ("documentIds", w.document_ids)):
        for i, v in enumerate(ids or ()):
            validate_identifier(v, f"{prefix}.scope.{name}[{i}]")
        if ids is not None and len(set(ids)) != len(ids):
            raise BadInput(f"{prefix}.scope.{name} lists an id twice", field=f"{prefix}.scope.{name}")
    _count(w.verified_answers, f"{prefix}.verifiedAnswers", MAX_VERIFIED_ANSWERS)
    for i, va in enumerate(w.verified_answers or ()):
        f = f"{prefix}.verifiedAnswers[{i}]"
        validate_text(va.question, f"{f}.question", QUESTION_MAX)
        validate_text(va.answer, f"{f}.answer", ANSWER_MAX)
        if not va.question.strip() or not va.answer.strip():
            raise BadInput(f"{f}: question and answer must contain non-whitespace text", field=f)
        if va.passage_id is not None and va.document_id is None:
            raise BadInput(f"{f}.citation: a passageId needs its documentId", field=f"{f}.citation.documentId")
        if va.document_id is not None:
            validate_identifier(va.document_id, f"{f}.citation.documentId")
        if va.passage_id is not None:
            validate_identifier(va.passage_id, f"{f}.citation.passageId")
    _count(w.definitions, f"{prefix}.definitions", MAX_DEFINITIONS)
    seen: dict[str, int] = {}
    for i, d in enumerate(w.definitions or ()):
        f = f"{prefix}.definitions[{i}]"
        validate_name(d.term, f"{f}.term", TERM_MAX)
        validate_text(d.definition, f"{f}.definition", DEFINITION_MAX)
        if not d.definition.strip():
            raise BadInput(f"{f}.definition must contain non-whitespace text", field=f"{f}.definition")
        if len(d.aliases) > MAX_ALIASES:
            raise BadInput(
                f"{f}.aliases has {len(d.aliases)} entries; the limit is {MAX_ALIASES}",
                field=f"{f}.aliases",
                limit=MAX_ALIASES,
            )
        for j, a in enumerate(d.aliases):
            validate_name(a, f"{f}.aliases[{j}]", TERM_MAX)
        from cairn.app.contextsets.matching import fold

        key = fold(d.term)
        if key in seen:
            raise BadInput(
                f"{f}.term {d.term!r} repeats definitions[{seen[key]}] (terms are compared case- and width-folded)",
                field=f"{f}.term",
            )
        seen[key] = i
    _count(w.instructions, f"{prefix}.instructions", MAX_INSTRUCTIONS)
    for i, text in enumerate(w.instructions or ()):
        validate_text(text, f"{prefix}.instructions[{i}]", INSTRUCTION_MAX)
        if not text.strip():
            raise BadInput(
                f"{prefix}.instructions[{i}] must contain non-whitespace text", field=f"{prefix}.instructions[{i}]"
            )
    _count(w.required_evidence, f"{prefix}.requiredEvidence", MAX_REQUIRED_EVIDENCE)
    for i, r in enumerate(w.required_evidence or ()):
        validate_identifier(r.document_id, f"{prefix}.requiredEvidence[{i}].documentId")
        if r.passage_id is not None:
            validate_identifier(r.passage_id, f"{prefix}.requiredEvidence[{i}].passageId")
    if w.required_evidence is not None and len(set(w.required_evidence)) != len(w.required_evidence):
        raise BadInput(f"{prefix}.requiredEvidence lists a reference twice", field=f"{prefix}.requiredEvidence")


def validate_limit(limit: int, field_name: str = "limit") -> None:
    """A library read's ``limit``: 1–50.

    Raises:
        BadInput: outside 1–50.
    """
    if not 1 <= limit <= READ_LIMIT_MAX:
        raise BadInput(
            f"{field_name} must be between 1 and {READ_LIMIT_MAX} (got {limit})",
            field=field_name,
            limit=f"1-{READ_LIMIT_MAX}",
        )


@dataclass(frozen=True)
class Entry:
    """One approved entry (see :class:`app.core.models.ContextSetEntry` for the column meanings)."""

    id: str
    kind: str
    position: int
    key: str
    value: str
    aliases: tuple[str, ...]
    document_id: str | None
    passage_id: str | None
    trust: str
    created_at: datetime
    created_by: str


def entry_text(e: Entry) -> str:
    """The text an approved entry has as a pack item (what its replay record hashes):
    ``"Q: <question>\nA: <answer>"``, ``"<term>: <definition> (also: <aliases>)"`` or the
    instruction itself. Raises ValueError for ``REQUIRED_EVIDENCE`` (its text is the cited
    document's)."""
    if e.kind == "VERIFIED_ANSWER":
        return f"Q: {e.key}\nA: {e.value}"
    if e.kind == "DEFINITION":
        return f"{e.key}: {e.value}" + (f" (also: {', '.join(e.aliases)})" if e.aliases else "")
    if e.kind == "INSTRUCTION":
        return e.value
    raise ValueError(f"a {e.kind} entry has no text of its own")


@dataclass(frozen=True)
class ContextSetView:
    """A context set with its entries by kind (each in ``position`` order)."""

    id: str
    workspace_id: str
    name: str
    description: str
    active: bool
    collection_ids: tuple[str, ...]
    document_ids: tuple[str, ...]
    version: int
    created_at: datetime
    created_by: str
    updated_at: datetime
    updated_by: str
    entries: tuple[Entry, ...] = field(default=())

    def of(self, kind: str) -> list[Entry]:
        """The entries of one kind, in order."""
        return [e for e in self.entries if e.kind == kind]


@dataclass(frozen=True)
class VersionView:
    """One recorded change: number, who (member id and name; name empty once removed), when, what."""

    number: int
    actor_id: str
    change: str
    changed_at: datetime
    snapshot: dict
    actor_name: str = ""
