"""Vector backend on ``qdrant-client``: a Qdrant server/cluster, or local mode on disk.

Named vectors as in :mod:`retrieval.vectors.edge`: one per embedding model (``spaces``), a
point has the vector of its own space, searches name the space (``using``). A collection of
the layout before named vectors (one unnamed vector) or with other names is dropped and
re-created empty on open (:attr:`ClientVectorIndex.migrated` holds the message; the caller
re-embeds every passage).

Cluster mode shares the collection with the lexical leg's sparse vectors
(:mod:`retrieval.vectors.qdrant_shared`): the dense spaces and the sparse BM25 vectors (``bm25_a2``/``bm25_tf_a2``) are named vectors
of one point. Re-creating such a collection (older dense layout) keeps its sparse vector
configuration but not their data, so the caller then re-applies the lexical leg too
(:class:`app.corpus.SearchIndexes` follows the change log again from its start).
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from uuid import UUID

import numpy as np

from cairn.retrieval.checks import IndexUnreadable, check_ids
from cairn.retrieval.vectors.qdrant_shared import (
    check_server,
    count_holding,
    drop_named_vectors,
    ensure_payload_indexes,
    has_vector,
    holding,
    is_local,
    open_client,
    payload_filter,
    unavailable,
    write_named_vectors,
)
from cairn.retrieval.vectors.types import (
    DEFAULT_SPACE,
    UPSERT_BATCH,
    VectorChecks,
    VectorPoint,
    check_point,
    check_spaces,
    latest_points,
    legacy_message,
    payload_of,
    point_id,
    ranked_search,
)

__all__ = ["ClientVectorIndex", "check_server"]


class ClientVectorIndex(VectorChecks):
    """Vectors in a Qdrant collection through ``qdrant-client`` (server or local mode).

    Exactly one of ``url`` (server/cluster), ``path`` (local mode, on disk) or
    ``client`` (an existing ``QdrantClient``) must be given. The collection is created
    (cosine, one named vector per space) if missing; against a server, keyword payload indexes are created
    for ``workspace_id`` (as tenant key), ``collection_id`` and ``document_id``. Local
    mode has no payload indexes (qdrant-client warns that they have no effect there), so
    none are requested.

    Shared collection (cluster mode): with ``sparse_vectors`` the collection is created with
    those named sparse vectors too (the lexical leg's ``bm25``, :mod:`retrieval.lexical.sparse`)
    and this index touches only the dense vectors of a point (its ``spaces``): writes keep the
    point's other vectors, ``has``/``count`` see points that carry a vector of one of the
    spaces, ``delete``/``clear`` remove only those (:mod:`retrieval.vectors.qdrant_shared`).

    Args:
        url: Qdrant server URL, e.g. ``http://127.0.0.1:6333``.
        path: Local-mode storage directory.
        client: A ready ``QdrantClient`` (not closed by :meth:`close`).
        api_key: Server API key.
        collection: Collection name.
        dim: Vector dimension of the single default space (when ``spaces`` is None).
        spaces: Named vector → dimension; an existing collection's must match (module doc).
        timeout: Server request timeout in seconds.
        sparse_vectors: Named sparse vector configs (``{name: SparseVectorParams}``) the
            collection shares with other indexes; None (default): a dense-only collection.

    Attributes:
        migrated: None, or the message saying a collection of another layout was re-created.

    Raises:
        ValueError: If not exactly one of url/path/client is given, ``dim`` < 1, the
            collection has one of ``spaces`` with another size or distance, or it has the
            current dense layout without one of ``sparse_vectors`` (delete it and reindex).
        VectorStoreInUse: local mode, and another process holds ``path``.
        VectorStoreUnavailable: the server at ``url`` cannot be reached or refuses the
            requests (e.g. a wrong API key).
        retrieval.checks.IndexUnreadable: local mode cannot load the storage at ``path`` and
            ``rebuild_unreadable`` is False; with it, the folder is deleted and made again
            empty (:attr:`migrated` says so).
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
        sparse_vectors: dict[str, Any] | None = None,
        rebuild_unreadable: bool = False,
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
        self.spaces = check_spaces(spaces, dim)
        self.migrated: str | None = None
        self.collection = collection
        self.sparse_vectors = dict(sparse_vectors or {})
        self._shared = bool(self.sparse_vectors)
        self._owns_client = client is None
        if client is None:
            try:
                client = open_client(url=url, path=path, api_key=api_key, timeout=timeout)
            except IndexUnreadable as exc:
                if not rebuild_unreadable or path is None:
                    raise
                shutil.rmtree(path, ignore_errors=True)  # derived data: rebuilt from SQL
                client = open_client(path=path)
                self.migrated = (
                    f"{exc}: it was re-created empty and every passage is re-embedded now (SQL is unchanged)"
                )
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
        client = self._client
        if client.collection_exists(self.collection):
            config = client.get_collection(self.collection).config.params
            found = self._other_layout(config.vectors)
            held = set(config.sparse_vectors or {})
            if found is None and self.sparse_vectors and held and not set(self.sparse_vectors) <= held:
                # cluster mode's sparse BM25 vectors are named with the analyzer version
                # (retrieval.lexical.sparse.BM25_VECTOR): other names hold another version's terms
                found = (
                    f"sparse vectors {', '.join(sorted(held))} (this version: {', '.join(sorted(self.sparse_vectors))})"
                )
            if found is not None:
                # derived data only: re-created empty (with the sparse vectors cluster mode
                # needs, else those it had); the caller re-applies every leg kept in it (module doc)
                sparse = dict(self.sparse_vectors) or dict(config.sparse_vectors or {})
                client.delete_collection(self.collection)
                self.migrated = legacy_message(f"collection {self.collection!r}", found, self.spaces)
                if config.sparse_vectors:
                    self.migrated += "; the lexical leg's sparse BM25 vectors it held are re-indexed too"
                self._create(sparse)
            else:
                missing = sorted(set(self.sparse_vectors) - set(config.sparse_vectors or {}))
                if missing:
                    raise ValueError(
                        f"collection {self.collection!r} exists without the sparse vector(s) {missing} that cluster "
                        "mode keeps the lexical leg in (made by an older Cairn): delete the collection and run "
                        "`cairn reindex`"
                    )
        else:
            self._create(self.sparse_vectors)
        ensure_payload_indexes(client, self.collection)

    def _other_layout(self, params: Any) -> str | None:
        """None if the collection's dense vectors are exactly ``self.spaces``; else a description
        of its layout (it is re-created). Raises ValueError on one of our names with another
        size or distance (a configuration error, not an older layout)."""
        models = self._models
        if not isinstance(params, dict):
            return f"one unnamed vector ({getattr(params, 'size', None)} dims, before named vectors)"
        if set(params) != set(self.spaces):
            return "named vectors " + ", ".join(sorted(params)) if params else "no dense vector"
        for name, p in params.items():
            if p.size != self.spaces[name] or p.distance != models.Distance.COSINE:
                raise ValueError(
                    f"collection {self.collection!r} has {name}: {p}, expected size={self.spaces[name]} cosine"
                )
        return None

    def _create(self, sparse: dict[str, Any]) -> None:
        models = self._models
        self._client.create_collection(
            self.collection,
            vectors_config={
                name: models.VectorParams(size=size, distance=models.Distance.COSINE)
                for name, size in self.spaces.items()
            },
            sparse_vectors_config=sparse or None,
        )

    def upsert(self, points: Sequence[VectorPoint]) -> None:
        """Insert or replace points (last wins for a repeated passage id).

        Raises:
            ValueError: As :meth:`EdgeVectorIndex.upsert`.
        """
        models = self._models
        latest = latest_points(points)
        if self._shared:
            shared = [(point_id(p.passage_id), {p.space: check_point(p, self.spaces)}, payload_of(p)) for p in latest]
            with self._lock:
                write_named_vectors(self._client, self.collection, shared)
            return
        items = [
            models.PointStruct(
                id=point_id(p.passage_id), vector={p.space: check_point(p, self.spaces)}, payload=payload_of(p)
            )
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
        space: str = DEFAULT_SPACE,
    ) -> list[tuple[str, float]]:
        """Nearest passages by cosine similarity within one workspace and one named vector.

        Same arguments, result order and errors as :meth:`EdgeVectorIndex.search`.
        """
        values = self._search_args(vector, workspace_id, collection_ids, document_ids, limit, space)
        if values is None:
            return []
        query_filter = payload_filter(workspace_id, collection_ids, document_ids)

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
        # by the vector itself, not the payload: in a shared collection a point made by the
        # lexical leg first keeps that leg's payload (no ``space`` key)
        query_filter = models.Filter(
            must=[
                models.FieldCondition(key="workspace_id", match=models.MatchValue(value=workspace_id)),
                has_vector(space),
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
        if self._shared:
            with self._lock:
                drop_named_vectors(
                    self._client, self.collection, list(self.spaces), [point_id(p) for p in sorted(set(passage_ids))]
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
            return {by_point[p] for p in holding(self._client, self.collection, list(self.spaces), list(by_point))}
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
            value = r.vector
            if isinstance(value, dict):  # named: the point's own space (shared: maybe only sparse so far)
                value = next((value[name] for name in self.spaces if name in value), None)
            if value is not None:
                out[by_point[str(r.id)]] = np.asarray(value, dtype=np.float32)
        return out

    def count(self) -> int:
        """Return the number of stored points (shared: points that carry a dense vector)."""
        if self._shared:
            return count_holding(self._client, self.collection, list(self.spaces))
        return int(self._client.count(self.collection, exact=True).count)

    def clear(self) -> None:
        """Remove every point: the collection is dropped and re-created (with indexes).

        Shared: only the dense vectors are removed (the lexical leg's stay).
        """
        with self._lock:
            if self._shared:
                drop_named_vectors(self._client, self.collection, list(self.spaces))
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
