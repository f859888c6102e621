"""Vector backend on ``qdrant-client``: a Qdrant server/cluster, or local mode on disk.

Named vectors as in :mod:`retrieval.edge_vectors`: one per embedding model (``spaces``), a
point has the vector of its own space, searches name the space (``using``). A collection of
the layout before named vectors (one unnamed vector) or with other names is dropped and
re-created empty on open (:attr:`ClientVectorIndex.migrated` holds the message; the caller
re-embeds every passage).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from uuid import UUID

import numpy as np

from retrieval.checks import check_ids
from retrieval.vector_types import (
    DEFAULT_SPACE,
    PAYLOAD_KEYS,
    UPSERT_BATCH,
    VectorChecks,
    VectorPoint,
    VectorStoreInUse,
    VectorStoreUnavailable,
    check_point,
    check_spaces,
    latest_points,
    legacy_message,
    payload_of,
    point_id,
    ranked_search,
)


def _unavailable(url: str, exc: BaseException) -> VectorStoreUnavailable:
    text = str(exc).strip()
    reason = text.splitlines()[0] if text else type(exc).__name__
    return VectorStoreUnavailable(f"cannot use the Qdrant server at {url}: {reason}")


def check_server(url: str, *, api_key: str | None = None, timeout: int = 10) -> None:
    """Check that the Qdrant server at ``url`` answers (lists its collections), before serving.

    Raises:
        VectorStoreUnavailable: unreachable, refusing (e.g. a wrong API key) or not a URL;
            the message is one line naming ``url``.
    """
    from qdrant_client import QdrantClient
    from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

    try:
        client = QdrantClient(url=url, api_key=api_key, timeout=timeout, check_compatibility=False)
    except ValueError as exc:
        raise _unavailable(url, exc) from None
    try:
        client.get_collections()
    except (ResponseHandlingException, UnexpectedResponse) as exc:
        raise _unavailable(url, exc) from None
    finally:
        client.close()


class ClientVectorIndex(VectorChecks):
    """Vectors in a Qdrant collection through ``qdrant-client`` (server or local mode).

    Exactly one of ``url`` (server/cluster), ``path`` (local mode, on disk) or
    ``client`` (an existing ``QdrantClient``) must be given. The collection is created
    (cosine, ``dim``) if missing; against a server, keyword payload indexes are created
    for ``workspace_id`` (as tenant key), ``collection_id`` and ``document_id``. Local
    mode has no payload indexes (qdrant-client warns that they have no effect there), so
    none are requested.

    Args:
        url: Qdrant server URL, e.g. ``http://127.0.0.1:6333``.
        path: Local-mode storage directory.
        client: A ready ``QdrantClient`` (not closed by :meth:`close`).
        api_key: Server API key.
        collection: Collection name.
        dim: Vector dimension of the single default space (when ``spaces`` is None).
        spaces: Named vector → dimension; an existing collection's must match (module doc).
        timeout: Server request timeout in seconds.

    Attributes:
        migrated: None, or the message saying a collection of another layout was re-created.

    Raises:
        ValueError: If not exactly one of url/path/client is given, ``dim`` < 1, or
            the collection exists with another size or distance.
        VectorStoreInUse: local mode, and another process holds ``path``.
        VectorStoreUnavailable: the server at ``url`` cannot be reached or refuses the
            requests (e.g. a wrong API key).
    """

    def __init__(
        self,
        *,
        url: str | None = None,
        path: Path | None = None,
        client: Any = None,
        api_key: str | None = None,
        collection: str = "passages",
        dim: int = 384,
        spaces: Mapping[str, int] | None = None,
        timeout: int = 30,
    ) -> None:
        from qdrant_client import QdrantClient, models
        from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

        if sum(x is not None for x in (url, path, client)) != 1:
            raise ValueError("give exactly one of url, path or client")
        if dim < 1:
            raise ValueError(f"dim must be >= 1, got {dim}")
        if not collection:
            raise ValueError("collection must be non-empty")
        self._models = models
        self.spaces = check_spaces(spaces, dim)
        self.migrated: str | None = None
        self.collection = collection
        self._owns_client = client is None
        if url is not None:
            # Probe first: on an unreachable server QdrantClient's background version check
            # would also warn (from a thread) after our one-line error.
            check_server(url, api_key=api_key, timeout=timeout)
            client = QdrantClient(url=url, api_key=api_key, timeout=timeout)
        elif path is not None:
            Path(path).mkdir(parents=True, exist_ok=True)
            try:
                client = QdrantClient(path=str(path))
            except RuntimeError as exc:  # portalocker's lock on the storage folder
                if "already accessed" not in str(exc):
                    raise
                raise VectorStoreInUse(
                    f"the qdrant-client storage at {path} is open in another process", Path(path)
                ) from None
        self._client: Any = client
        self._local = type(getattr(client, "_client", None)).__name__ == "QdrantLocal"
        self._lock = threading.Lock()
        try:
            self._ensure_collection()
        except (ResponseHandlingException, UnexpectedResponse) as exc:
            if url is None:
                raise
            if self._owns_client:
                client.close()
            raise _unavailable(url, exc) from None

    def _ensure_collection(self) -> None:
        models = self._models
        client = self._client
        if client.collection_exists(self.collection):
            params = client.get_collection(self.collection).config.params.vectors
            found = None
            if not isinstance(params, dict):
                size = getattr(params, "size", None)
                found = f"one unnamed vector ({size} dims, before named vectors)"
            elif set(params) != set(self.spaces):
                found = "named vectors " + ", ".join(sorted(params))
            else:
                for name, p in params.items():
                    if p.size != self.spaces[name] or p.distance != models.Distance.COSINE:
                        raise ValueError(
                            f"collection {self.collection!r} has {name}: {p}, expected size={self.spaces[name]} cosine"
                        )
            if found is not None:
                client.delete_collection(self.collection)
                self.migrated = legacy_message(f"collection {self.collection!r}", found, self.spaces)
        if not client.collection_exists(self.collection):
            client.create_collection(
                self.collection,
                vectors_config={
                    name: models.VectorParams(size=size, distance=models.Distance.COSINE)
                    for name, size in self.spaces.items()
                },
            )
        if self._local:
            return
        existing = client.get_collection(self.collection).payload_schema or {}
        for key in PAYLOAD_KEYS:
            if key in existing:
                continue
            schema: Any = models.PayloadSchemaType.KEYWORD
            if key == "workspace_id":
                schema = models.KeywordIndexParams(type=models.KeywordIndexType.KEYWORD, is_tenant=True)
            client.create_payload_index(self.collection, key, field_schema=schema, wait=True)

    def upsert(self, points: Sequence[VectorPoint]) -> None:
        """Insert or replace points (last wins for a repeated passage id).

        Raises:
            ValueError: As :meth:`EdgeVectorIndex.upsert`.
        """
        models = self._models
        items = [
            models.PointStruct(
                id=point_id(p.passage_id), vector={p.space: check_point(p, self.spaces)}, payload=payload_of(p)
            )
            for p in latest_points(points)
        ]
        with self._lock:
            for start in range(0, len(items), UPSERT_BATCH):
                self._client.upsert(self.collection, points=items[start : start + UPSERT_BATCH], wait=True)

    def search(
        self,
        vector: np.ndarray,
        *,
        workspace_id: str,
        collection_ids: Sequence[str] | None = None,
        document_ids: Sequence[str] | None = None,
        limit: int = 100,
        space: str = DEFAULT_SPACE,
    ) -> list[tuple[str, float]]:
        """Nearest passages by cosine similarity within one workspace and one named vector.

        Same arguments, result order and errors as :meth:`EdgeVectorIndex.search`.
        """
        values = self._search_args(vector, workspace_id, collection_ids, document_ids, limit, space)
        if values is None:
            return []
        models = self._models
        must: list[Any] = [models.FieldCondition(key="workspace_id", match=models.MatchValue(value=workspace_id))]
        if collection_ids is not None:
            must.append(
                models.FieldCondition(key="collection_id", match=models.MatchAny(any=sorted(set(collection_ids))))
            )
        if document_ids is not None:
            must.append(models.FieldCondition(key="document_id", match=models.MatchAny(any=sorted(set(document_ids)))))
        query_filter = models.Filter(must=must)

        def run(fetch: int) -> list[tuple[str, float]]:
            response = self._client.query_points(
                self.collection,
                query=values,
                using=space,
                query_filter=query_filter,
                limit=fetch,
                with_payload=["passage_id"],
            )
            return [(hit.payload["passage_id"], float(hit.score)) for hit in response.points]

        return ranked_search(run, limit)

    def has_space(self, space: str, *, workspace_id: str) -> bool:
        """Whether the workspace has any point in the named vector ``space``.

        Raises:
            ValueError: On an unknown space or an empty workspace id.
        """
        self._check_space(space)
        if not workspace_id or not isinstance(workspace_id, str):
            raise ValueError("workspace_id must be a non-empty string")
        models = self._models
        query_filter = models.Filter(
            must=[
                models.FieldCondition(key="workspace_id", match=models.MatchValue(value=workspace_id)),
                models.FieldCondition(key="space", match=models.MatchValue(value=space)),
            ]
        )
        return int(self._client.count(self.collection, count_filter=query_filter, exact=True).count) > 0

    def delete(self, passage_ids: Sequence[str]) -> None:
        """Remove points by passage id (unknown ids are ignored).

        Raises:
            ValueError: If ``passage_ids`` is a str.
        """
        check_ids("passage_ids", passage_ids)
        if not passage_ids:
            return
        ids: list[int | str | UUID] = [point_id(pid) for pid in sorted(set(passage_ids))]
        with self._lock:
            self._client.delete(self.collection, points_selector=self._models.PointIdsList(points=ids), wait=True)

    def has(self, passage_ids: Sequence[str]) -> set[str]:
        """Return which of the given passage ids are stored.

        Raises:
            ValueError: If ``passage_ids`` is a str.
        """
        check_ids("passage_ids", passage_ids)
        if not passage_ids:
            return set()
        by_point = {point_id(pid): pid for pid in set(passage_ids)}
        records = self._client.retrieve(self.collection, ids=list(by_point), with_payload=False, with_vectors=False)
        return {by_point[str(record.id)] for record in records}

    def vectors(self, passage_ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored vectors of the given passages (absent ids left out), as in the edge backend.

        Returns:
            ``{passage_id: float32 array of shape (dim,)}``.

        Raises:
            ValueError: If ``passage_ids`` is a str.
        """
        check_ids("passage_ids", passage_ids)
        if not passage_ids:
            return {}
        by_point = {point_id(pid): pid for pid in set(passage_ids)}
        records = self._client.retrieve(self.collection, ids=list(by_point), with_payload=False, with_vectors=True)
        return {
            by_point[str(r.id)]: np.asarray(
                next(iter(r.vector.values())) if isinstance(r.vector, dict) else r.vector, dtype=np.float32
            )
            for r in records
        }

    def count(self) -> int:
        """Return the number of stored points."""
        return int(self._client.count(self.collection, exact=True).count)

    def clear(self) -> None:
        """Remove every point: the collection is dropped and re-created (with indexes)."""
        with self._lock:
            self._client.delete_collection(self.collection)
            self._ensure_collection()

    def close(self) -> None:
        """Close the client if this index created it (releases a local-mode lock)."""
        if self._owns_client and self._client is not None:
            self._client.close()
            self._client = None

    def __enter__(self) -> ClientVectorIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
