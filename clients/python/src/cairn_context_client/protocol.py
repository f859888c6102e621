"""What the sync and async clients share: GraphQL documents, input building, response and error
parsing. Pure functions over JSON; no I/O and no server imports (import-linter contract)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

CITATION = "documentId versionId passageId start end sha256"
ITEM_FIELDS = f"""rank kind text tokens trust score ranks {{ lexical dense }} externalId documentTitle
  collectionId collectionName citation {{ {CITATION} }} alternateCitations {{ {CITATION} }}
  validity {{ validFrom validTo }} superseded contradiction contradicts"""
PACK_FIELDS = f"""packId replayId maxTokens tokensUsed truncated complete incompleteReasons latencyMs tokenizer
  retrieval asOf {{ validTime systemTime }} candidates duplicatesMerged notes
  timings {{ embedMs lexicalMs vectorMs fusionMs resolveMs dedupPackMs }}
  items {{ {ITEM_FIELDS} }}"""
HEADER_FIELDS = "packId replayId maxTokens maxLatencyMs coverage retrieval asOf { validTime systemTime } tokenizer traceId coordinate capability"
FOOTER_FIELDS = "tokensUsed itemCount truncated complete incompleteReasons latencyMs candidates duplicatesMerged notes"

PACK_QUERY = f"query($i: ContextPackInput!) {{ contextPack(input: $i) {{ {PACK_FIELDS} }} }}"
STREAM_SUBSCRIPTION = f"""subscription($i: ContextPackInput!) {{ contextPackStream(input: $i) {{
  __typename
  ... on PackHeader {{ {HEADER_FIELDS} }}
  ... on PackItem {{ {ITEM_FIELDS} }}
  ... on PackFooter {{ {FOOTER_FIELDS} }}
}} }}"""

MEMORY_FIELDS = """id namespace key text collectionId version recordedAt supersededAt sourceState
  citations { passageId passageSha256 sourceState } type evidence trust"""
REMEMBER = f"""mutation($i: RememberMemoryInput!) {{ rememberMemory(input: $i) {{
  memory {{ {MEMORY_FIELDS} }} superseded masked {{ kind count }} }} }}"""
RECALL = f"""query($i: RecallMemoriesInput!) {{ recallMemories(input: $i) {{
  memories {{ score ranks {{ bm25 vector entity }} memory {{ {MEMORY_FIELDS} }} }}
  hidden candidates legs {{ name status detail ms }} }} }}"""
LIST_MEMORIES = f"""query($i: ListMemoriesInput) {{ listMemories(input: $i) {{
  memories {{ {MEMORY_FIELDS} }} hidden nextCursor }} }}"""
FORGET = "mutation($i: ForgetMemoryInput!) { forgetMemory(input: $i) { deleted } }"

DOCUMENT = """query($id: ID!) { document(id: $id) { id collectionId externalId title mediaType createdAt
  currentVersionId versions { id number text contentSha256 validFrom validTo recordedAt
  passages { passageId ordinal start end } } } }"""

KNOWLEDGE_NETWORKS = "{ knowledgeNetworks { id name } }"
OBJECT_INSTANCES = """query($kn: String!, $ot: String!, $condition: ConditionInput, $limit: Int!, $cursor: String,
  $sort: [SortInput!], $properties: [String!]) {
  objectInstances(knId: $kn, otId: $ot, condition: $condition, limit: $limit, cursor: $cursor, sort: $sort,
    properties: $properties) { rows totalCount cursor conditionSource filtersIgnored messages } }"""
SEMANTIC_RECALL = """query($kn: String!, $q: String!, $maxObjectTypes: Int!, $maxInstancesPerType: Int!) {
  semanticRecall(knId: $kn, query: $q, maxObjectTypes: $maxObjectTypes, maxInstancesPerType: $maxInstancesPerType) {
    nodes { objectTypeId instanceIdentity properties score rerankerScore matchedBy } message } }"""


class CairnAPIError(Exception):
    """An error answered by Cairn (or the transport), with what a program needs to react.

    Attributes:
        message: The server's sentence (names the field and the limit).
        code: ``extensions.code`` (``BAD_USER_INPUT``, ``AGENT_SCOPE_MISSING``, ``RATE_LIMITED``, …);
            ``HTTP_ERROR`` when a response carried no Cairn error.
        field: The input path at fault (``input.budget.maxTokens``), when given.
        limit: The limit broken (``"256-32000"``, ``20``), when given.
        trace_id: The envelope's trace id (quote it when reporting a problem).
        status: The HTTP status (None for errors inside a stream).
        extensions: Every ``extensions`` member (``retryAfter``, ``boundary``, ``proposal``, …).
    """

    def __init__(
        self,
        message: str,
        *,
        code: str,
        field: str | None = None,
        limit: Any = None,
        trace_id: str | None = None,
        status: int | None = None,
        extensions: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(f"{code}: {message}" + (f" (trace {trace_id})" if trace_id else ""))
        self.message = message
        self.code = code
        self.field = field
        self.limit = limit
        self.trace_id = trace_id
        self.status = status
        self.extensions = dict(extensions or {})


def _iso(value: datetime | str | None) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if value.tzinfo is None:
        raise ValueError("as-of times need a timezone (e.g. datetime(..., tzinfo=timezone.utc))")
    return value.isoformat()


def pack_input(
    task: str,
    *,
    max_tokens: int | None = None,
    max_latency_ms: int | None = None,
    coverage: str | None = None,
    retrieval: str | None = None,
    valid_time: datetime | str | None = None,
    system_time: datetime | str | None = None,
    collection_ids: Sequence[str] | None = None,
    document_ids: Sequence[str] | None = None,
    sources: Sequence[str] | None = None,
    context_set_id: str | None = None,
) -> dict[str, Any]:
    """The ``ContextPackInput`` JSON: only what is given (the server applies its defaults and
    checks every limit: ``max_tokens`` 256–32,000 cl100k tokens, ``max_latency_ms``
    1,000–60,000, at most 8 collection and 20 document ids)."""
    out: dict[str, Any] = {"task": task}
    budget = {
        k: v
        for k, v in (("maxTokens", max_tokens), ("maxLatencyMs", max_latency_ms), ("coverage", coverage))
        if v is not None
    }
    if budget:
        out["budget"] = budget
    as_of = {k: _iso(v) for k, v in (("validTime", valid_time), ("systemTime", system_time)) if v is not None}
    if as_of:
        out["asOf"] = as_of
    filters = {
        k: list(v)
        for k, v in (("collectionIds", collection_ids), ("documentIds", document_ids), ("sources", sources))
        if v is not None
    }
    if filters:
        out["filters"] = filters
    if retrieval is not None:
        out["retrieval"] = retrieval
    if context_set_id is not None:
        out["contextSetId"] = context_set_id
    return out


def drop_none(values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` without the None entries (absent = the server's default)."""
    return {k: v for k, v in values.items() if v is not None}


def error_from_payload(err: Mapping[str, Any], *, status: int | None, trace_id: str | None) -> CairnAPIError:
    """A :class:`CairnAPIError` from one GraphQL-shaped error ``{message, extensions}``."""
    ext = dict(err.get("extensions") or {})
    env = ext.pop("envelope", None) or {}
    return CairnAPIError(
        str(err.get("message", "")),
        code=str(ext.get("code", "UNKNOWN")),
        field=ext.get("field"),
        limit=ext.get("limit"),
        trace_id=trace_id or env.get("traceId"),
        status=status,
        extensions=ext,
    )


def parse_json_response(status: int, headers: Mapping[str, str], text: str) -> dict[str, Any]:
    """The body of a Cairn JSON response, or raise its first error.

    Raises:
        CairnAPIError: ``errors[0]`` of the body (GraphQL and the enveloped HTTP errors share
            the shape), the Decisions API's ``{"type": "error", "error": {...}}`` body, or
            ``HTTP_ERROR`` for a non-JSON error response.
    """
    trace = headers.get("x-cairn-trace")
    try:
        body = json.loads(text) if text else {}
    except ValueError:
        body = None
    if not isinstance(body, dict):
        raise CairnAPIError(f"HTTP {status}: {text[:200]}", code="HTTP_ERROR", trace_id=trace, status=status)
    trace = trace or ((body.get("extensions") or {}).get("envelope") or {}).get("traceId")
    errors = body.get("errors")
    if errors:
        raise error_from_payload(errors[0], status=status, trace_id=trace)
    wire = body.get("error")
    if body.get("type") == "error" and isinstance(wire, dict):  # the Decisions API's wire format
        raise CairnAPIError(
            str(wire.get("message", "")),
            code=str(wire.get("code") or wire.get("type") or "UNKNOWN"),
            field=wire.get("field"),
            limit=wire.get("limit"),
            trace_id=trace or body.get("request_id"),
            status=status,
            extensions=wire,
        )
    if status >= 400:
        raise CairnAPIError(f"HTTP {status}", code="HTTP_ERROR", trace_id=trace, status=status)
    return body


def stream_line(line: str, *, status: int, trace_id: str | None) -> dict[str, Any] | None:
    """One NDJSON line as an event (``type`` header/item/footer); None for a blank line.

    Raises:
        CairnAPIError: an ``error`` line (the stream failed after it started).
    """
    if not line.strip():
        return None
    event = json.loads(line)
    if event.get("type") == "error":
        raise error_from_payload(event, status=None, trace_id=trace_id)
    return event


def ws_event(message: Mapping[str, Any]) -> dict[str, Any] | None:
    """One graphql-transport-ws message of the pack subscription as an event (``type``
    header/item/footer, the NDJSON line's shape); None for ``complete``.

    Raises:
        CairnAPIError: an ``error`` message or a ``next`` carrying errors.
    """
    kind = message.get("type")
    if kind == "complete":
        return None
    if kind == "error":
        payload = message.get("payload") or [{}]
        raise error_from_payload(payload[0], status=None, trace_id=None)
    if kind != "next":
        raise CairnAPIError(f"unexpected message {kind!r}", code="PROTOCOL_ERROR")
    payload = message.get("payload") or {}
    if payload.get("errors"):
        env = (payload.get("extensions") or {}).get("envelope") or {}
        raise error_from_payload(payload["errors"][0], status=None, trace_id=env.get("traceId"))
    event = dict(payload["data"]["contextPackStream"])
    typename = event.pop("__typename", "")
    event["type"] = {"PackHeader": "header", "PackItem": "item", "PackFooter": "footer"}.get(typename, typename)
    return event
