"""The built ONNX graph of a sentence encoder kept on disk between starts, keyed by its weights.

Building the MiniLM graph from ``model.safetensors`` (:func:`retrieval.embeddings.minilm_graph.build_sentence_encoder`)
made loading the model cost 1.2 s of CPU at every process start (importing ``onnx`` 0.7 s,
reading the weights and building 0.5 s); from this cache it costs 0.4 s (the SHA-256 of the
weights, 0.11 s, and of the graph, 0.12 s, then the session), and ``onnx`` is not imported.
A one-file ``cairn ingest`` went from 3.4 to 2.7 s of CPU (2-core test machine, 2026-12-03,
``/usr/bin/time``, the best of three). Every ``cairn`` process that embeds (``serve``,
``ingest``, ``mcp``, ``reindex``, each worker of ``serve --workers N``) pays it.

The entry is ``<cache_dir>/onnx/sentence-encoder-<key>.onnx``, where ``key`` is the SHA-256 of
:data:`~retrieval.embeddings.minilm_graph.BUILDER_VERSION`, ``config.json`` and
``model.safetensors``: new weights or a changed builder make a new entry, never a stale graph.
The file is the graph's bytes followed by their SHA-256 (32 bytes), written to a temporary name
and renamed, so a reader (another process, another worker) sees a whole entry or none; an entry
whose digest does not match (truncated, damaged) is built again and replaced. A cache that
cannot be written (read-only, full) costs the build at each start and one warning, nothing else.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from pathlib import Path

from cairn.retrieval.embeddings.minilm_graph import BUILDER_VERSION, build_sentence_encoder, read_bert_config

log = logging.getLogger("cairn.embeddings")

DIGEST_BYTES = 32
"""Length of the SHA-256 that ends an entry."""


def _file_sha256(path: Path) -> bytes:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").digest()


def entry_path(*, model_dir: Path, cache_dir: Path) -> Path:
    """Where the graph of the model in ``model_dir`` is cached under ``cache_dir`` (module doc).

    Raises:
        FileNotFoundError: ``config.json`` or ``model.safetensors`` is missing.
    """
    key = hashlib.sha256(f"sentence-encoder builder {BUILDER_VERSION}\n".encode())
    key.update(_file_sha256(model_dir / "config.json"))
    key.update(_file_sha256(model_dir / "model.safetensors"))
    return cache_dir / "onnx" / f"sentence-encoder-{key.hexdigest()}.onnx"


def read_entry(path: Path) -> bytes | None:
    """The graph stored at ``path``, or None when it is missing or its digest does not match."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    graph, digest = data[:-DIGEST_BYTES], data[-DIGEST_BYTES:]
    if len(data) <= DIGEST_BYTES or hashlib.sha256(graph).digest() != digest:
        return None
    return graph


def write_entry(path: Path, graph: bytes) -> None:
    """Store ``graph`` at ``path`` atomically (a temporary file in the same folder, then a rename).

    Raises:
        OSError: the folder cannot be made or written.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(graph)
            f.write(hashlib.sha256(graph).digest())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def sentence_encoder_graph(*, model_dir: Path, cache_dir: Path | None) -> bytes:
    """The serialised ONNX graph of the sentence encoder in ``model_dir``, from the cache when it
    holds a whole entry for these weights, else built (and stored there when ``cache_dir`` is set).

    Args:
        model_dir: Folder with ``config.json`` and ``model.safetensors``.
        cache_dir: The cache folder (the app's ``Settings.resolved_model_cache_dir``); None builds
            in memory only.

    Returns:
        The model's bytes, byte-identical to :func:`build_sentence_encoder`'s for these files.

    Raises:
        FileNotFoundError: a file of the model is missing.
        ValueError: a model the graph builder does not support.
    """
    from safetensors.numpy import load_file

    path = entry_path(model_dir=model_dir, cache_dir=cache_dir) if cache_dir is not None else None
    if path is not None and (graph := read_entry(path)) is not None:
        return graph
    graph = build_sentence_encoder(
        config=read_bert_config(model_dir=model_dir), weights=load_file(str(model_dir / "model.safetensors"))
    )
    if path is not None:
        try:
            write_entry(path, graph)
        except OSError as exc:
            log.warning("cannot cache the embedding model's graph at %s (built at every start): %s", path, exc)
    return graph
