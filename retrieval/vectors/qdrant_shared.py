"""One Qdrant collection shared by several named vectors (cluster mode): client, writes, reads.

In cluster mode (``CAIRN_QDRANT_URL``) a passage is one Qdrant point carrying the dense
vector of its embedding model's space (the named vector ``"minilm"``, ``"e5"`` or
``"openai"``: :mod:`retrieval.dense`) and the lexical leg's sparse BM25 vectors (named
``"bm25_a2"`` and ``"bm25_tf_a2"``, :mod:`retrieval.lexical.sparse`). The legs are written at different times (BM25 at once,
the embedding later), so no writer may replace a whole point: Qdrant's ``upsert`` overwrites
every vector of an existing point. :func:`write_named_vectors` therefore updates only its own
vectors on points that exist (``update_vectors``) and creates the missing ones (``upsert``
with that vector and the payload). Reads of one leg ask for points that *have* its vector
(``HasVectorCondition``), and clearing or deleting a leg removes only its vector
(``delete_vectors``), so one leg's rebuild never empties the other.

Concurrency: callers serialise their own writes (a lock per index; in a process
:meth:`app.corpus.SearchIndexes._apply` finishes a batch's BM25 write before its dense
write). Two *processes* creating the same new point at the same moment could still race
(both see it missing, the later ``upsert`` drops the earlier one's vector), and the change
log's presence check would then skip the passage in the lost leg. Workers following one
change log race on the same passages only while catching up together; this is documented,
not solved (``cairn reindex`` repairs it).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from uuid import UUID

from cairn.retrieval.checks import IndexUnreadable, describe
from cairn.retrieval.vectors.types import PAYLOAD_KEYS, UPSERT_BATCH, VectorStoreInUse, VectorStoreUnavailable


def unavailable(url: str, exc: BaseException) -> VectorStoreUnavailable:
    """A one-line :class:`VectorStoreUnavailable` naming ``url`` and the first line of ``exc``."""
    text = str(exc).strip()
    reason = text.splitlines()[0] if text else type(exc).__name__
    return VectorStoreUnavailable(f"cannot use the Qdrant server at {url}: {reason}")


def check_server(url: str, *, api_key: str | None = None, timeout: int = 10) -> None:
    """Check that the Qdrant server at ``url`` answers (lists its collections), before serving,
    and log a warning when its version is not one this qdrant-client supports (Qdrant's rule:
    minor versions at most one apart; ``qdrant_client.common.version_check.is_compatible``).

    Raises:
        VectorStoreUnavailable: unreachable, refusing (e.g. a wrong API key) or not a URL;
            the message is one line naming ``url``.
    """
    from qdrant_client import QdrantClient
    from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

    try:
        client = QdrantClient(url=url, api_key=api_key, timeout=timeout, check_compatibility=False)
    except ValueError as exc:
        raise unavailable(url, exc) from None
    try:
        client.get_collections()
        server_version = client.info().version
    except (ResponseHandlingException, UnexpectedResponse) as exc:
        raise unavailable(url, exc) from None
    finally:
        client.close()
    from importlib.metadata import version

    from qdrant_client.common.version_check import is_compatible

    if not is_compatible(version("qdrant-client"), server_version):
        logging.getLogger(__name__).warning(
            "Qdrant server %s at %s may not work with qdrant-client %s (minor versions more than one apart)",
            server_version,
            url,
            version("qdrant-client"),
        )


def open_client(
    *, url: str | None = None, path: Path | None = None, api_key: str | None = None, timeout: int = 30
) -> Any:
    """A ``QdrantClient`` on a server (``url``, probed first) or in local mode on disk (``path``).

    Raises:
        ValueError: not exactly one of ``url`` / ``path``.
        VectorStoreInUse: local mode, and another process holds ``path``.
        VectorStoreUnavailable: the server cannot be reached or refuses.
        retrieval.checks.IndexUnreadable: local mode cannot load the storage at ``path`` (a
            damaged ``storage.sqlite`` or ``meta.json``).
    """
    from qdrant_client import QdrantClient

    if (url is None) == (path is None):
        raise ValueError("give exactly one of url or path")
    if url is not None:
        # Probe first, with the version check done there: QdrantClient's own check runs in a
        # background thread that can outlive the client (a warning from a thread after our
        # one-line error on an unreachable server; a refused connection after close).
        check_server(url, api_key=api_key, timeout=timeout)
        return QdrantClient(url=url, api_key=api_key, timeout=timeout, check_compatibility=False)
    assert path is not None
    Path(path).mkdir(parents=True, exist_ok=True)
    try:
        return QdrantClient(path=str(path))
    except RuntimeError as exc:  # portalocker's lock on the storage folder
        if "already accessed" not in str(exc):
            raise IndexUnreadable("vector store", path, describe(exc)) from exc
        raise VectorStoreInUse(f"the qdrant-client storage at {path} is open in another process", Path(path)) from None
    except Exception as exc:  # sqlite3.DatabaseError, a pickle or JSON error: the same refusal
        raise IndexUnreadable("vector store", path, describe(exc)) from exc


def is_local(client: Any) -> bool:
    """Whether ``client`` runs qdrant-client's local mode (no payload indexes there)."""
    return type(getattr(client, "_client", None)).__name__ == "QdrantLocal"


def ensure_payload_indexes(client: Any, collection: str) -> None:
    """Keyword payload indexes on the id keys (``workspace_id`` as the tenant key); servers only
    (local mode has none and warns that they have no effect)."""
    from qdrant_client import models

    if is_local(client):
        return
    existing = client.get_collection(collection).payload_schema or {}
    for key in PAYLOAD_KEYS:
        if key in existing:
            continue
        schema: Any = models.PayloadSchemaType.KEYWORD
        if key == "workspace_id":
            schema = models.KeywordIndexParams(type=models.KeywordIndexType.KEYWORD, is_tenant=True)
        client.create_payload_index(collection, key, field_schema=schema, wait=True)


def has_vector(vectors: str | Sequence[str]) -> Any:
    """A filter condition: the point carries the named vector, or any one of ``vectors``."""
    from qdrant_client import models

    names = [vectors] if isinstance(vectors, str) else list(vectors)
    if len(names) == 1:
        return models.HasVectorCondition(has_vector=names[0])
    return models.Filter(should=[models.HasVectorCondition(has_vector=name) for name in names])


def holding(client: Any, collection: str, vector: str | Sequence[str], point_ids: Sequence[str]) -> set[str]:
    """Which of ``point_ids`` exist *and* carry the named ``vector`` (or any one of several)."""
    from qdrant_client import models

    if not point_ids:
        return set()
    ids: list[int | str | UUID] = list(point_ids)
    query = models.Filter(must=[models.HasIdCondition(has_id=ids), has_vector(vector)])
    records, _ = client.scroll(collection, scroll_filter=query, limit=len(ids), with_payload=False, with_vectors=False)
    return {str(r.id) for r in records}


def count_holding(client: Any, collection: str, vector: str | Sequence[str]) -> int:
    """Number of points carrying the named ``vector`` (or any one of several)."""
    from qdrant_client import models

    query = models.Filter(must=[has_vector(vector)])
    return int(client.count(collection, count_filter=query, exact=True).count)


def write_named_vectors(
    client: Any, collection: str, items: Sequence[tuple[str, dict[str, Any], dict[str, str]]]
) -> None:
    """Set some named vectors on points, keeping their other vectors (module doc).

    Args:
        client: A ``QdrantClient``.
        collection: The collection.
        items: ``(point_id, {vector name: value}, payload)``; ids unique. The payload is written only when the point is created (a
            passage's ids never change).
    """
    from qdrant_client import models

    for start in range(0, len(items), UPSERT_BATCH):
        batch = items[start : start + UPSERT_BATCH]
        ids: list[int | str | UUID] = [pid for pid, _, _ in batch]
        existing = {str(r.id) for r in client.retrieve(collection, ids=ids, with_payload=False, with_vectors=False)}
        updates = [models.PointVectors(id=pid, vector=vectors) for pid, vectors, _ in batch if pid in existing]
        creates = [
            models.PointStruct(id=pid, vector=vectors, payload=payload)
            for pid, vectors, payload in batch
            if pid not in existing
        ]
        if updates:
            client.update_vectors(collection, points=updates, wait=True)
        if creates:
            client.upsert(collection, points=creates, wait=True)


def drop_named_vectors(
    client: Any, collection: str, vectors: Sequence[str], point_ids: Sequence[str] | None = None
) -> None:
    """Remove the named ``vectors`` from the given points (all points when None); other vectors,
    the payload and the points stay. Ids of points that do not exist are ignored: they are
    selected by a filter (``has_id``), as qdrant-client's local mode raises ``KeyError`` for an
    unknown id in a ``PointIdsList`` (found by tests/unit/retrieval/test_lexical_backends.py)."""
    from qdrant_client import models

    if point_ids is not None and not point_ids:
        return
    must: list[Any] = []
    if point_ids is not None:
        ids: list[int | str | UUID] = list(point_ids)
        must.append(models.HasIdCondition(has_id=ids))
    selector = models.FilterSelector(filter=models.Filter(must=must))
    client.delete_vectors(collection, vectors=list(vectors), points=selector, wait=True)


def payload_filter(workspace_id: str, collection_ids: Sequence[str] | None, document_ids: Sequence[str] | None) -> Any:
    """The visibility filter every search applies inside Qdrant: the workspace, and (when given)
    any of the collections / documents (ids sorted, so the request is stable)."""
    from qdrant_client import models

    must: list[Any] = [models.FieldCondition(key="workspace_id", match=models.MatchValue(value=workspace_id))]
    if collection_ids is not None:
        must.append(models.FieldCondition(key="collection_id", match=models.MatchAny(any=sorted(set(collection_ids)))))
    if document_ids is not None:
        must.append(models.FieldCondition(key="document_id", match=models.MatchAny(any=sorted(set(document_ids)))))
    return models.Filter(must=must)
