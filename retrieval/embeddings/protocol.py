"""The :class:`Embedder` protocol: every member a caller of an embedding provider uses.

Every provider (:class:`~retrieval.embeddings.minilm.LocalMiniLM`,
:class:`~retrieval.embeddings.e5.LocalE5`,
:class:`~retrieval.embeddings.openai_compatible.OpenAICompatibleEmbedder`) and the batching
wrapper (:class:`~retrieval.embeddings.batching.BatchedEmbedder`) implement all of it, so
callers never probe a provider with ``getattr``; ``tests/unit/retrieval/test_embeddings.py``
checks each against the protocol.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

__all__ = ["Embedder"]


@runtime_checkable
class Embedder(Protocol):
    """What every embedding provider offers. Vectors are float32 and L2-normalised, so cosine
    similarity is a dot product."""

    @property
    def name(self) -> str:
        """Model name, recorded with vectors so a model change can be detected."""
        ...

    @property
    def dim(self) -> int:
        """Vector dimension (a provider may learn it from its first response)."""
        ...

    @property
    def space(self) -> str:
        """Name of this model's Qdrant named vector (:mod:`retrieval.dense`): passages embedded
        by it are stored and searched there only."""
        ...

    def load(self) -> None:
        """Load the model now (idempotent; a remote provider has nothing to load).

        Raises:
            retrieval.embeddings.base.EmbeddingError: The model cannot be loaded.
        """
        ...

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embed passages: array of shape ``(len(texts), dim)``."""
        ...

    def encode_query(self, text: str) -> np.ndarray:
        """Embed one query: array of shape ``(dim,)``."""
        ...

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Embed several queries in one pass: array of shape ``(len(texts), dim)``, row ``i``
        equal to ``encode_query(texts[i])`` within float tolerance (the batch path of
        :class:`retrieval.embeddings.batching.QueryBatcher`; a model with query and passage
        prefixes, such as E5, uses its query prefix here, never :meth:`encode`)."""
        ...

    def vocabulary_coverage(self, text: str) -> float | None:
        """Share of the text's tokens the model knows, in [0, 1], or None when the provider
        cannot tell (no tokenizer in process). The dense leg weighs itself by it
        (:mod:`app.packs.legs`)."""
        ...

    def close(self) -> None:
        """Release what the provider holds (threads, HTTP clients); idempotent."""
        ...
