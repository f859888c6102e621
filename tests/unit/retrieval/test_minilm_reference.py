"""The torch-free MiniLM (ONNX Runtime, graph built from the package's safetensors) against
sentence-transformers on torch: vectors of the committed reference fixture, made once with torch
(tests/fixtures/minilm_reference/make_reference.py: 297 texts in English, Japanese and eight
other scripts, Python source, empty and whitespace-only texts, inputs of 512+ word pieces)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from cairn.retrieval.embeddings.minilm import LocalMiniLM

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "minilm_reference"


@pytest.mark.model
def test_vectors_equal_sentence_transformers_reference(embedder):
    texts = json.loads((FIXTURE / "texts.json").read_text(encoding="utf-8"))["texts"]
    reference = np.load(FIXTURE / "vectors.npy").astype(np.float32)
    assert len(texts) == reference.shape[0] >= 250
    assert "" in texts and any("東京" in t for t in texts) and any(t.startswith("def ") for t in texts)
    got = embedder.encode(texts)
    cosine = (got * reference).sum(axis=1) / np.linalg.norm(reference, axis=1)
    worst = int(np.argmin(cosine))
    assert cosine[worst] >= 0.9999, f"text {worst} {texts[worst][:60]!r}: cosine {cosine[worst]:.6f}"
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-6)


@pytest.mark.model
def test_passages_and_queries_share_vectors_and_truncate_at_256_pieces():
    model = LocalMiniLM(batch_size=3)
    texts = ["Glaciers carve fjords.", "ピアノのコンクールは？", "", "retrieval " * 600, "retrieval " * 254]
    passages = model.encode(texts)
    assert passages.shape == (5, 384) and passages.dtype == np.float32
    assert np.array_equal(model.encode_queries(texts), passages)  # one pass per text: the same bits
    assert np.array_equal(model.encode_query(texts[1]), passages[1])
    # 600 words and 254 words + [CLS] + [SEP] read the same first 256 pieces
    assert np.array_equal(passages[3], passages[4])
    assert model.vocabulary_coverage("") == 1.0 and model.vocabulary_coverage("Glaciers carve fjords.") == 1.0
    assert 0 < model.vocabulary_coverage("東京は日本の首都です。") < 1


@pytest.mark.model
@pytest.mark.slow  # starts a Python process
def test_the_runtime_imports_neither_torch_nor_sentence_transformers():
    """The encoder in a fresh interpreter: torch is not imported (installed or not)."""
    import subprocess

    code = (
        "import sys\nfrom cairn.retrieval.embeddings.minilm import LocalMiniLM\n"
        "m = LocalMiniLM(); m.encode(['a passage']); m.encode_query('a query')\n"
        "print(sorted(n for n in ('torch', 'sentence_transformers', 'transformers') if n in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
