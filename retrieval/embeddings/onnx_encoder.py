"""all-MiniLM-L6-v2's encoder run by ONNX Runtime: the query embedding of every dense leg.

Measured on this 2-core machine (``python -m bench.query_embedding``, 64 SciFact claims, one
query per pass, one thread): sentence-transformers on torch 15.1 ms a query, ONNX Runtime
7.1 ms, with the same vectors (cosine with torch's 1.00000 for every query; int8 dynamic
quantisation, 6.5 ms, moves them to cosine 0.91–0.96 and is not used). ONNX Runtime also
runs the whole forward pass in one call that releases the GIL, where torch's Python-level
modules take the GIL between operators and queue behind the event loop and the BM25 thread
in a busy server.

The transformer (the sentence-transformers model's first module) is exported once with
``torch.onnx.export`` (TorchScript exporter, opset 17, dynamic batch and sequence axes) into
a cache folder, keyed by the model folder and its files (names, sizes, modification times),
the torch and transformers versions; later processes load the file, and the model's vectors
for a probe text are compared with torch's at every load (:class:`~retrieval.embeddings.minilm.LocalMiniLM`
falls back to torch, logged, if they differ). Pooling and normalisation are the model's own (mean over the
attention mask, then L2), done in numpy float32. Texts run one per pass, as the torch path
does: a query's vector never depends on which queries shared its pass. Passages stay on
torch (stored vectors, ingest speed and their bits are unchanged).
"""

from __future__ import annotations

import copy
import hashlib
import os
import tempfile
import threading
import warnings
from pathlib import Path
from typing import Any

import numpy as np

OPSET = 17
INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/cairn/onnx`` (``~/.cache/cairn/onnx`` by default)."""
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "cairn" / "onnx"


class OnnxQueryEncoder:
    """A sentence-transformers BERT model's embeddings through ONNX Runtime.

    Args:
        model: A loaded ``SentenceTransformer`` whose first module is a transformer, pooled
            by mean and L2-normalised (all-MiniLM-L6-v2).
        model_path: Its folder (part of the export's cache key).
        max_length: Word pieces per text (longer texts are truncated).
        threads: ONNX Runtime intra-op threads, >= 1.
        cache_dir: Where the exported ``.onnx`` file is kept (default :func:`default_cache_dir`).

    Raises:
        ImportError: ``onnxruntime`` or ``onnx`` (needed by the export) is not installed.
        ValueError: ``threads`` < 1.
        Exception: whatever the export or ONNX Runtime raise for a model they cannot run.
    """

    def __init__(
        self, model: Any, model_path: str, *, max_length: int, threads: int = 1, cache_dir: Path | None = None
    ) -> None:
        if threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")
        import onnxruntime as ort

        self.tokenizer = copy.deepcopy(model.tokenizer)  # its own copy: passages tokenize concurrently
        self.max_length = max_length
        self.path = self._export(model, model_path, cache_dir or default_cache_dir())
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")  # no busy-wait between queries
        self.session = ort.InferenceSession(str(self.path), opts, providers=["CPUExecutionProvider"])
        self._lock = threading.Lock()

    @staticmethod
    def _export(model: Any, model_path: str, cache_dir: Path) -> Path:
        """The cached ``.onnx`` file of ``model``'s transformer, exporting it first if missing."""
        import torch
        import transformers

        folder = Path(model_path).resolve()
        files = sorted(
            (str(f.relative_to(folder)), f.stat().st_size, f.stat().st_mtime_ns)
            for f in (folder.rglob("*") if folder.is_dir() else ())
            if f.is_file()
        )  # a re-packaged or fine-tuned model in the same folder gets a new file
        identity = f"{folder}|{files}|{sum(p.numel() for p in model.parameters())}|{torch.__version__}|"
        key = hashlib.sha256(f"{identity}{transformers.__version__}|{OPSET}".encode()).hexdigest()
        path = cache_dir / f"encoder-{key[:24]}.onnx"
        if path.exists():
            return path
        cache_dir.mkdir(parents=True, exist_ok=True)
        bert = model[0].auto_model

        class Encoder(torch.nn.Module):  # keyword call: BertModel.forward's positions changed in transformers 5
            def __init__(self, inner: torch.nn.Module) -> None:
                super().__init__()
                self.inner = inner

            def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
                return self.inner(
                    input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
                ).last_hidden_state

        sample = model.tokenizer(["a query"], return_tensors="pt")
        fd, tmp = tempfile.mkstemp(dir=cache_dir, suffix=".onnx.tmp")
        os.close(fd)
        try:
            with torch.no_grad(), warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the TorchScript exporter's tracer notes, not faults
                torch.onnx.export(
                    Encoder(bert).eval(),
                    tuple(sample[name] for name in INPUTS),
                    tmp,
                    input_names=list(INPUTS),
                    output_names=["last_hidden_state"],
                    dynamic_axes={name: {0: "batch", 1: "sequence"} for name in INPUTS},
                    opset_version=OPSET,
                    dynamo=False,
                )
            os.replace(tmp, path)  # atomic: a concurrent process loads a whole file or exports its own
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        return path

    def encode(self, texts: list[str]) -> np.ndarray:
        """Embed ``texts``, one forward pass each.

        Returns:
            Array of shape ``(len(texts), hidden size)``, float32, rows L2-normalised.
        """
        rows = []
        with self._lock:  # the fast tokenizer is not safe to call from two threads at once
            for text in texts:
                enc = self.tokenizer(text, truncation=True, max_length=self.max_length, return_tensors="np")
                feeds = {name: enc[name].astype(np.int64) for name in INPUTS}
                hidden = self.session.run(None, feeds)[0][0]  # (sequence, hidden)
                mask = enc["attention_mask"][0].astype(np.float32)[:, None]
                pooled = (hidden * mask).sum(axis=0) / max(float(mask.sum()), 1e-9)
                rows.append(pooled / max(float(np.linalg.norm(pooled)), 1e-12))
        return np.asarray(rows, dtype=np.float32)
