"""Micro-batching and reuse of query embeddings, for any ``encode_queries(list[str]) -> ndarray``.

One query through a small encoder on CPU costs ~18 ms (all-MiniLM-L6-v2, 1 torch thread),
and most of that is per forward pass, not per query: 8 short queries in one pass cost a
few times one, not eight. Under concurrent load :class:`QueryBatcher` therefore gathers
the queries of concurrent callers into one forward pass, and keeps the vectors of repeated
queries in a bounded LRU.

How it works:

- One dedicated worker thread owns the encoder (never the event loop's default executor,
  so a full executor cannot starve or deadlock it). Callers :meth:`QueryBatcher.submit` a
  text and get a :class:`concurrent.futures.Future`; :meth:`QueryBatcher.encode` blocks a
  thread on it, :meth:`QueryBatcher.aencode` awaits it without blocking the event loop.
- The worker takes the first queued query, then everything already queued, up to
  ``max_batch``. It waits up to ``window_ms`` for more only while the load is concurrent
  (the previous pass held more than one query, or more than one was already queued), so
  a lone caller never pays the window (concurrency 1 keeps its latency).
- Identical texts in one pass are encoded once.
- Errors: if a pass raises, each of its queries is encoded again alone, so a failing input
  fails only its own waiter (with the exception the encoder raised for it) and the others
  get their vectors. A pass that returns the wrong shape fails every waiter of that pass
  (:class:`BatchShapeError`): the encoder itself is broken then.
- Cache: key = (model id, normalised text); :func:`normalize_query` (Unicode NFC, runs of
  whitespace → one space, trimmed) is applied before encoding too, so a cached vector is
  always the vector of its key. Values are read-only float32 arrays, shared by every hit.

A forked child (a pre-fork worker model) inherits the batcher but not its thread: its
first :meth:`QueryBatcher.submit` starts a new queue and worker.

Measured (bench/query_embedding.py, 8 threads each embedding distinct SciFact queries, cache
off, 2 cores shared with other work): 15.9 → 23.9 queries/s with ~7.8 queries per pass. In
the server (bench/latency.py, concurrency 8) passes held only ~1.3 queries on average on a
busy machine: concurrent packs rarely reach the embedder at the same moment there.

Vectors equal those of the encoder called on each text alone within float tolerance
(padding in a batch changes the summation order: max abs difference ~1e-7 for MiniLM,
tests/unit/retrieval/test_query_batching.py).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import queue
import re
import threading
import time
import unicodedata
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from cairn.retrieval.embeddings.protocol import Embedder

log = logging.getLogger("cairn.query_batching")

EncodeQueries = Callable[[list[str]], np.ndarray]
"""``encode_queries(texts) -> array (len(texts), dim)``: the wrapped encoder."""

_WHITESPACE = re.compile(r"\s+")
_STOP = object()


class BatchShapeError(RuntimeError):
    """The encoder returned an array that does not have one row per query."""


def normalize_query(text: str) -> str:
    """The text actually embedded and cached: NFC, whitespace runs → one space, trimmed.

    For WordPiece and SentencePiece tokenizers this changes no token (they split on
    whitespace and normalise Unicode themselves), so the vector equals that of ``text``.

    Raises:
        ValueError: If ``text`` is not a str.
    """
    if not isinstance(text, str):
        raise ValueError(f"text must be a str, got {type(text).__name__}")
    return _WHITESPACE.sub(" ", unicodedata.normalize("NFC", text)).strip()


@dataclass
class BatchStats:
    """Counters since start (read with :meth:`QueryBatcher.stats`).

    Attributes:
        requests: Queries submitted.
        cache_hits: Queries answered from the LRU.
        passes: Forward passes run (batches, not counting the one-by-one retries).
        encoded: Distinct texts encoded in those passes.
        max_batch_seen: Largest pass.
        failures: Waiters that received an exception.
    """

    requests: int = 0
    cache_hits: int = 0
    passes: int = 0
    encoded: int = 0
    max_batch_seen: int = 0
    failures: int = 0
    sizes: dict[int, int] = field(default_factory=dict)
    """Pass size → number of passes of that size."""

    @property
    def mean_batch(self) -> float:
        """Distinct texts per forward pass (0.0 before the first)."""
        return self.encoded / self.passes if self.passes else 0.0


@dataclass
class _Request:
    key: str
    future: concurrent.futures.Future[np.ndarray]


class QueryBatcher:
    """Gathers concurrent query embeddings into one forward pass, with an LRU (module doc).

    Args:
        encode_queries: The encoder: ``list[str] -> ndarray (n, dim)``; called only from
            this batcher's worker thread.
        model_id: Cache namespace (the model's name): vectors of two models never mix.
        window_ms: How long, at most, a pass waits for more queries under concurrent load
            (0 = never wait: take only what is already queued).
        max_batch: Most queries per forward pass (>= 1).
        cache_size: LRU entries (0 disables the cache).

    Raises:
        ValueError: If ``window_ms`` < 0, ``max_batch`` < 1 or ``cache_size`` < 0.
    """

    def __init__(
        self,
        encode_queries: EncodeQueries,
        *,
        model_id: str,
        window_ms: float = 2.0,
        max_batch: int = 16,
        cache_size: int = 1024,
    ) -> None:
        if window_ms < 0 or max_batch < 1 or cache_size < 0:
            raise ValueError(
                f"window_ms must be >= 0 (got {window_ms}), max_batch >= 1 (got {max_batch}), "
                f"cache_size >= 0 (got {cache_size})"
            )
        self._encode = encode_queries
        self.model_id = model_id
        self.window_s = window_ms / 1000
        self.max_batch = max_batch
        self.cache_size = cache_size
        self._cache: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self._queue: queue.SimpleQueue[_Request | object] = queue.SimpleQueue()
        self._worker: threading.Thread | None = None
        self._pid = os.getpid()
        self._closed = False
        self._concurrent = False  # the previous pass held more than one query
        self._stats = BatchStats()

    # -- callers -----------------------------------------------------------------------

    def submit(self, text: str) -> concurrent.futures.Future[np.ndarray]:
        """Queue one query; the future's result is its vector, shape ``(dim,)``, read-only.

        Raises:
            ValueError: If ``text`` is not a str.
            RuntimeError: If the batcher is closed.
        """
        key = normalize_query(text)
        future: concurrent.futures.Future[np.ndarray] = concurrent.futures.Future()
        with self._lock:
            if self._closed:
                raise RuntimeError("query batcher is closed")
            self._stats.requests += 1
            hit = self._cache_get(key)
            if hit is not None:
                self._stats.cache_hits += 1
                future.set_result(hit)
                return future
            if self._worker is not None and self._pid != os.getpid():
                # a forked child inherits the worker object but not its thread: start anew
                self._queue = queue.SimpleQueue()
                self._worker = None
            if self._worker is None:
                self._pid = os.getpid()
                self._worker = threading.Thread(target=self._run, name=f"query-batcher[{self.model_id}]", daemon=True)
                self._worker.start()
        self._queue.put(_Request(key, future))
        return future

    def encode(self, text: str) -> np.ndarray:
        """Embed one query, blocking the calling thread (not the worker) until its pass ends.

        Raises:
            ValueError: If ``text`` is not a str.
            RuntimeError: If called from the batcher's own worker thread (it would deadlock).
            Exception: Whatever the encoder raised for this text.
        """
        if threading.current_thread() is self._worker:
            raise RuntimeError("QueryBatcher.encode called from its own worker thread")
        return self.submit(text).result()

    async def aencode(self, text: str) -> np.ndarray:
        """Embed one query without blocking the event loop (same result as :meth:`encode`)."""
        return await asyncio.wrap_future(self.submit(text))

    def stats(self) -> BatchStats:
        """A copy of the counters."""
        with self._lock:
            s = self._stats
            return BatchStats(
                s.requests, s.cache_hits, s.passes, s.encoded, s.max_batch_seen, s.failures, dict(s.sizes)
            )

    def cache_len(self) -> int:
        """Entries in the LRU now (<= ``cache_size``)."""
        with self._lock:
            return len(self._cache)

    def close(self) -> None:
        """Stop the worker after the queries already queued (idempotent)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            worker = self._worker
        if worker is not None:
            self._queue.put(_STOP)
            worker.join(timeout=30)
        s = self.stats()
        log.info(
            "query batcher %s closed: %d queries, %d cache hits, %d passes (mean %.2f, max %d), %d failed",
            self.model_id,
            s.requests,
            s.cache_hits,
            s.passes,
            s.mean_batch,
            s.max_batch_seen,
            s.failures,
        )

    # -- cache (callers hold self._lock) -------------------------------------------------

    def _cache_get(self, key: str) -> np.ndarray | None:
        if not self.cache_size:
            return None
        hit = self._cache.get((self.model_id, key))
        if hit is not None:
            self._cache.move_to_end((self.model_id, key))
        return hit

    def _cache_put(self, key: str, vector: np.ndarray) -> None:
        if not self.cache_size:
            return
        self._cache[(self.model_id, key)] = vector
        self._cache.move_to_end((self.model_id, key))
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)

    # -- worker ------------------------------------------------------------------------

    def _gather(self, first: _Request) -> tuple[list[_Request], bool]:
        """The pass starting with ``first``; second value: stop after it."""
        batch = [first]
        stop = False
        while len(batch) < self.max_batch:  # what is already queued, without waiting
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is _STOP:
                return batch, True
            assert isinstance(item, _Request)
            batch.append(item)
        if self.window_s and (self._concurrent or len(batch) > 1):
            deadline = time.monotonic() + self.window_s
            while len(batch) < self.max_batch:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                try:
                    item = self._queue.get(timeout=remaining)
                except queue.Empty:
                    break
                if item is _STOP:
                    stop = True
                    break
                assert isinstance(item, _Request)
                batch.append(item)
        return batch, stop

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            assert isinstance(item, _Request)
            batch, stop = self._gather(item)
            live = [r for r in batch if r.future.set_running_or_notify_cancel()]
            if live:
                self._pass(live)
            if stop:
                return

    def _pass(self, batch: list[_Request]) -> None:
        keys = list(dict.fromkeys(r.key for r in batch))  # distinct texts, first-seen order
        self._concurrent = len(batch) > 1
        vectors: dict[str, np.ndarray] = {}
        errors: dict[str, BaseException] = {}
        try:
            vectors = dict(zip(keys, self._call(keys), strict=True))
        except BatchShapeError as exc:
            errors = dict.fromkeys(keys, exc)
        except Exception as exc:  # noqa: BLE001 - retried one by one: only bad inputs fail
            if len(keys) == 1:
                errors[keys[0]] = exc
            else:
                log.warning("query batch of %d failed (%s); encoding them one by one", len(keys), exc)
                for key in keys:
                    try:
                        vectors[key] = self._call([key])[0]
                    except Exception as one:  # noqa: BLE001 - delivered to this text's waiters
                        errors[key] = one
        with self._lock:
            self._stats.passes += 1
            self._stats.encoded += len(keys)
            self._stats.max_batch_seen = max(self._stats.max_batch_seen, len(keys))
            self._stats.sizes[len(keys)] = self._stats.sizes.get(len(keys), 0) + 1
            self._stats.failures += sum(1 for r in batch if r.key in errors)
            for key, vector in vectors.items():
                self._cache_put(key, vector)
        for r in batch:
            if r.key in errors:
                r.future.set_exception(errors[r.key])
            else:
                r.future.set_result(vectors[r.key])

    def _call(self, keys: Sequence[str]) -> list[np.ndarray]:
        matrix = np.asarray(self._encode(list(keys)), dtype=np.float32)
        if matrix.ndim != 2 or matrix.shape[0] != len(keys):
            raise BatchShapeError(f"encoder returned shape {matrix.shape} for {len(keys)} queries")
        rows = []
        for row in matrix:
            vector = np.array(row, dtype=np.float32)  # own copy: rows are cached and shared
            vector.flags.writeable = False
            rows.append(vector)
        return rows


class BatchedEmbedder:
    """An :class:`~retrieval.embeddings.protocol.Embedder` whose :meth:`encode_query` goes
    through a :class:`QueryBatcher` (over the provider's ``encode_queries``, its query-tuned
    batch path); every other member of the protocol is the wrapped provider's, delegated one
    by one.

    Args:
        embedder: The provider to wrap.
        window_ms, max_batch, cache_size: As :class:`QueryBatcher`.
    """

    def __init__(self, embedder: Embedder, *, window_ms: float = 2.0, max_batch: int = 16, cache_size: int = 1024):
        self.inner = embedder
        self.batcher = QueryBatcher(
            embedder.encode_queries,
            model_id=embedder.name,
            window_ms=window_ms,
            max_batch=max_batch,
            cache_size=cache_size,
        )

    @property
    def name(self) -> str:
        """The wrapped provider's model name."""
        return self.inner.name

    @property
    def dim(self) -> int:
        """The wrapped provider's vector dimension."""
        return int(self.inner.dim)

    @property
    def space(self) -> str:
        """The wrapped provider's named vector."""
        return self.inner.space

    def load(self) -> None:
        """Load the wrapped provider's model now."""
        self.inner.load()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embed passages with the wrapped provider (not batched across callers, not cached)."""
        return self.inner.encode(texts)

    def encode_query(self, text: str) -> np.ndarray:
        """Embed one query through the batcher (blocks this thread; read-only result).

        Raises:
            ValueError: If ``text`` is not a str.
            Exception: Whatever the provider raised for this text.
        """
        return self.batcher.encode(text)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Embed several queries with the wrapped provider in one pass (not through the batcher)."""
        return self.inner.encode_queries(texts)

    def vocabulary_coverage(self, text: str) -> float | None:
        """The wrapped provider's vocabulary coverage of ``text``."""
        return self.inner.vocabulary_coverage(text)

    async def aencode_query(self, text: str) -> np.ndarray:
        """As :meth:`encode_query`, awaited without blocking the event loop."""
        return await self.batcher.aencode(text)

    def close(self) -> None:
        """Stop the batcher's worker thread, then close the wrapped provider (idempotent)."""
        self.batcher.close()
        self.inner.close()
