"""The decision judges with the real Gemma 3 270M: in-process (llama-cpp-python) and through
an OpenAI-compatible server (llama-cpp-python's own ``llama_cpp.server`` on loopback)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import httpx
import pytest

from cairn.app.decisions.judges import LocalJudge, OpenAIJudge, gemma_model_path
from tests import local_http

pytestmark = pytest.mark.model

PROMPT = "The Eiffel Tower is a famous landmark in the city of"


@pytest.fixture(scope="session")
def local_judge() -> LocalJudge:
    """The embedded judge (the model is cached per process, so the live servers share it)."""
    judge = LocalJudge()
    judge.score("warm up", [" a"])
    return judge


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory):
    """``python -m llama_cpp.server`` with the packaged Gemma on a free loopback port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "llama_cpp.server",
                "--model",
                str(gemma_model_path()),
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--n_ctx",
                "512",
                "--n_threads",
                "1",
                "--model_alias",
                "gemma-3-270m",
            ],
            stdout=fh,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONWARNINGS": "ignore"},
        )
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited: {log.read_text()[-2000:]}")
            try:
                if local_http.get(f"{url}/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        else:
            raise RuntimeError("llama_cpp.server did not start in 180 s")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_local_judge_prefers_the_true_continuation_and_is_order_independent(local_judge):
    options = [" Paris", " Tokyo", " Buenos Aires"]
    scores = local_judge.score(PROMPT, options)
    assert scores[0].logprob > scores[1].logprob and scores[0].logprob > scores[2].logprob
    assert scores[2].tokens >= 2  # a multi-token option is summed over its tokens
    # the KV cache is cut back to the prompt between options: order must not change any score
    again = local_judge.score(PROMPT, list(reversed(options)))
    for a, b in zip(scores, reversed(again)):
        assert a.tokens == b.tokens and abs(a.logprob - b.logprob) < 1e-3


def test_openai_judge_through_llama_cpp_server_matches_the_local_judge(llama_server, local_judge):
    remote = OpenAIJudge(llama_server, "gemma-3-270m", timeout=120)
    options = [" Paris", " Buenos Aires"]
    got = remote.score(PROMPT, options)
    want = local_judge.score(PROMPT, options)
    for g, w in zip(got, want):
        assert g.tokens == w.tokens
        assert abs(g.logprob - w.logprob) < 0.05, (got, want)
    # (a whole decision over this server is not run here: llama_cpp.server sorts the 262k-token
    # vocabulary in Python for every echoed token, ~0.3 s/token; the runner is judge-agnostic and
    # is covered with the embedded judge and with upstream failures.)
