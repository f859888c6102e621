"""Query micro-batching and the query-vector LRU over the real MiniLM (retrieval/embeddings/batching.py).

Batches are formed deterministically: a "gate" query holds the worker inside the encoder
until every other query is queued, so the next pass takes them all at once.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable

import numpy as np
import pytest

from cairn.retrieval.embeddings import Embedder
from cairn.retrieval.embeddings.batching import BatchedEmbedder, BatchShapeError, QueryBatcher, normalize_query

pytestmark = pytest.mark.model

TASKS = [
    "Why do kittens nap so much?",
    "The central bank raised interest rates to curb inflation.",
    "How does photosynthesis store light energy?",
    "東京は日本の首都です。",
    "Which vaccines need a booster dose after ten years?",
    "Effects of microRNA on tumour suppression in mice",
    "best practices for PostgreSQL connection pooling",
    "Is coffee consumption associated with lower mortality?",
    "short",
    "A rare code E4471-QX appears in the maintenance log.",
]


class Gated:
    """The real encoder, held at the gate text until ``release`` (records each pass's texts)."""

    def __init__(self, encode: Callable[[list[str]], np.ndarray], fail_on: str | None = None) -> None:
        self.encode = encode
        self.gate = threading.Event()
        self.entered = threading.Event()
        self.passes: list[list[str]] = []
        self.fail_on = fail_on

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.passes.append(list(texts))
        if texts == ["gate"]:
            self.entered.set()
            self.gate.wait(30)
        if self.fail_on is not None and any(self.fail_on in t for t in texts):
            raise ValueError(f"cannot embed {self.fail_on!r}")
        return self.encode(texts)


def _hold(batcher: QueryBatcher, enc: Gated):
    """Submit the gate query and wait until the worker is inside the encoder with it."""
    gate = batcher.submit("gate")
    assert enc.entered.wait(30)
    return gate


def test_concurrent_distinct_tasks_get_their_own_unbatched_vectors(embedder):
    alone = {t: embedder.encode_query(t) for t in TASKS}
    enc = Gated(embedder.encode_queries)
    batcher = QueryBatcher(enc, model_id=embedder.name, window_ms=0, max_batch=64)
    try:
        gate = _hold(batcher, enc)
        results: dict[str, np.ndarray] = {}

        def call(text: str) -> None:
            results[text] = batcher.encode(text)

        threads = [threading.Thread(target=call, args=(t,)) for t in TASKS]
        for th in threads:
            th.start()
        while batcher.stats().requests < len(TASKS) + 1:  # every caller has queued
            threading.Event().wait(0.005)
        enc.gate.set()
        for th in threads:
            th.join(30)
        gate.result(30)
    finally:
        batcher.close()
    assert sorted(enc.passes[1]) == sorted(TASKS)  # one forward pass for all ten
    assert batcher.stats().max_batch_seen == len(TASKS)
    for text, vector in results.items():
        assert vector.shape == (384,) and vector.dtype == np.float32
        assert np.allclose(vector, alone[text], atol=1e-5), text
        other = TASKS[(TASKS.index(text) + 1) % len(TASKS)]
        assert not np.allclose(vector, alone[other], atol=1e-2)  # routed to the right caller


async def test_asyncio_callers_are_batched_and_the_loop_keeps_running(embedder):
    alone = {t: embedder.encode_query(t) for t in TASKS[:6]}
    enc = Gated(embedder.encode_queries)
    batcher = QueryBatcher(enc, model_id=embedder.name, window_ms=5, max_batch=4)
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.001)

    tick = asyncio.ensure_future(ticker())
    try:
        gate = _hold(batcher, enc)
        calls = asyncio.gather(*(batcher.aencode(t) for t in TASKS[:6]))
        start = ticks
        await asyncio.sleep(0.1)  # the loop is free while the worker is held
        before = ticks - start
        enc.gate.set()
        vectors = await calls
        await asyncio.wrap_future(gate)
    finally:
        tick.cancel()
        batcher.close()
    assert before > 5
    sizes = [len(p) for p in enc.passes[1:]]
    assert sizes[0] == 4 and sum(sizes) == 6  # max_batch bounds a pass
    for text, vector in zip(TASKS[:6], vectors):
        assert np.allclose(vector, alone[text], atol=1e-5)


def test_a_failing_input_fails_only_its_own_waiter(embedder):
    enc = Gated(embedder.encode_queries, fail_on="POISON")
    batcher = QueryBatcher(enc, model_id=embedder.name, window_ms=0)
    try:
        gate = _hold(batcher, enc)
        good = [batcher.submit(t) for t in TASKS[:3]]
        bad = batcher.submit("POISON pill")
        enc.gate.set()
        gate.result(30)
        with pytest.raises(ValueError, match="POISON"):
            bad.result(30)
        for text, fut in zip(TASKS[:3], good):
            assert np.allclose(fut.result(30), embedder.encode_query(text), atol=1e-5)
    finally:
        batcher.close()
    assert sorted(enc.passes[1]) == sorted([*TASKS[:3], "POISON pill"])  # batched, failed, retried alone
    assert batcher.stats().failures == 1
    assert batcher.cache_len() == 4  # the gate and three good ones; never the failure


def test_a_wrong_shape_from_the_encoder_fails_every_waiter_of_the_pass(embedder):
    calls: list[list[str]] = []

    def broken(texts: list[str]) -> np.ndarray:
        calls.append(texts)
        if texts == ["gate"]:
            gate_open.wait(30)
            return embedder.encode_queries(texts)
        return embedder.encode_queries(texts)[:1]  # one row for many queries

    gate_open = threading.Event()
    batcher = QueryBatcher(broken, model_id="broken", window_ms=0)
    try:
        gate = batcher.submit("gate")
        while not calls:
            threading.Event().wait(0.005)
        futures = [batcher.submit(t) for t in TASKS[:3]]
        gate_open.set()
        gate.result(30)
        for fut in futures:
            with pytest.raises(BatchShapeError, match="for 3 queries"):
                fut.result(30)
    finally:
        batcher.close()


def test_repeated_tasks_hit_the_lru_with_identical_read_only_vectors(embedder):
    batcher = QueryBatcher(embedder.encode_queries, model_id=embedder.name, cache_size=8)
    try:
        first = batcher.encode("Why do kittens nap so much?")
        again = batcher.encode("  Why do   kittens\nnap so much? ")  # same normalised text
        assert again is first
        assert np.allclose(first, embedder.encode_query("Why do kittens nap so much?"), atol=1e-5)
        with pytest.raises(ValueError):
            first[0] = 1.0  # shared by every hit: read-only
        stats = batcher.stats()
        assert (stats.requests, stats.cache_hits, stats.passes) == (2, 1, 1)
    finally:
        batcher.close()


def test_lru_is_bounded_and_evicts_the_least_recently_used(embedder):
    passes: list[list[str]] = []

    def enc(texts: list[str]) -> np.ndarray:
        passes.append(texts)
        return embedder.encode_queries(texts)

    batcher = QueryBatcher(enc, model_id=embedder.name, cache_size=3)
    try:
        for text in TASKS[:3]:
            batcher.encode(text)
        batcher.encode(TASKS[0])  # now most recent: TASKS[1] is the oldest
        batcher.encode(TASKS[3])  # evicts TASKS[1]
        assert batcher.cache_len() == 3
        batcher.encode(TASKS[0])
        batcher.encode(TASKS[1])  # encoded again
    finally:
        batcher.close()
    assert [p[0] for p in passes] == [*TASKS[:4], TASKS[1]]
    assert batcher.cache_len() == 3


def test_cache_size_zero_caches_nothing_and_bad_arguments_are_refused(embedder):
    batcher = QueryBatcher(embedder.encode_queries, model_id=embedder.name, cache_size=0)
    try:
        a, b = batcher.encode("same text"), batcher.encode("same text")
        assert a is not b and np.allclose(a, b, atol=1e-6)
        assert batcher.cache_len() == 0 and batcher.stats().cache_hits == 0
        with pytest.raises(ValueError, match="must be a str"):
            batcher.submit(3)  # type: ignore[arg-type]
    finally:
        batcher.close()
    with pytest.raises(RuntimeError, match="closed"):
        batcher.submit("after close")
    for bad in ({"window_ms": -1}, {"max_batch": 0}, {"cache_size": -1}):
        with pytest.raises(ValueError, match="window_ms must be >= 0"):
            QueryBatcher(embedder.encode_queries, model_id="m", **bad)  # type: ignore[arg-type]


def test_identical_texts_in_one_pass_are_encoded_once(embedder):
    enc = Gated(embedder.encode_queries)
    batcher = QueryBatcher(enc, model_id=embedder.name, window_ms=0, cache_size=0)
    try:
        gate = _hold(batcher, enc)
        futures = [batcher.submit(t) for t in ("dup task", "dup  task", "other task")]
        enc.gate.set()
        gate.result(30)
        a, b, c = (f.result(30) for f in futures)
    finally:
        batcher.close()
    assert enc.passes[1] == ["dup task", "other task"]
    assert a is b and not np.allclose(a, c, atol=1e-2)


def test_batched_embedder_wraps_any_provider(embedder):
    wrapped = BatchedEmbedder(embedder, window_ms=1, max_batch=8, cache_size=4)
    try:
        assert isinstance(wrapped, Embedder)
        assert (wrapped.name, wrapped.dim) == (embedder.name, 384)
        assert wrapped.vocabulary_coverage("Why do kittens nap?") == 1.0  # forwarded
        assert np.allclose(wrapped.encode_query(TASKS[0]), embedder.encode_query(TASKS[0]), atol=1e-5)
        assert np.array_equal(wrapped.encode([TASKS[1]]), embedder.encode([TASKS[1]]))
        assert wrapped.batcher.stats().passes == 1
    finally:
        wrapped.close()


def test_normalize_query():
    assert normalize_query("  a\t b\n\nc  ") == "a b c"
    assert normalize_query("Cafe\u0301") == "Caf\u00e9"  # NFC


def _lengths(texts: list[str]) -> np.ndarray:
    """A stand-in encoder for the fork test (no torch in a forked child): [len, 1]."""
    return np.array([[len(t), 1.0] for t in texts], dtype=np.float32)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_starts_its_own_worker():
    import multiprocessing

    batcher = QueryBatcher(_lengths, model_id="lengths", cache_size=0)
    try:
        assert batcher.encode("abc").tolist() == [3.0, 1.0]  # the parent's worker is running
        ctx = multiprocessing.get_context("fork")
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=_encode_in_child, args=(batcher, "abcdef", child))  # fork: not pickled
        proc.start()
        assert parent.poll(30)
        assert parent.recv() == [6.0, 1.0]
        proc.join(30)
        assert proc.exitcode == 0
        assert batcher.encode("ab").tolist() == [2.0, 1.0]  # the parent's still works
    finally:
        batcher.close()


def _encode_in_child(batcher: QueryBatcher, text: str, conn) -> None:  # type: ignore[no-untyped-def]
    conn.send(batcher.submit(text).result(10).tolist())


def test_both_dense_models_go_through_batchers_with_their_own_space_and_query_prefix(embedder, multilingual_embedder):
    """The server wraps MiniLM and multilingual-e5-small (app.corpus.open_indexes): routing by
    space still sees each model's name/dim/space, and e5's batch path embeds *queries* (its
    ``query: `` prefix), not passages."""
    from cairn.retrieval.dense import DenseModels

    minilm, e5 = BatchedEmbedder(embedder), BatchedEmbedder(multilingual_embedder)
    try:
        dense = DenseModels(minilm, e5)
        assert dense.spaces == {"e5_r2": 384, "minilm": 384} and (dense.primary_space, dense.multilingual_space) == (
            "minilm",
            "e5_r2",
        )
        assert (e5.name, e5.dim, e5.space) == ("intfloat/multilingual-e5-small", 384, "e5_r2")
        task = "ピアノのコンクールで優勝したのは誰？"
        query = dense.encode_task(task, ("e5_r2",))["e5_r2"]
        assert np.allclose(query, multilingual_embedder.encode_query(task), atol=1e-5)
        assert not np.allclose(query, multilingual_embedder.encode([task])[0], atol=1e-3)  # not the passage prefix
        rows = multilingual_embedder.encode_queries([task, "東京"])
        assert np.allclose(rows[0], query, atol=1e-5) and rows.shape == (2, 384)
        assert dense.encode_task(task, ("e5_r2",))["e5_r2"] is query  # the batcher's LRU: the same read-only vector
    finally:
        minilm.close()
        e5.close()


def test_encode_passages_takes_the_caller_s_routing(embedder, multilingual_embedder):
    """Indexing routes each passage once (language identification) and hands the spaces over;
    a length mismatch is refused."""
    import pytest

    from cairn.retrieval.dense import DenseModels

    dense = DenseModels(embedder, multilingual_embedder)
    texts = ["Le Danube se jette dans la mer Noire après avoir traversé dix pays.", "Glaciers carve moraines."]
    routed = [dense.passage_space(t) for t in texts]
    assert routed == [multilingual_embedder.space, "minilm"]
    given = dense.encode_passages(texts, routed)
    assert [space for space, _ in given] == routed
    assert all(np.allclose(a[1], b[1], atol=1e-5) for a, b in zip(given, dense.encode_passages(texts), strict=True))
    with pytest.raises(ValueError, match="spaces has 1 entries for 2 texts"):
        dense.encode_passages(texts, routed[:1])
