"""The decision judges with the real Gemma 3 270M: in-process (xllamacpp) and through an
OpenAI-compatible ``/v1/completions`` with echo on loopback (tests/echo_completions.py)."""

from __future__ import annotations

import pytest

from cairn.app.decisions.judges import LocalJudge, OpenAIJudge
from tests.echo_completions import echo_completions

pytestmark = pytest.mark.model

PROMPT = "The Eiffel Tower is a famous landmark in the city of"


@pytest.fixture(scope="session")
def local_judge() -> LocalJudge:
    """The embedded judge (the model is cached per process, so the live servers share it)."""
    judge = LocalJudge()
    judge.score("warm up", [" a"])
    return judge


@pytest.fixture(scope="session")
def echo_server(local_judge):
    """An echo-capable ``/v1/completions`` on loopback over the same model (tests/echo_completions.py)."""
    with echo_completions(local_judge) as url:
        yield url


def test_local_judge_prefers_the_true_continuation_and_is_order_independent(local_judge):
    options = [" Paris", " Tokyo", " Buenos Aires"]
    scores = local_judge.score(PROMPT, options)
    assert scores[0].logprob > scores[1].logprob and scores[0].logprob > scores[2].logprob
    assert scores[2].tokens >= 2  # a multi-token option is summed over its tokens
    # the KV cache is cut back to the prompt between options: order must not change any score
    again = local_judge.score(PROMPT, list(reversed(options)))
    for a, b in zip(scores, reversed(again)):
        assert a.tokens == b.tokens and abs(a.logprob - b.logprob) < 1e-3


def test_openai_judge_through_an_echo_endpoint_matches_the_local_judge(echo_server, local_judge):
    remote = OpenAIJudge(echo_server, "gemma-3-270m", timeout=120)
    options = [" Paris", " Buenos Aires"]
    got = remote.score(PROMPT, options)
    want = local_judge.score(PROMPT, options)
    for g, w in zip(got, want):
        assert g.tokens == w.tokens
        # the endpoint decodes the prompt one token at a time, the local judge in one batch:
        # llama.cpp's logits differ by batch shape (up to ~0.4 nats seen on this model)
        assert abs(g.logprob - w.logprob) < 0.5, (got, want)
    assert got[0].logprob > got[1].logprob
