"""Retrieval legs: presets, the dense leg's coverage weight, and running legs until a deadline.

The leg searches are plain functions standing in for BM25 and the vector index (the real ones
run in tests/graphql/test_packs_retrieval.py); what is tested here is the orchestration.
"""

from __future__ import annotations

import asyncio
import threading
import time

import numpy as np
import pytest

from cairn.retrieval.pipeline import (
    DENSE,
    DENSE_MIN_COVERAGE,
    HYBRID,
    LEXICAL,
    RETRIEVAL_CONFIGS,
    DenseHits,
    Legs,
    run_legs,
    weigh_dense_leg,
)

BM25 = [("p1", 9.0), ("p2", 5.0)]
COSINE = [("p2", 0.8), ("p3", 0.4)]


def legs(coverage: float | None = 1.0, dense_delay: float = 0.0, release: threading.Event | None = None) -> Legs:
    def encode() -> dict[str, np.ndarray]:
        if release is not None:
            release.wait(5)
        time.sleep(dense_delay)
        return {"default": np.ones(3, dtype=np.float32)}

    return Legs(
        lexical=lambda: list(BM25),
        encode=encode,
        search_vectors=lambda vec: DenseHits(list(COSINE), {"default": list(COSINE)}, vec),
        coverage=(lambda: coverage) if coverage is not None else None,
    )


def run(config, the_legs, timeout: float = 5.0, warm=None):
    out = asyncio.run(run_legs(config, the_legs, deadline=time.monotonic() + timeout, warm=warm))
    return out, out.timings


def test_presets_by_wire_name():
    assert RETRIEVAL_CONFIGS == {"HYBRID": HYBRID, "LEXICAL": LEXICAL, "DENSE": DENSE}
    assert (HYBRID.lexical, HYBRID.dense, LEXICAL.dense, DENSE.lexical, DENSE.dense_only) == (
        True,
        True,
        False,
        False,
        True,
    )


def test_dense_weight_from_coverage():
    assert weigh_dense_leg(1.0, HYBRID).weight == 1.0
    w = weigh_dense_leg(0.95, HYBRID)
    assert (w.weight, w.skip, w.note) == (round(0.95**4, 6), False, None)
    skipped = weigh_dense_leg(0.5, HYBRID)
    assert (skipped.weight, skipped.skip) == (0.0, True) and "dense leg skipped" in skipped.note
    # dense-only: never skipped below the threshold, warned instead
    warned = weigh_dense_leg(0.5, DENSE)
    assert (warned.weight, warned.skip) == (0.0625, False) and "DENSE results may be poor" in warned.note
    assert weigh_dense_leg(DENSE_MIN_COVERAGE, HYBRID).skip is False


def test_hybrid_runs_both_legs_and_times_them():
    out, timings = run(HYBRID, legs())
    assert out.ranked == {"lexical": BM25, "dense": COSINE} and out.late == () and out.notes == []
    assert out.ids() == {"lexical": ["p1", "p2"], "dense": ["p2", "p3"]}
    assert out.cosine() == {"p2": 0.8, "p3": 0.4}
    assert out.weights == {"lexical": 1.0, "dense": 1.0}
    assert set(timings) == {"lexicalMs", "embedMs", "vectorMs"}


def test_modes_choose_legs():
    assert list(run(LEXICAL, legs())[0].ranked) == ["lexical"]
    assert list(run(DENSE, legs())[0].ranked) == ["dense"]


def test_low_coverage_skips_the_dense_leg_in_hybrid_only():
    out, timings = run(HYBRID, legs(coverage=0.5))
    assert out.ranked["dense"] == [] and out.weights["dense"] == 0.0 and "embedMs" not in timings
    assert out.cosine() == {} and len(out.notes) == 1
    out, _ = run(DENSE, legs(coverage=0.5))
    assert out.ranked["dense"] == COSINE and out.weights["dense"] == 0.0625


def test_without_a_model_hybrid_says_so():
    out, _ = run(HYBRID, Legs(lexical=lambda: list(BM25)))
    assert list(out.ranked) == ["lexical"]
    assert out.notes == ["dense leg unavailable (no embedding model configured): LEXICAL only"]


def test_a_leg_past_the_deadline_is_late():
    out, timings = run(HYBRID, legs(dense_delay=1.0), timeout=0.3)
    assert out.late == ("dense",) and list(out.ranked) == ["lexical"]
    assert out.dense is None and set(timings) == {"lexicalMs"}


def test_a_late_leg_never_writes_into_the_results():
    """A late dense leg's thread weighs the leg and notes low coverage before it embeds; it goes
    on after the deadline (asyncio.run waits for it), but returns to its own dropped future:
    the results hold no weight, note or timing of it (before: its thread wrote 0.0625 and the
    note into the returned results)."""
    out, timings = run(DENSE, legs(coverage=0.5, dense_delay=0.5), timeout=0.1)
    assert out.late == ("dense",) and out.ranked == {} and out.dense is None
    assert (out.weights, out.notes, timings) == ({"lexical": 1.0, "dense": 1.0}, [], {})


def test_bm25_first_warms_while_the_dense_leg_embeds():
    release = threading.Event()
    seen: list[list[str]] = []

    finished: list[bool] = []

    async def warm(lexical, dense_finished):
        seen.append([pid for pid, _ in lexical])
        finished.append(dense_finished())
        release.set()  # the dense leg finishes only after the warm-up started
        for _ in range(500):  # a synchronous wait: the flag turns without the event loop
            if dense_finished():
                break
            time.sleep(0.01)
        finished.append(dense_finished())

    out, _ = run(HYBRID, legs(release=release), warm=warm)
    assert seen == [["p1", "p2"]] and out.late == ()
    assert finished == [False, True]


def test_a_failing_leg_raises():
    def boom() -> list[tuple[str, float]]:
        raise RuntimeError("index gone")

    with pytest.raises(RuntimeError, match="index gone"):
        run(LEXICAL, Legs(lexical=boom))
