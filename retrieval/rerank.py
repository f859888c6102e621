"""Cross-encoder reranking (optional): score (query, text) pairs with a local model.

A cross-encoder reads query and candidate together (e.g. ``cross-encoder/ms-marco-MiniLM-L-6-v2``
via sentence-transformers' ``CrossEncoder``) and separates candidates that rank fusion
cannot. No such model ships offline with Cairn: :func:`load_reranker` returns a reranker
only when ``CAIRN_RERANKER_PATH`` names a local model folder that loads; otherwise callers
keep their fused order and say so.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path


class CrossEncoderReranker:
    """A sentence-transformers ``CrossEncoder`` from a local folder, loaded once.

    Args:
        path: Model folder.
    """

    def __init__(self, path: Path) -> None:
        from sentence_transformers import CrossEncoder

        self.name = str(path)
        self._model = CrossEncoder(str(path), device="cpu")
        self._lock = threading.Lock()

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        """Relevance of each text to the query (higher is better; the model's raw logits)."""
        if not texts:
            return []
        with self._lock:
            scores = self._model.predict([(query, t) for t in texts], show_progress_bar=False)
        return [float(s) for s in scores]


def load_reranker(path: Path | None) -> tuple[CrossEncoderReranker | None, str | None]:
    """The reranker at ``path``, or ``(None, reason)`` when there is none or it fails to load."""
    if path is None:
        return None, "no cross-encoder model is configured (CAIRN_RERANKER_PATH) and none ships offline"
    if not Path(path).is_dir():
        return None, f"the cross-encoder folder {path} does not exist"
    try:
        return CrossEncoderReranker(Path(path)), None
    except Exception as exc:  # noqa: BLE001 - any load failure means "no reranker"
        return None, f"the cross-encoder at {path} failed to load ({type(exc).__name__})"
