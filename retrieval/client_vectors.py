"""Vector backend on ``qdrant-client``: a Qdrant server/cluster, or local mode on disk."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from uuid import UUID

import numpy as np

from retrieval.checks import check_ids
from retrieval.qdrant_shared import (
    DENSE_VECTOR,
    check_server,
    count_holding,
    drop_named_vectors,
    ensure_payload_indexes,
    holding,
    is_local,
    open_client,
    payload_filter,
    unavailable,
    write_named_vectors,
)
from retrieval.vector_types import (
    UPSERT_BATCH,
    VectorChecks,
    VectorPoint,
    check_point,
    latest_points,
    payload_of,
    point_id,
    ranked_search,
)

__all__ = ["ClientVectorIndex", "check_server"]


class ClientVectorIndex(VectorChecks):
    """Vectors in a Qdrant collection through ``qdrant-client`` (server or local mode).

    Exactly one of ``url`` (server/cluster), ``path`` (local mode, on disk) or
    ``client`` (an existing ``QdrantClient``) must be given. The collection is created
    (cosine, ``dim``) if missing; against a server, keyword payload indexes are created
    for ``workspace_id`` (as tenant key), ``collection_id`` and ``document_id``. Local
    mode has no payload indexes (qdrant-client warns that they have no effect there), so
    none are requested.

    Shared collection (cluster mode): with ``sparse_vectors`` the collection is created with
    those named sparse vectors too (the lexical leg's ``bm25``, :mod:`retrieval.sparse_bm25`)
    and this index touches only the dense vector of a point: writes keep the point's other
    vectors, ``has``/``count`` see points that carry a dense vector, ``delete``/``clear``
    remove only the dense vector (:mod:`retrieval.qdrant_shared`).

    Args:
        url: Qdrant server URL, e.g. ``http://127.0.0.1:6333``.
        path: Local-mode storage directory.
        client: A ready ``QdrantClient`` (not closed by :meth:`close`).
        api_key: Server API key.
        collection: Collection name.
        dim: Vector dimension; must match an existing collection's.
        timeout: Server request timeout in seconds.
        sparse_vectors: Named sparse vector configs (``{name: SparseVectorParams}``) the
            collection shares with other indexes; None (default): a dense-only collection.

    Raises:
        ValueError: If not exactly one of url/path/client is given, ``dim`` < 1, or
            the collection exists with another size or distance (or without one of
            ``sparse_vectors``).
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
        timeout: int = 30,
        sparse_vectors: dict[str, Any] | None = None,
    ) -> None:
        from qdrant_client import models
        from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

        if sum(x is not None for x in (url, path, client)) != 1:
            raise ValueError("give exactly one of url, path or client")
        if dim < 1:
            raise ValueError(f"dim must be >= 1, got {dim}")
        if not collection:
            raise ValueError("collection must be non-empty")
        self._models = models
        self.dim = dim
        self.collection = collection
        self.sparse_vectors = dict(sparse_vectors or {})
        self._shared = bool(self.sparse_vectors)
        self._owns_client = client is None
        if client is None:
            client = open_client(url=url, path=path, api_key=api_key, timeout=timeout)
        self._client: Any = client
        self._local = is_local(client)
        self._lock = threading.Lock()
        try:
            self._ensure_collection()
        except (ResponseHandlingException, UnexpectedResponse) as exc:
            if url is None:
                raise
            if self._owns_client:
                client.close()
            raise unavailable(url, exc) from None

    @property
    def client(self) -> Any:
        """The ``QdrantClient`` (shared with the sparse BM25 index in cluster mode)."""
        return self._client

    def _ensure_collection(self) -> None:
        models = self._models
        client = self._client
        if client.collection_exists(self.collection):
            config = client.get_collection(self.collection).config.params
            params = config.vectors
            if (
                not isinstance(params, models.VectorParams)
                or params.size != self.dim
                or params.distance != models.Distance.COSINE
            ):
                raise ValueError(
                    f"collection {self.collection!r} exists with {params}, expected size={self.dim} cosine"
                )
            missing = sorted(set(self.sparse_vectors) - set(config.sparse_vectors or {}))
            if missing:
                raise ValueError(
                    f"collection {self.collection!r} exists without the sparse vector(s) {missing} that cluster "
                    "mode keeps the lexical leg in (made by an older Cairn): delete the collection and run "
                    "`cairn reindex`"
                )
        else:
            client.create_collection(
                self.collection,
                vectors_config=models.VectorParams(size=self.dim, distance=models.Distance.COSINE),
                sparse_vectors_config=self.sparse_vectors or None,
            )
        ensure_payload_indexes(client, self.collection)

    def upsert(self, points: Sequence[VectorPoint]) -> None:
        """Insert or replace points (last wins for a repeated passage id).

        Raises:
            ValueError: As :meth:`EdgeVectorIndex.upsert`.
        """
        models = self._models
        latest = latest_points(points)
        if self._shared:
            shared = [(point_id(p.passage_id), {DENSE_VECTOR: check_point(p, self.dim)}, payload_of(p)) for p in latest]
            with self._lock:
                write_named_vectors(self._client, self.collection, shared)
            return
        items = [
            models.PointStruct(id=point_id(p.passage_id), vector=check_point(p, self.dim), payload=payload_of(p))
            for p in latest
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
    ) -> list[tuple[str, float]]:
        """Nearest passages by cosine similarity within one workspace.

        Same arguments, result order and errors as :meth:`EdgeVectorIndex.search`.
        """
        values = self._search_args(vector, workspace_id, collection_ids, document_ids, limit)
        if values is None:
            return []
        query_filter = payload_filter(workspace_id, collection_ids, document_ids)

        def run(fetch: int) -> list[tuple[str, float]]:
            response = self._client.query_points(
                self.collection, query=values, query_filter=query_filter, limit=fetch, with_payload=["passage_id"]
            )
            return [(hit.payload["passage_id"], float(hit.score)) for hit in response.points]

        return ranked_search(run, limit)

    def delete(self, passage_ids: Sequence[str]) -> None:
        """Remove points by passage id (unknown ids are ignored).

        Raises:
            ValueError: If ``passage_ids`` is a str.
        """
        check_ids("passage_ids", passage_ids)
        if not passage_ids:
            return
        if self._shared:
            with self._lock:
                drop_named_vectors(
                    self._client, self.collection, [DENSE_VECTOR], [point_id(p) for p in sorted(set(passage_ids))]
                )
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
        if self._shared:
            return {by_point[p] for p in holding(self._client, self.collection, DENSE_VECTOR, list(by_point))}
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
        out: dict[str, np.ndarray] = {}
        for r in records:
            value = r.vector.get(DENSE_VECTOR) if isinstance(r.vector, dict) else r.vector
            if value is not None:  # shared: a point may so far hold only its sparse vector
                out[by_point[str(r.id)]] = np.asarray(value, dtype=np.float32)
        return out

    def count(self) -> int:
        """Return the number of stored points (shared: points that carry a dense vector)."""
        if self._shared:
            return count_holding(self._client, self.collection, DENSE_VECTOR)
        return int(self._client.count(self.collection, exact=True).count)

    def clear(self) -> None:
        """Remove every point: the collection is dropped and re-created (with indexes).

        Shared: only the dense vectors are removed (the lexical leg's stay).
        """
        with self._lock:
            if self._shared:
                drop_named_vectors(self._client, self.collection, [DENSE_VECTOR])
                return
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
