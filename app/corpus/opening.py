"""Opening the search indexes a configuration names (:func:`open_indexes`), and the one-line
refusal when one of them cannot be read (:class:`IndexNeedsRebuild`).

Whoosh and the embedded vector stores are derived from SQL. One that cannot be read — a
truncated, deleted or garbage file — is refused with one line naming the index and the repair
command, ``cairn reindex``, which opens the indexes with ``rebuild_unreadable`` (the damaged
index is re-created empty) and rebuilds them from SQL. An index of an older layout (a Whoosh
schema naming a module that no longer exists, a vector store before named vectors) is not
damage: it is re-created and re-filled at open by every command (:mod:`app.corpus.indexing`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from cairn.app.core.config import Settings
from cairn.app.corpus.indexing import SearchIndexes
from cairn.retrieval.checks import IndexUnreadable
from cairn.retrieval.dense import DenseModels
from cairn.retrieval.lexical import LexicalIndex, open_lexical_index

if TYPE_CHECKING:  # the vector stores (Qdrant's client) are imported when opened
    from cairn.retrieval.vectors import VectorIndex

REPAIR_COMMAND = "cairn reindex"


class IndexNeedsRebuild(RuntimeError):
    """A derived index cannot be read; its one-line message names it and the repair command.

    Attributes:
        index: The :class:`retrieval.checks.IndexUnreadable` raised by the index.
        message: ``the BM25 index at … cannot be read (EOFError: …): rebuild it from SQL with
            `cairn reindex --data-dir …` (the database is not affected)``.
    """

    def __init__(self, index: IndexUnreadable, data_dir: Path | None) -> None:
        self.index = index
        where = f" --data-dir {data_dir}" if data_dir is not None else ""
        self.message = f"{index}: rebuild it from SQL with `{REPAIR_COMMAND}{where}` (the database is not affected)"
        super().__init__(self.message)


def _repair_dir(settings: Settings) -> Path:
    """The data dir ``cairn reindex`` must be given: the settings' own, or for a process of
    ``serve --workers N`` (whose data dir is its slot ``<data dir>/workers/<k>``) the data dir
    that holds the database, whose reindex drops every slot (each is rebuilt at start)."""
    from cairn.app.core.datadir import WORKERS_DIR

    folder = Path(settings.data_dir)
    return folder.parent.parent if folder.parent.name == WORKERS_DIR else folder


def open_indexes(settings: Settings, *, with_vectors: bool = True, rebuild_unreadable: bool = False) -> SearchIndexes:
    """Open the indexes named by ``settings`` (embedded paths or a Qdrant server).

    Takes the data dir's process lock first when an index lives there
    (:attr:`app.core.config.Settings.local_indexes`; :class:`app.core.datadir.DataDirLock`,
    released by :meth:`SearchIndexes.close`): Whoosh and the embedded vector engines allow one
    process at a time. Cluster mode (both legs in a Qdrant server) takes no lock, so several
    workers (``uvicorn --workers``, one container each) can run on one configuration.

    Args:
        settings: :class:`app.core.config.Settings`.
        with_vectors: False opens only the lexical index (no model load).
        rebuild_unreadable: Re-create an embedded index that cannot be read empty instead of
            refusing (``cairn reindex``, which then rebuilds it from SQL); an index re-created
            on open says so in :meth:`SearchIndexes.migration_message`.

    Raises:
        app.core.datadir.DataDirInUse: another process holds the data dir (one-line message).
        retrieval.vectors.VectorStoreUnavailable: the Qdrant server cannot be reached.
        IndexNeedsRebuild: an embedded index cannot be read (and ``rebuild_unreadable`` is False).
    """
    from cairn.app.core.datadir import DataDirInUse, DataDirLock
    from cairn.retrieval.embeddings import BatchedEmbedder, load_embedder
    from cairn.retrieval.lexical import sparse_config
    from cairn.retrieval.vectors import ClientVectorIndex, VectorStoreInUse, open_vector_index

    data_lock = DataDirLock(Path(settings.data_dir)) if settings.local_indexes else None
    lexical: LexicalIndex | None = None
    vectors: VectorIndex | None = None
    embedder = multilingual = None
    server = settings.resolved_vector_backend == "server"
    cluster = settings.resolved_lexical_backend == "qdrant"
    where: dict[str, Any] = {"url": settings.qdrant_url} if server else {"path": settings.qdrant_dir}
    try:
        if with_vectors and settings.embedder != "none":
            if settings.embedder == "openai":
                embedder = load_embedder(
                    "openai",
                    base_url=settings.embedding_url,
                    model=settings.embedding_model,
                    api_key=settings.embedding_api_key,
                )
            else:
                embedder = load_embedder(
                    "local", query_threads=settings.query_threads, graph_cache_dir=settings.resolved_model_cache_dir
                )
            embedder = BatchedEmbedder(
                embedder,
                window_ms=settings.query_batch_window_ms,
                max_batch=settings.query_batch_max,
                cache_size=settings.query_cache_size,
            )
            if settings.multilingual_embedder == "e5":  # non-Latin-script passages and tasks (retrieval.dense)
                multilingual = BatchedEmbedder(
                    load_embedder("e5"),
                    window_ms=settings.query_batch_window_ms,
                    max_batch=settings.query_batch_max,
                    cache_size=settings.query_cache_size,
                )
        spaces = DenseModels(embedder, multilingual).spaces if embedder is not None else None
        try:
            if embedder is not None and cluster:
                vectors = ClientVectorIndex(
                    **where,
                    api_key=settings.qdrant_api_key,
                    collection=settings.qdrant_collection,
                    spaces=spaces,
                    sparse_vectors=sparse_config(),
                    rebuild_unreadable=rebuild_unreadable and not server,
                )
            elif embedder is not None:
                vectors = open_vector_index(
                    path=None if server else settings.qdrant_dir,
                    url=settings.qdrant_url if server else None,
                    api_key=settings.qdrant_api_key,
                    collection=settings.qdrant_collection,
                    spaces=spaces,
                    backend=settings.resolved_vector_backend,
                    rebuild_unreadable=rebuild_unreadable,
                )
            if not cluster:
                lexical = open_lexical_index(
                    backend="whoosh", path=settings.whoosh_dir, rebuild_unreadable=rebuild_unreadable
                )
            elif isinstance(vectors, ClientVectorIndex):  # one client per collection (local mode: per path)
                lexical = open_lexical_index(
                    backend="qdrant",
                    client=vectors.client,
                    collection=settings.qdrant_collection,
                    avg_length=settings.bm25_avg_length,
                )
            else:
                lexical = open_lexical_index(
                    backend="qdrant",
                    **where,
                    api_key=settings.qdrant_api_key,
                    collection=settings.qdrant_collection,
                    avg_length=settings.bm25_avg_length,
                )
        except VectorStoreInUse:  # held by a process that does not take Cairn's lock
            raise DataDirInUse(Path(settings.data_dir), None) from None
        except IndexUnreadable as exc:
            raise IndexNeedsRebuild(exc, _repair_dir(settings) if settings.local_indexes else None) from exc
    except BaseException:
        if vectors is not None:
            vectors.close()
        if data_lock is not None:
            data_lock.release()
        raise
    return SearchIndexes(
        lexical=lexical,
        vectors=vectors,
        embedder=embedder,
        multilingual=multilingual,
        state_dir=Path(settings.data_dir),
        data_lock=data_lock,
        space=settings.storage_space if settings.local_indexes else None,
    )
