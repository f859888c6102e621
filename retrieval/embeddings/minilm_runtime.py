"""all-MiniLM-L6-v2 on ONNX Runtime: :class:`MiniLMRuntime`, the word-piece tokenizer and the encoder session.

The model is the package's own files, read without torch: ``tokenizer.json`` through the
``tokenizers`` package (Hugging Face's Rust WordPiece, the same that sentence-transformers'
fast tokenizer wraps; its saved padding to 128 and truncation at 128 are replaced by no
padding and truncation at ``max_length`` pieces, [CLS] and [SEP] included, as
sentence-transformers' ``max_seq_length`` does), and the ONNX graph that
:func:`retrieval.minilm_graph.build_sentence_encoder` builds from ``config.json`` and
``model.safetensors``: built at load (1.2 s of CPU with the ``onnx`` import) unless the on-disk
cache holds it for these weights (:mod:`retrieval.embeddings.graph_cache`, 0.4 s).

Every text runs in its own forward pass (no padding), so its vector never depends on which texts
shared a call. Concurrency: the tokenizer's ``encode`` and ``InferenceSession.run`` are safe to
call from several threads at once, and ``run`` releases the GIL for the whole pass, so callers
are not serialised here; one session serves them all (one copy of the weights).

Threads (measured on 2 cores, ``python -m bench.minilm_runtime``): the session has
``intra_op_threads`` (default 1) and no spinning; a batch of passages is spread over
``passage_threads`` Python threads each running one text's pass on that session, which beat one
pass at a time with two intra-op threads (see :class:`MiniLMRuntime`).
"""

from __future__ import annotations

import concurrent.futures
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from cairn.retrieval.embeddings.graph_cache import sentence_encoder_graph
from cairn.retrieval.embeddings.minilm_graph import ATTENTION_MASK, INPUT_IDS


class MiniLMRuntime:
    """The tokenizer and ONNX Runtime session of a sentence-transformers BERT model folder.

    Args:
        model_dir: Folder with ``config.json``, ``model.safetensors`` and ``tokenizer.json``.
        max_length: Word pieces per text, special tokens included (longer texts are truncated).
        intra_op_threads: ONNX Runtime threads inside one forward pass, >= 1.
        passage_threads: Python threads :meth:`encode` spreads a list of texts over, >= 1.
        graph_cache_dir: Cache folder for the built ONNX graph (:mod:`retrieval.embeddings.graph_cache`);
            None builds it in memory at every load.

    Raises:
        FileNotFoundError: a file of the model is missing.
        ValueError: a count < 1, or a model the graph builder does not support.
    """

    def __init__(
        self,
        model_dir: Path,
        *,
        max_length: int,
        intra_op_threads: int = 1,
        passage_threads: int = 1,
        graph_cache_dir: Path | None = None,
    ) -> None:
        if max_length < 2 or intra_op_threads < 1 or passage_threads < 1:
            raise ValueError("max_length must be >= 2 and thread counts >= 1")
        import onnxruntime as ort
        from tokenizers import Tokenizer

        model_dir = Path(model_dir)
        self.max_length = max_length
        self.passage_threads = passage_threads
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=max_length)
        self.unk_id = self.tokenizer.token_to_id("[UNK]")
        graph = sentence_encoder_graph(model_dir=model_dir, cache_dir=graph_cache_dir)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = intra_op_threads
        opts.inter_op_num_threads = 1
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")  # no busy-wait between passes
        self.session = ort.InferenceSession(graph, opts, providers=["CPUExecutionProvider"])
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        if passage_threads > 1:
            self._pool = concurrent.futures.ThreadPoolExecutor(passage_threads, thread_name_prefix="minilm")

    def encode_one(self, text: str) -> np.ndarray:
        """One text's sentence embedding: shape ``(hidden,)``, float32, unit L2 norm (empty text too)."""
        ids = np.asarray([self.tokenizer.encode(text).ids], dtype=np.int64)
        row: np.ndarray = self.session.run(None, {INPUT_IDS: ids, ATTENTION_MASK: np.ones_like(ids)})[0][0]
        return row

    def encode(self, texts: Sequence[str], *, parallel: bool) -> np.ndarray:
        """Sentence embeddings, one forward pass per text.

        Args:
            texts: The texts (at least one).
            parallel: Spread the passes over ``passage_threads`` threads (passages); False runs
                them in the calling thread (queries: the caller's concurrency is the parallelism).

        Returns:
            Array of shape ``(len(texts), hidden)``, float32, rows of unit L2 norm.
        """
        if parallel and self._pool is not None and len(texts) > 1:
            rows = list(self._pool.map(self.encode_one, texts))
        else:
            rows = [self.encode_one(text) for text in texts]
        return np.stack(rows).astype(np.float32, copy=False)

    def vocabulary_coverage(self, text: str) -> float:
        """Share of ``text``'s first ``max_length`` word pieces (no special tokens) that are not ``[UNK]``; empty → 1.0."""
        ids = self.tokenizer.encode(text, add_special_tokens=False).ids
        if not ids:
            return 1.0
        return sum(1 for i in ids if i != self.unk_id) / len(ids)

    def close(self) -> None:
        """Stop the passage threads (idempotent)."""
        if self._pool is not None:
            self._pool.shutdown(wait=False)
            self._pool = None


def default_passage_threads() -> int:
    """``min(2, CPUs)``: passages' parallel passes (module doc)."""
    return max(1, min(2, os.cpu_count() or 1))
