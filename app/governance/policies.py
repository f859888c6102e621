"""The context-set binding of each operation an agent may call, by name (:mod:`app.governance.binding`).

The registry modules (:mod:`app.governance.operations_graphql`,
:mod:`app.governance.operations_http_mcp`) pass these as ``Operation(..., binding=…)``; one
name per policy keeps the GraphQL operation, its HTTP route and its MCP tool on the same rule
(a contract test compares them by capability). GraphQL and HTTP paths are ``input.…`` inside
input objects and bodies; MCP paths are the tool's own argument names.
"""

from __future__ import annotations

from cairn.app.governance.binding import not_applicable, refused, scoped

_PACK_LIMIT = "no set named: the bound set; evidence only from the set's scope (app.contextsets.packing)"

PACK = scoped(
    sets=("input.contextSetId",),
    collections=("input.filters.collectionIds",),
    documents=("input.filters.documentIds",),
    limited_by=_PACK_LIMIT,
)
"""``contextPack``, ``contextPackStream`` and the NDJSON route: the named set, filter
collections and filter documents must be the bound set's."""

MCP_PACK = scoped(
    sets=("contextSetId",),
    collections=("filters.collectionIds",),
    documents=("filters.documentIds",),
    limited_by=_PACK_LIMIT,
)
"""The ``context_pack`` tool: :data:`PACK` over the tool's argument names."""

REPLAY = scoped(limited_by="the recorded pack names its items; what is now outside the set is not re-read (app.replay)")
"""``replay`` and its HTTP route."""

FACTS = scoped(limited_by="only statements of the set's documents (app.temporal.service)")
"""Temporal reads name a subject, not ids: the facts are limited to the set's documents."""

DOCUMENT = scoped(documents=("id",))
"""``document(id)``."""

COLLECTIONS = scoped(limited_by="lists only the collections holding something of the set, counting only its documents")
"""``collections``."""

DOCUMENTS = scoped(collections=("collectionId",), limited_by="lists and counts only the set's documents of it")
"""``documents(collectionId)``: a collection holding something of the set (app.corpus.operations)."""

FIELDS = scoped(whole_collections=("collectionId",))
"""Learned fields quote documents: only of a collection the set holds whole (``fields``, MCP tools)."""

FIELD_QUERY = scoped(whole_collections=("plan.collectionId",))
"""``queryFields(plan)``: as :data:`FIELDS`."""

SETS_LIST = scoped(limited_by="lists only the bound set")
"""``contextSets`` and ``search_context_sets``."""

SET_READ = scoped(sets=("contextSetId",), limited_by="no id: the bound set")
"""Reads of one set (definitions, verified answers, the set, its templates): the bound one."""

SET_HISTORY = scoped(sets=("contextSetId",))
"""``contextSetVersions(contextSetId)``."""

TEMPLATE_RUN = scoped(sets=("contextSetId",), limited_by="the template's own set must be the bound one (app.templates)")
"""Running a query template (GraphQL and MCP)."""

PASSAGE = scoped(passages=("passageId",))
"""``get_passage`` and ``get_section``: the passage's document must be in the set."""

CITATION = scoped(documents=("documentId",))
"""``get_citation``: the cited document must be in the set."""

_MEMORY_LIMIT = "a bound credential must name one of the set's whole collections (app.memory)"

MEMORY_WRITE = scoped(
    whole_collections=("input.collectionId",), passages=("input.citations",), limited_by=_MEMORY_LIMIT
)
"""``rememberMemory``: its collection and cited passages must be the set's."""

MEMORY_READ = scoped(whole_collections=("input.collectionId",), limited_by=_MEMORY_LIMIT)
"""``recallMemories`` and ``listMemories``."""

MCP_MEMORY_WRITE = scoped(whole_collections=("collectionId",), passages=("citations",), limited_by=_MEMORY_LIMIT)
"""The ``remember`` tool: :data:`MEMORY_WRITE` over the tool's argument names."""

MCP_MEMORY_READ = scoped(whole_collections=("collectionId",), limited_by=_MEMORY_LIMIT)
"""The ``recall`` tool."""

IDENTITY = not_applicable("the caller's own identity and the operation registry, no workspace content")
"""``viewer`` and ``operations``."""

ONTOLOGY_REFUSED = refused(
    "knowledge networks are not part of any context set, so a credential bound to one reads no ontology"
)
"""The binding of every ontology read (knowledge networks, object types and instances, recall)."""

OWN_RECORDS = not_applicable("reads and writes only the caller's own records, no corpus content")
"""The binding of decisions, sessions, gap reports and interaction traces."""
