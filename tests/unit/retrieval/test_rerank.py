"""The optional cross-encoder: without a configured model folder there is none, and why."""

from __future__ import annotations

from cairn.retrieval.rerank import load_reranker


def test_no_reranker_without_a_model(tmp_path):
    reranker, why = load_reranker(None)
    assert reranker is None and "CAIRN_RERANKER_PATH" in why
    reranker, why = load_reranker(tmp_path / "missing")
    assert reranker is None and "does not exist" in why
