"""``CairnClient`` (sync) and ``AsyncCairnClient`` (asyncio) over httpx; the pack subscription
over graphql-transport-ws with ``websockets``.

Results are the server's JSON (camelCase, as in ``schema.graphql``): a pack is
``{packId, tokensUsed, items: [{text, citation: {documentId, versionId, passageId, start,
end, sha256}, …}], …}``. Every error the server answers becomes a
:class:`~cairn_context_client.protocol.CairnAPIError` (``code``, ``field``, ``limit``, ``trace_id``).

Example::

    with CairnClient("http://127.0.0.1:8000", token="ck_…") as cairn:
        pack = cairn.context_pack("How does a with statement call __exit__?", max_tokens=1200)
        for event in cairn.stream_context_pack("…"):   # NDJSON: header, items, footer
            ...
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import Any

import httpx

from cairn_context_client import protocol as p
from cairn_context_client.protocol import CairnAPIError

DEFAULT_TIMEOUT = 120.0
STREAM_PATH = "/v1/context-packs/stream"
DECISIONS_PATH = "/api/v1/decisions"


def _headers(token: str | None, trace_id: str | None, extra: Mapping[str, str] | None) -> dict[str, str]:
    h = {"Accept": "application/json", **(extra or {})}
    if token:
        h["Authorization"] = f"Bearer {token}"
    if trace_id:
        h["x-cairn-trace"] = trace_id
    return h


def _decision_headers(idempotency_key: str | None) -> dict[str, str]:
    return {"Idempotency-Key": idempotency_key} if idempotency_key is not None else {}


def _ws_url(base_url: str) -> str:
    if base_url.startswith("https://"):
        return "wss://" + base_url[len("https://") :] + "/graphql"
    if base_url.startswith("http://"):
        return "ws://" + base_url[len("http://") :] + "/graphql"
    raise ValueError(f"base_url must start with http:// or https:// (got {base_url!r})")


class _Calls:
    """GraphQL variables of the operations, shared by both clients."""

    @staticmethod
    def pack(task: str, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        return p.PACK_QUERY, {"i": p.pack_input(task, **options)}

    @staticmethod
    def remember(
        namespace: str, text: str, key: str | None, collection_id: str | None, citations: Sequence[str] | None
    ) -> dict[str, Any]:
        return {
            "i": p.drop_none(
                {
                    "namespace": namespace,
                    "text": text,
                    "key": key,
                    "collectionId": collection_id,
                    "citations": list(citations) if citations is not None else None,
                }
            )
        }


class CairnClient:
    """A synchronous Cairn client (httpx).

    Args:
        base_url: The server, e.g. ``http://127.0.0.1:8000``.
        token: An agent credential (``ck_…``) or member token (``cm_…``).
        timeout: Seconds per request (packs may take up to their ``max_latency_ms``).
        trace_id: Sent as ``x-cairn-trace`` so your trace id is carried through.
        http: A pre-built ``httpx.Client`` (its base URL and headers are used as they are).
    """

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        trace_id: str | None = None,
        http: httpx.Client | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._owned = http is None
        self._http = http or httpx.Client(
            base_url=self.base_url, headers=_headers(token, trace_id, None), timeout=timeout
        )

    def close(self) -> None:
        """Close the HTTP connection pool (when this client made it)."""
        if self._owned:
            self._http.close()

    def __enter__(self) -> CairnClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- transport -----------------------------------------------------------------------

    def graphql(self, query: str, variables: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """POST a GraphQL document; returns ``data``.

        Raises:
            CairnAPIError: the first error of the response.
        """
        r = self._http.post("/graphql", json={"query": query, "variables": dict(variables or {})})
        return p.parse_json_response(r.status_code, r.headers, r.text)["data"]

    def _json(self, method: str, path: str, body: Any = None, headers: Mapping[str, str] | None = None) -> Any:
        r = self._http.request(method, path, json=body, headers=dict(headers or {}))
        return p.parse_json_response(r.status_code, r.headers, r.text)

    # --- packs ---------------------------------------------------------------------------

    def context_pack(self, task: str, **options: Any) -> dict[str, Any]:
        """Build a context pack (scope ``context:read``); options as :func:`~cairn_context_client.protocol.pack_input`
        (``max_tokens``, ``max_latency_ms``, ``coverage``, ``retrieval``, ``valid_time``,
        ``system_time``, ``collection_ids``, ``document_ids``, ``sources``, ``context_set_id``)."""
        query, variables = _Calls.pack(task, options)
        return self.graphql(query, variables)["contextPack"]

    def stream_context_pack(self, task: str, **options: Any) -> Iterator[dict[str, Any]]:
        """Stream a pack over NDJSON (``POST /v1/context-packs/stream``): a ``header`` event, the
        ``item`` events in final order, a ``footer`` (each a dict with ``type``).

        Raises:
            CairnAPIError: refused before the first line (with the HTTP status), or an error line.
        """
        with self._http.stream("POST", STREAM_PATH, json=p.pack_input(task, **options)) as r:
            trace = r.headers.get("x-cairn-trace")
            if r.status_code >= 400:
                r.read()
                p.parse_json_response(r.status_code, r.headers, r.text)
            for line in r.iter_lines():
                event = p.stream_line(line, status=r.status_code, trace_id=trace)
                if event is not None:
                    yield event

    def document(self, document_id: str) -> dict[str, Any]:
        """A document with its versions (text, passages spans) as of now."""
        return self.graphql(p.DOCUMENT, {"id": document_id})["document"]

    # --- memory --------------------------------------------------------------------------

    def remember(
        self,
        namespace: str,
        text: str,
        *,
        key: str | None = None,
        collection_id: str | None = None,
        citations: Sequence[str] | None = None,
    ) -> dict[str, Any]:
        """Keep a memory (scope ``memory:write``); returns ``{memory, superseded, masked}``."""
        return self.graphql(p.REMEMBER, _Calls.remember(namespace, text, key, collection_id, citations))[
            "rememberMemory"
        ]

    def recall(self, query: str, **options: Any) -> dict[str, Any]:
        """Rank your memories (scope ``memory:read``); options ``namespace``, ``collection_id``,
        ``as_of`` (ISO-8601), ``limit`` (1–50)."""
        return self.graphql(p.RECALL, {"i": _memory_options({"query": query}, options)})["recallMemories"]

    def list_memories(self, **options: Any) -> dict[str, Any]:
        """Your memories, newest first (``namespace``, ``key``, ``collection_id``, ``limit`` 1–100, ``cursor``)."""
        return self.graphql(p.LIST_MEMORIES, {"i": _memory_options({}, options)})["listMemories"]

    def forget(
        self, memory_id: str | None = None, *, namespace: str | None = None, key: str | None = None
    ) -> dict[str, Any]:
        """Delete a memory (by id, or namespace + key); returns ``{deleted}``."""
        i = p.drop_none({"memoryId": memory_id, "namespace": namespace, "key": key})
        return self.graphql(p.FORGET, {"i": i})["forgetMemory"]

    # --- decisions -----------------------------------------------------------------------

    def create_decision(self, body: Mapping[str, Any], *, idempotency_key: str | None = None) -> dict[str, Any]:
        """``POST /api/v1/decisions`` (scope ``decisions:run``): the decision object."""
        return self._json("POST", DECISIONS_PATH, dict(body), _decision_headers(idempotency_key))

    def get_decision(self, decision_id: str) -> dict[str, Any]:
        """``GET /api/v1/decisions/{id}``."""
        return self._json("GET", f"{DECISIONS_PATH}/{decision_id}")

    # --- ontology ------------------------------------------------------------------------

    def knowledge_networks(self) -> list[dict[str, Any]]:
        """The knowledge networks of your workspace (``id``, ``name``)."""
        return self.graphql(p.KNOWLEDGE_NETWORKS)["knowledgeNetworks"]

    def object_instances(self, kn_id: str, ot_id: str, **options: Any) -> dict[str, Any]:
        """Instances of one object type (``condition``, ``limit``, ``cursor``, ``sort``, ``properties``)."""
        return self.graphql(p.OBJECT_INSTANCES, _instances_vars(kn_id, ot_id, options))["objectInstances"]

    def semantic_recall(
        self, kn_id: str, query: str, *, max_object_types: int = 10, max_instances_per_type: int = 5
    ) -> dict[str, Any]:
        """Relevant instances across object types for a natural-language query."""
        v = {"kn": kn_id, "q": query, "maxObjectTypes": max_object_types, "maxInstancesPerType": max_instances_per_type}
        return self.graphql(p.SEMANTIC_RECALL, v)["semanticRecall"]


class AsyncCairnClient:
    """The asyncio twin of :class:`CairnClient` (same methods, awaited), plus
    :meth:`subscribe_context_pack` over the GraphQL subscription."""

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        trace_id: str | None = None,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self._owned = http is None
        self._http = http or httpx.AsyncClient(
            base_url=self.base_url, headers=_headers(token, trace_id, None), timeout=timeout
        )

    async def aclose(self) -> None:
        """Close the HTTP connection pool (when this client made it)."""
        if self._owned:
            await self._http.aclose()

    async def __aenter__(self) -> AsyncCairnClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def graphql(self, query: str, variables: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """POST a GraphQL document; returns ``data`` (raises :class:`CairnAPIError`)."""
        r = await self._http.post("/graphql", json={"query": query, "variables": dict(variables or {})})
        return p.parse_json_response(r.status_code, r.headers, r.text)["data"]

    async def _json(self, method: str, path: str, body: Any = None, headers: Mapping[str, str] | None = None) -> Any:
        r = await self._http.request(method, path, json=body, headers=dict(headers or {}))
        return p.parse_json_response(r.status_code, r.headers, r.text)

    async def context_pack(self, task: str, **options: Any) -> dict[str, Any]:
        """See :meth:`CairnClient.context_pack`."""
        query, variables = _Calls.pack(task, options)
        return (await self.graphql(query, variables))["contextPack"]

    async def stream_context_pack(self, task: str, **options: Any) -> AsyncIterator[dict[str, Any]]:
        """See :meth:`CairnClient.stream_context_pack` (NDJSON)."""
        async with self._http.stream("POST", STREAM_PATH, json=p.pack_input(task, **options)) as r:
            trace = r.headers.get("x-cairn-trace")
            if r.status_code >= 400:
                await r.aread()
                p.parse_json_response(r.status_code, r.headers, r.text)
            async for line in r.aiter_lines():
                event = p.stream_line(line, status=r.status_code, trace_id=trace)
                if event is not None:
                    yield event

    async def subscribe_context_pack(self, task: str, **options: Any) -> AsyncIterator[dict[str, Any]]:
        """Stream a pack over the ``contextPackStream`` subscription (graphql-transport-ws):
        the same events as :meth:`stream_context_pack` (dicts with ``type`` header/item/footer).

        Raises:
            CairnAPIError: the subscription's error.
        """
        import websockets  # lazily: only this method needs it

        payload = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        async with websockets.connect(_ws_url(self.base_url), subprotocols=["graphql-transport-ws"]) as ws:  # type: ignore[list-item]
            await ws.send(json.dumps({"type": "connection_init", "payload": payload}))
            ack = json.loads(await ws.recv())
            if ack.get("type") != "connection_ack":
                raise CairnAPIError(f"no connection_ack (got {ack.get('type')!r})", code="PROTOCOL_ERROR")
            variables = {"i": p.pack_input(task, **options)}
            await ws.send(
                json.dumps(
                    {
                        "id": "1",
                        "type": "subscribe",
                        "payload": {"query": p.STREAM_SUBSCRIPTION, "variables": variables},
                    }
                )
            )
            while True:
                event = p.ws_event(json.loads(await ws.recv()))
                if event is None:
                    return
                yield event

    async def document(self, document_id: str) -> dict[str, Any]:
        """See :meth:`CairnClient.document`."""
        return (await self.graphql(p.DOCUMENT, {"id": document_id}))["document"]

    async def remember(
        self,
        namespace: str,
        text: str,
        *,
        key: str | None = None,
        collection_id: str | None = None,
        citations: Sequence[str] | None = None,
    ) -> dict[str, Any]:
        """See :meth:`CairnClient.remember`."""
        variables = _Calls.remember(namespace, text, key, collection_id, citations)
        return (await self.graphql(p.REMEMBER, variables))["rememberMemory"]

    async def recall(self, query: str, **options: Any) -> dict[str, Any]:
        """See :meth:`CairnClient.recall`."""
        return (await self.graphql(p.RECALL, {"i": _memory_options({"query": query}, options)}))["recallMemories"]

    async def list_memories(self, **options: Any) -> dict[str, Any]:
        """See :meth:`CairnClient.list_memories`."""
        return (await self.graphql(p.LIST_MEMORIES, {"i": _memory_options({}, options)}))["listMemories"]

    async def forget(
        self, memory_id: str | None = None, *, namespace: str | None = None, key: str | None = None
    ) -> dict[str, Any]:
        """See :meth:`CairnClient.forget`."""
        i = p.drop_none({"memoryId": memory_id, "namespace": namespace, "key": key})
        return (await self.graphql(p.FORGET, {"i": i}))["forgetMemory"]

    async def create_decision(self, body: Mapping[str, Any], *, idempotency_key: str | None = None) -> dict[str, Any]:
        """See :meth:`CairnClient.create_decision`."""
        return await self._json("POST", DECISIONS_PATH, dict(body), _decision_headers(idempotency_key))

    async def get_decision(self, decision_id: str) -> dict[str, Any]:
        """See :meth:`CairnClient.get_decision`."""
        return await self._json("GET", f"{DECISIONS_PATH}/{decision_id}")

    async def knowledge_networks(self) -> list[dict[str, Any]]:
        """See :meth:`CairnClient.knowledge_networks`."""
        return (await self.graphql(p.KNOWLEDGE_NETWORKS))["knowledgeNetworks"]

    async def object_instances(self, kn_id: str, ot_id: str, **options: Any) -> dict[str, Any]:
        """See :meth:`CairnClient.object_instances`."""
        return (await self.graphql(p.OBJECT_INSTANCES, _instances_vars(kn_id, ot_id, options)))["objectInstances"]

    async def semantic_recall(
        self, kn_id: str, query: str, *, max_object_types: int = 10, max_instances_per_type: int = 5
    ) -> dict[str, Any]:
        """See :meth:`CairnClient.semantic_recall`."""
        v = {"kn": kn_id, "q": query, "maxObjectTypes": max_object_types, "maxInstancesPerType": max_instances_per_type}
        return (await self.graphql(p.SEMANTIC_RECALL, v))["semanticRecall"]


_MEMORY_OPTIONS = {
    "namespace": "namespace",
    "key": "key",
    "collection_id": "collectionId",
    "as_of": "asOf",
    "limit": "limit",
    "cursor": "cursor",
}


def _memory_options(base: dict[str, Any], options: Mapping[str, Any]) -> dict[str, Any]:
    unknown = set(options) - set(_MEMORY_OPTIONS)
    if unknown:
        raise TypeError(f"unknown option(s) {sorted(unknown)}; allowed: {sorted(_MEMORY_OPTIONS)}")
    return {**base, **p.drop_none({_MEMORY_OPTIONS[k]: v for k, v in options.items()})}


_INSTANCE_OPTIONS = {"condition", "limit", "cursor", "sort", "properties"}


def _instances_vars(kn_id: str, ot_id: str, options: Mapping[str, Any]) -> dict[str, Any]:
    unknown = set(options) - _INSTANCE_OPTIONS
    if unknown:
        raise TypeError(f"unknown option(s) {sorted(unknown)}; allowed: {sorted(_INSTANCE_OPTIONS)}")
    return {"kn": kn_id, "ot": ot_id, "limit": options.get("limit", 10), **p.drop_none(dict(options))}
