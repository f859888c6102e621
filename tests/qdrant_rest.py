"""A Qdrant REST endpoint backed by qdrant-client's local mode, for tests on machines where no
Qdrant server can run.

It lets ``QdrantClient(url=...)`` take its real remote path — REST request serialisation of
every call Cairn makes (sparse vector configs with the IDF modifier, ``update_vectors``,
``delete_vectors``, ``HasVectorCondition``, prefetch + ``FormulaQuery``) and Cairn's
server-only branches (the probe, payload indexes) — while the answers come from local mode.
It is NOT a Qdrant server: server-side behaviour (its IDF statistics, HNSW, payload indexes,
consistency) is not exercised. Only the endpoints Cairn uses are served.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from qdrant_client import QdrantClient
from qdrant_client import models as m
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tests.thread_server import serve_in_thread


def _ok(result: Any) -> JSONResponse:
    if hasattr(result, "model_dump"):
        result = result.model_dump(mode="json")
    return JSONResponse({"result": result, "status": "ok", "time": 0.0})


def make_app(local: QdrantClient, calls: list[tuple[str, str]]) -> Starlette:
    """The REST app over ``local``; every ``(method, path)`` is appended to ``calls``."""

    def dispatch(method: str, parts: list[str], data: dict) -> JSONResponse:
        if not parts:
            return JSONResponse({"title": "qdrant - vector search engine", "version": "1.20.0"})
        if parts == ["collections"]:
            return _ok(local.get_collections())
        name, rest = parts[1], parts[2:]
        if rest == ["exists"]:
            return _ok({"exists": local.collection_exists(name)})
        if rest == [] and method == "PUT":
            spec = m.CreateCollection(**data)
            return _ok(
                local.create_collection(name, vectors_config=spec.vectors, sparse_vectors_config=spec.sparse_vectors)
            )
        if rest == [] and method == "GET":
            return _ok(local.get_collection(name))
        if rest == [] and method == "DELETE":
            return _ok(local.delete_collection(name))
        if rest == ["index"]:
            m.CreateFieldIndex(**data)  # validated; local mode has no payload indexes
            return _ok({"operation_id": 0, "status": "completed"})
        if rest == ["points"] and method == "PUT":
            return _ok(local.upsert(name, points=m.PointsList(**data).points))
        if rest == ["points"] and method == "POST":
            req = m.PointRequest(**data)
            records = local.retrieve(name, ids=req.ids, with_payload=req.with_payload, with_vectors=req.with_vector)
            return _ok([r.model_dump(mode="json") for r in records])
        if rest == ["points", "vectors"]:
            return _ok(local.update_vectors(name, points=m.UpdateVectors(**data).points))
        if rest == ["points", "vectors", "delete"]:
            spec = m.DeleteVectors(**data)
            sel: Any = (
                m.FilterSelector(filter=spec.filter) if spec.filter is not None else m.PointIdsList(points=spec.points)
            )
            return _ok(local.delete_vectors(name, vectors=spec.vector, points=sel))
        if rest == ["points", "delete"]:
            sel = m.PointIdsList(**data) if "points" in data else m.FilterSelector(**data)
            return _ok(local.delete(name, points_selector=sel))
        if rest == ["points", "count"]:
            return _ok(local.count(name, count_filter=m.CountRequest(**data).filter, exact=True))
        if rest == ["points", "scroll"]:
            req = m.ScrollRequest(**data)
            points, offset = local.scroll(
                name, scroll_filter=req.filter, limit=req.limit or 10, offset=req.offset, with_payload=req.with_payload
            )
            return _ok({"points": [p.model_dump(mode="json") for p in points], "next_page_offset": offset})
        if rest == ["points", "query"]:
            req = m.QueryRequest(**data)
            return _ok(
                local.query_points(
                    name,
                    query=req.query,
                    using=req.using,
                    prefetch=req.prefetch,
                    query_filter=req.filter,
                    limit=req.limit or 10,
                    with_payload=req.with_payload,
                )
            )
        return JSONResponse({"status": {"error": f"not served: {method} /{'/'.join(parts)}"}}, status_code=404)

    async def handle(request: Request) -> JSONResponse:
        body = await request.body()
        calls.append((request.method, request.url.path))
        parts = [p for p in request.url.path.split("/") if p]
        try:
            return dispatch(request.method, parts, json.loads(body) if body else {})
        except (ValueError, KeyError) as exc:
            return JSONResponse({"status": {"error": str(exc)}}, status_code=400)

    return Starlette(routes=[Route("/{path:path}", handle, methods=["GET", "PUT", "POST", "DELETE"])])


@contextmanager
def qdrant_rest() -> Iterator[tuple[str, list[tuple[str, str]]]]:
    """Serve :func:`make_app` over an in-memory local-mode client on a free port; yields
    ``(url, calls)``."""
    local = QdrantClient(location=":memory:")
    calls: list[tuple[str, str]] = []
    try:
        with serve_in_thread(make_app(local, calls)) as url:
            yield url, calls
    finally:
        local.close()
