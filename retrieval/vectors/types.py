"""Shared vocabulary of the vector backends: points, the protocol, ids, validation.

See :mod:`retrieval.vectors` for the facade and the semantics every backend shares.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from cairn.retrieval.checks import check_ids

PASSAGE_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://cairn.invalid/passage")
"""UUIDv5 namespace for point ids; changing it orphans every stored point."""

PAYLOAD_KEYS = ("workspace_id", "collection_id", "document_id", "space")
DEFAULT_SPACE = "minilm"
"""Named vector of points written without a space (all-MiniLM-L6-v2's; :mod:`retrieval.dense`)."""


def check_spaces(spaces: Mapping[str, int] | None, dim: int) -> dict[str, int]:
    """Named vector → dimension, validated; None means ``{DEFAULT_SPACE: dim}``.

    Raises:
        ValueError: On no spaces, an empty or unsafe name, or a dimension < 1.
    """
    out = dict(spaces) if spaces is not None else {DEFAULT_SPACE: dim}
    if not out:
        raise ValueError("spaces must name at least one vector")
    for name, size in out.items():
        if not isinstance(name, str) or not name or not name.replace("_", "").replace("-", "").isalnum():
            raise ValueError(f"vector name must be letters, digits, '-' or '_', got {name!r}")
        if not isinstance(size, int) or size < 1:
            raise ValueError(f"dim of vector {name!r} must be >= 1, got {size!r}")
    return dict(sorted(out.items()))


def legacy_message(where: str, found: str, spaces: Mapping[str, int]) -> str:
    """The one message logged when a vector store of an older layout is re-created."""
    return (
        f"vector store {where} has the layout {found}, this version stores named vectors "
        f"{', '.join(f'{k} ({v} dims)' for k, v in spaces.items())}: it was re-created empty and "
        "every passage is re-embedded now (SQL is unchanged; this runs once)"
    )


UPSERT_BATCH = 1_024


class VectorStoreUnavailable(RuntimeError):
    """The vector store cannot be opened (e.g. a Qdrant server is unreachable); one-line message."""


class VectorStoreInUse(VectorStoreUnavailable):
    """An embedded store's directory is held by another process (the engines allow one each).

    Attributes:
        path: The storage directory.
    """

    def __init__(self, message: str, path: str | os.PathLike[str]) -> None:
        super().__init__(message)
        self.path = path


def point_id(passage_id: str) -> str:
    """Return the Qdrant point id of a passage: ``uuid5(PASSAGE_NAMESPACE, passage_id)``.

    Args:
        passage_id: Non-empty passage id.

    Returns:
        The UUID as a lowercase hyphenated string (deterministic across processes).
    """
    return str(uuid.uuid5(PASSAGE_NAMESPACE, passage_id))


@dataclass(frozen=True, eq=False)
class VectorPoint:
    """One passage vector with its filterable payload.

    Attributes:
        passage_id: Unique passage id (the upsert key).
        vector: Shape ``(dim,)`` float array, finite, not all zeros (any norm; cosine).
        workspace_id: Tenant partition.
        collection_id: Collection of the document.
        document_id: Document of the passage.
        space: The named vector (embedding model) the vector belongs to; a point has one.
    """

    passage_id: str
    vector: np.ndarray
    workspace_id: str
    collection_id: str
    document_id: str
    space: str = DEFAULT_SPACE


@runtime_checkable
class VectorIndex(Protocol):
    """What every vector backend offers (see the module doc for shared semantics).

    Attributes:
        migrated: None, or the message saying a store of another layout was re-created empty
            on open; the caller re-indexes every passage, logs it once and sets it back to None.
    """

    migrated: str | None

    def upsert(self, points: Sequence[VectorPoint]) -> None:
        """Insert or replace points by passage id."""
        ...

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
        """``(passage_id, cosine)`` pairs within one named vector, best first, ties by passage_id asc."""
        ...

    def has_space(self, space: str, *, workspace_id: str) -> bool:
        """Whether the workspace has any point in the named vector ``space``."""
        ...

    def delete(self, passage_ids: Sequence[str]) -> None:
        """Remove points by passage id; unknown ids are ignored."""
        ...

    def has(self, passage_ids: Sequence[str]) -> set[str]:
        """The subset of ``passage_ids`` that are stored."""
        ...

    def vectors(self, passage_ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored (unit-length) vectors of the passages that are stored (each in its own space)."""
        ...

    def count(self) -> int:
        """Number of stored points."""
        ...

    def clear(self) -> None:
        """Remove every point."""
        ...

    def close(self) -> None:
        """Release the storage (idempotent)."""
        ...


def as_vector(vector: np.ndarray, dim: int) -> list[float]:
    """Validate a vector and return it as float32-rounded Python floats.

    Args:
        vector: Array-like of shape ``(dim,)``.
        dim: Expected dimension.

    Returns:
        The values as a list of floats.

    Raises:
        ValueError: On a wrong shape, non-finite values or an all-zero vector.
    """
    array = np.asarray(vector, dtype=np.float32)
    if array.shape != (dim,):
        raise ValueError(f"vector must have shape ({dim},), got {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ValueError("vector must be finite")
    if not np.any(array):
        raise ValueError("vector must not be all zeros (cosine is undefined)")
    return array.tolist()


def check_point(point: VectorPoint, spaces: Mapping[str, int]) -> list[float]:
    """Validate a point's ids, space and vector; return the vector values (see :func:`as_vector`).

    Raises:
        ValueError: On an empty id, a space the index does not have, or a bad vector.
    """
    for name in ("passage_id", *PAYLOAD_KEYS):
        value = getattr(point, name)
        if not isinstance(value, str) or not value:
            raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    if point.space not in spaces:
        raise ValueError(f"space must be one of {', '.join(spaces)}, got {point.space!r}")
    return as_vector(point.vector, spaces[point.space])


def latest_points(points: Sequence[VectorPoint]) -> list[VectorPoint]:
    """Drop earlier points with the same passage id (last wins), sorted by passage id."""
    latest = {point.passage_id: point for point in points}
    return [latest[key] for key in sorted(latest)]


def payload_of(point: VectorPoint) -> dict[str, str]:
    """Return the Qdrant payload stored with a point (its ids)."""
    return {
        "passage_id": point.passage_id,
        "workspace_id": point.workspace_id,
        "collection_id": point.collection_id,
        "document_id": point.document_id,
        "space": point.space,
    }


def ranked_search(
    query: Callable[[int], list[tuple[str, float]]],
    limit: int,
) -> list[tuple[str, float]]:
    """Run an engine query, widening it until no score tie crosses the ``limit`` cut.

    Args:
        query: ``fetch -> [(passage_id, score)]`` in engine order (score desc).
        limit: Results wanted, >= 1.

    Returns:
        At most ``limit`` pairs sorted by score desc, then passage id asc.
    """
    fetch = limit + 16
    while True:
        hits = query(fetch)
        if len(hits) < fetch or hits[-1][1] != hits[limit - 1][1]:
            break
        fetch *= 2
    hits.sort(key=lambda hit: (-hit[1], hit[0]))
    return hits[:limit]


class VectorChecks:
    """Mixin: argument validation shared by the backends (needs ``self.spaces``)."""

    spaces: dict[str, int]

    @property
    def dim(self) -> int:
        """Dimension of the default space (or of the only space)."""
        return self.spaces.get(DEFAULT_SPACE) or next(iter(self.spaces.values()))

    def _check_space(self, space: str) -> int:
        if space not in self.spaces:
            raise ValueError(f"space must be one of {', '.join(self.spaces)}, got {space!r}")
        return self.spaces[space]

    def _search_args(
        self,
        vector: np.ndarray,
        workspace_id: str,
        collection_ids: Sequence[str] | None,
        document_ids: Sequence[str] | None,
        limit: int,
        space: str = DEFAULT_SPACE,
    ) -> list[float] | None:
        """Validate search arguments; None means "nothing can match" (an empty id list)."""
        dim = self._check_space(space)
        if not workspace_id or not isinstance(workspace_id, str):
            raise ValueError("workspace_id must be a non-empty string")
        if limit < 1:
            raise ValueError(f"limit must be >= 1, got {limit}")
        check_ids("collection_ids", collection_ids)
        check_ids("document_ids", document_ids)
        values = as_vector(vector, dim)
        if (collection_ids is not None and not collection_ids) or (document_ids is not None and not document_ids):
            return None
        return values
