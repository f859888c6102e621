"""Embeddings from an OpenAI-compatible HTTP endpoint: :class:`OpenAICompatibleEmbedder`.

``POST {base_url}/embeddings`` with the model name and a batch of texts; the vectors come back
float32 and L2-normalised, as every provider's do. ``httpx`` is imported when an embedder is made.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from cairn.retrieval.embeddings.base import EmbeddingError, _check_texts, _normalize_rows

if TYPE_CHECKING:
    import httpx


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

    def load(self) -> None:
        """Nothing to load: the model runs behind the endpoint."""

    def vocabulary_coverage(self, text: str) -> float | None:
        """None: the endpoint's tokenizer is not in process."""
        return None

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
