"""Vector backend on ``qdrant-edge-py``: Qdrant's Rust engine in process, one shard per
directory.

API notes (qdrant-edge-py 0.9.0, found by introspection of its ``.pyi`` stubs): a shard is
``EdgeShard.create(path, EdgeConfig(...))`` or ``EdgeShard.load(path)`` (create fails on
a directory with segments; a second open of the same path fails on the WAL lock); every
write is an ``UpdateOperation`` passed to ``shard.update``; searches are
``shard.query(QueryRequest(query=Query.Nearest(vector), filter=Filter(...)))``; returned
point ids are ``uuid.UUID`` objects; errors are bare ``Exception``; ``retrieve`` needs
``with_payload`` and ``with_vector`` positionally although the stubs give defaults; and no
optimizer runs in the background, so without ``optimize()`` search stays exact.

Named vectors: the shard has one named vector per embedding model (``spaces``, e.g.
``minilm`` and ``e5``); a point carries the vector of its own space only and a search names
the space (``Query.Nearest(vector, using=space)``), which returns only points that have it.
A shard of the layout before named vectors (one unnamed vector) or with other vector names
is deleted and re-created empty on open; :attr:`EdgeVectorIndex.migrated` then holds the
message and the caller re-embeds every passage (:mod:`app.corpus.indexing`).
"""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from uuid import UUID

import numpy as np

from cairn.retrieval.checks import IndexUnreadable, check_ids, describe
from cairn.retrieval.vectors.types import (
    DEFAULT_SPACE,
    PAYLOAD_KEYS,
    UPSERT_BATCH,
    VectorChecks,
    VectorPoint,
    VectorStoreInUse,
    check_point,
    check_spaces,
    latest_points,
    legacy_message,
    payload_of,
    point_id,
    ranked_search,
)

WHAT = "vector store"
"""The index's name in messages (:class:`retrieval.checks.IndexUnreadable`)."""


class EdgeVectorIndex(VectorChecks):
    """Vectors in a ``qdrant-edge-py`` shard directory (created if missing, else loaded).

    Args:
        path: Shard directory.
        dim: Vector dimension of the single default space (when ``spaces`` is None).
        spaces: Named vector → dimension (module doc); an existing shard's must match.

    Attributes:
        migrated: None, or the message saying that a shard of another layout was re-created
            empty (every passage must be re-embedded).

    Raises:
        ValueError: If a dimension is < 1 or an existing shard has another dimension/distance
            for one of the names.
        VectorStoreInUse: Another process holds the shard (the engine's WAL lock).
        retrieval.checks.IndexUnreadable: The engine cannot load the shard otherwise (a damaged
            or partial folder) and ``rebuild_unreadable`` is False; with it, the folder is
            deleted and the shard re-created empty (:attr:`migrated` says so).
    """

    def __init__(
        self,
        path: Path,
        *,
        dim: int = 384,
        spaces: Mapping[str, int] | None = None,
        rebuild_unreadable: bool = False,
    ) -> None:
        import qdrant_edge as qe

        if dim < 1:
            raise ValueError(f"dim must be >= 1, got {dim}")
        self._qe = qe
        self.path = Path(path)
        self.spaces = check_spaces(spaces, dim)
        self.migrated: str | None = None
        self._lock = threading.Lock()
        try:
            self._shard: Any = self._load_or_create()
        except IndexUnreadable as exc:
            if not rebuild_unreadable:
                raise
            shutil.rmtree(self.path, ignore_errors=True)  # derived data: rebuilt from SQL
            self._shard = self._load_or_create()
            self.migrated = f"{exc}: it was re-created empty and every passage is re-embedded now (SQL is unchanged)"
        schema = self._shard.info().payload_schema
        for key in PAYLOAD_KEYS:
            if key not in schema:
                params = (
                    qe.KeywordIndexParams(is_tenant=True) if key == "workspace_id" else qe.PayloadSchemaType.Keyword
                )
                self._shard.update(qe.UpdateOperation.create_field_index(key, params))

    def _load_or_create(self) -> Any:
        """The shard at :attr:`path`: loaded, re-created empty when of another layout (sets
        :attr:`migrated`), or created when the folder holds none.

        Raises:
            ValueError: one of our named vectors with another size or distance.
            VectorStoreInUse: the engine's WAL lock is held by another process.
            IndexUnreadable: the engine cannot load or create the shard (a damaged or
                partial folder), or its ``edge_config.json`` is not JSON.
        """
        qe = self._qe
        shard: Any = None
        try:
            if (self.path / "edge_config.json").exists():
                shard = qe.EdgeShard.load(str(self.path))
                found = self._check_config(shard)
                if found is not None:
                    shard.close()
                    shard = None
                    shutil.rmtree(self.path)
                    self.migrated = legacy_message(f"at {self.path}", found, self.spaces)
            if shard is None:
                self.path.mkdir(parents=True, exist_ok=True)
                config = qe.EdgeConfig(
                    vectors={
                        name: qe.EdgeVectorParams(size=size, distance=qe.Distance.Cosine)
                        for name, size in self.spaces.items()
                    }
                )
                shard = qe.EdgeShard.create(str(self.path), config)
            return shard
        except (ValueError, IndexUnreadable):
            raise
        except Exception as exc:  # qdrant-edge raises bare Exception
            if "WouldBlock" in str(exc):  # the WAL's file lock: another process has the shard open
                raise VectorStoreInUse(
                    f"the qdrant-edge shard at {self.path} is open in another process", self.path
                ) from None
            raise IndexUnreadable(WHAT, self.path, describe(exc)) from exc

    def _check_config(self, shard: Any) -> str | None:
        """None if the shard has exactly our named vectors; else a description of its layout
        (to be re-created). Raises ValueError on a named vector of another size/distance (after
        closing ``shard``), IndexUnreadable when the file is not JSON."""
        try:
            config = json.loads((self.path / "edge_config.json").read_text())
        except (OSError, ValueError) as exc:
            shard.close()
            raise IndexUnreadable(WHAT, self.path, f"edge_config.json: {describe(exc)}") from exc
        vectors = config.get("vectors", {})
        if not isinstance(vectors, dict):
            return "an unknown vector configuration"
        if set(vectors) != set(self.spaces):
            if "" in vectors:
                return f"one unnamed vector ({vectors[''].get('size')} dims, before named vectors)"
            return "named vectors " + ", ".join(sorted(vectors))
        for name, params in vectors.items():
            size = params.get("size") if isinstance(params, dict) else None
            distance = str(params.get("distance", "Cosine")) if isinstance(params, dict) else "?"
            if size != self.spaces[name] or distance.lower() != "cosine":
                shard.close()
                raise ValueError(
                    f"shard at {self.path} has {name}: size={size} distance={distance}, "
                    f"expected size={self.spaces[name]} Cosine"
                )
        return None

    def _require_open(self) -> Any:
        if self._shard is None:
            raise ValueError(f"vector index at {self.path} is closed")
        return self._shard

    def upsert(self, points: Sequence[VectorPoint]) -> None:
        """Insert or replace points (last wins for a repeated passage id).

        Args:
            points: Points to store; ``[]`` is a no-op.

        Raises:
            ValueError: On an empty id, a vector of the wrong shape, non-finite or zero,
                or if the index is closed.
        """
        qe = self._qe
        items = [
            qe.Point(point_id(p.passage_id), {p.space: check_point(p, self.spaces)}, payload_of(p))
            for p in latest_points(points)
        ]
        with self._lock:
            shard = self._require_open()
            for start in range(0, len(items), UPSERT_BATCH):
                shard.update(qe.UpdateOperation.upsert_points(items[start : start + UPSERT_BATCH]))

    def _filter(
        self, workspace_id: str, collection_ids: Sequence[str] | None, document_ids: Sequence[str] | None
    ) -> Any:
        qe = self._qe
        must = [qe.FieldCondition(key="workspace_id", match=qe.MatchValue(workspace_id))]
        if collection_ids is not None:
            must.append(qe.FieldCondition(key="collection_id", match=qe.MatchAny(sorted(set(collection_ids)))))
        if document_ids is not None:
            must.append(qe.FieldCondition(key="document_id", match=qe.MatchAny(sorted(set(document_ids)))))
        return qe.Filter(must=must)

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

        Args:
            vector: Query vector, shape ``(dim,)``.
            workspace_id: Only this workspace's points are searched.
            collection_ids: If given, only these collections (``[]`` matches nothing).
            document_ids: If given, only these documents (``[]`` matches nothing).
            limit: Maximum results, >= 1.
            space: The named vector searched (only points with it are found).

        Returns:
            ``(passage_id, cosine)`` pairs, cosine desc then passage id asc.

        Raises:
            ValueError: On invalid arguments (see :class:`VectorPoint` for vectors), an
                unknown space or a closed index.
        """
        values = self._search_args(vector, workspace_id, collection_ids, document_ids, limit, space)
        if values is None:
            return []
        qe = self._qe
        shard = self._require_open()
        query_filter = self._filter(workspace_id, collection_ids, document_ids)

        def run(fetch: int) -> list[tuple[str, float]]:
            request = qe.QueryRequest(
                limit=fetch,
                query=qe.Query.Nearest(values, using=space),
                filter=query_filter,
                with_payload=["passage_id"],
            )
            return [(hit.payload["passage_id"], float(hit.score)) for hit in shard.query(request)]

        return ranked_search(run, limit)

    def has_space(self, space: str, *, workspace_id: str) -> bool:
        """Whether the workspace has any point in the named vector ``space`` (indexed count).

        Raises:
            ValueError: On an unknown space, an empty workspace id or a closed index.
        """
        self._check_space(space)
        if not workspace_id or not isinstance(workspace_id, str):
            raise ValueError("workspace_id must be a non-empty string")
        qe = self._qe
        query_filter = qe.Filter(
            must=[
                qe.FieldCondition(key="workspace_id", match=qe.MatchValue(workspace_id)),
                qe.FieldCondition(key="space", match=qe.MatchValue(space)),
            ]
        )
        return int(self._require_open().count(qe.CountRequest(exact=True, filter=query_filter))) > 0

    def delete(self, passage_ids: Sequence[str]) -> None:
        """Remove points by passage id (unknown ids are ignored).

        Raises:
            ValueError: If ``passage_ids`` is a str or the index is closed.
        """
        check_ids("passage_ids", passage_ids)
        if not passage_ids:
            return
        ids: list[int | str | UUID] = [point_id(pid) for pid in sorted(set(passage_ids))]
        with self._lock:
            self._require_open().update(self._qe.UpdateOperation.delete_points(ids))

    def has(self, passage_ids: Sequence[str]) -> set[str]:
        """Return which of the given passage ids are stored.

        Raises:
            ValueError: If ``passage_ids`` is a str or the index is closed.
        """
        check_ids("passage_ids", passage_ids)
        if not passage_ids:
            return set()
        by_point = {point_id(pid): pid for pid in set(passage_ids)}
        records = self._require_open().retrieve(list(by_point), False, False)
        return {by_point[str(record.id)] for record in records}

    def vectors(self, passage_ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored vectors of the given passages (absent ids are left out).

        Used to export embeddings (e.g. to build a peer system over the very same vectors in
        ``bench/peer.py``) without encoding the corpus again.

        Returns:
            ``{passage_id: float32 array of shape (dim,)}``.

        Raises:
            ValueError: If ``passage_ids`` is a str or the index is closed.
        """
        check_ids("passage_ids", passage_ids)
        if not passage_ids:
            return {}
        by_point = {point_id(pid): pid for pid in set(passage_ids)}
        out: dict[str, np.ndarray] = {}
        ids = list(by_point)
        for start in range(0, len(ids), UPSERT_BATCH):
            for record in self._require_open().retrieve(ids[start : start + UPSERT_BATCH], False, True):
                vector = record.vector
                if isinstance(vector, dict):  # named vectors: a point has the one of its space
                    vector = next(iter(vector.values()))
                out[by_point[str(record.id)]] = np.asarray(vector, dtype=np.float32)
        return out

    def count(self) -> int:
        """Return the number of stored points.

        Raises:
            ValueError: If the index is closed.
        """
        return int(self._require_open().count(self._qe.CountRequest(exact=True)))

    def clear(self) -> None:
        """Remove every point (payload indexes are kept)."""
        with self._lock:
            self._require_open().update(self._qe.UpdateOperation.delete_points_by_filter(self._qe.Filter()))

    def optimize(self) -> bool:
        """Run Qdrant's segment optimizers now (builds HNSW for large segments; blocking).

        After this, searches on big segments are approximate (HNSW) rather than exact.

        Returns:
            True if any segment changed.
        """
        with self._lock:
            return bool(self._require_open().optimize())

    def flush(self) -> None:
        """Write pending changes to the segment files (the WAL already made them durable)."""
        with self._lock:
            self._require_open().flush()

    def close(self) -> None:
        """Flush and release the shard and its directory lock. Idempotent."""
        with self._lock:
            if self._shard is not None:
                self._shard.flush()
                self._shard.close()
                self._shard = None

    def __enter__(self) -> EdgeVectorIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
