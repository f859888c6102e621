"""An OpenAI-compatible ``/v1/completions`` endpoint with ``echo`` + ``logprobs``, answered by the
real Gemma 3 270M through xllamacpp, for testing :class:`~cairn.app.decisions.OpenAIJudge`.

No server installable here answers that request: llama.cpp's own server (xllamacpp's, and
upstream's) accepts ``echo`` but returns log-probabilities of generated tokens only, and
llama-cpp-python's server is an sdist that compiles for 5–11 minutes. This endpoint lets the
judge take its real HTTP path (request body, Bearer header, the echoed ``tokens`` /
``token_logprobs`` / ``text_offset`` / ``usage`` shape it parses) against a real model's numbers.
It is NOT a vendor's server: only the legacy completions fields the judge reads are served.

Each prompt token's log-probability is read by forcing the prompt's tokens after BOS with a
token-id grammar (as :class:`~cairn.app.decisions.LocalJudge` forces options); then one token
is generated, as ``max_tokens: 1`` asks.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from cairn.app.decisions.judges import LocalJudge, forced_tokens_grammar
from tests.thread_server import serve_in_thread


def echo_completion(judge: LocalJudge, body: dict[str, Any]) -> dict[str, Any]:
    """The legacy completions answer to ``body`` (``prompt``, ``echo: true``, ``max_tokens: 1``)."""
    server = judge._load()
    tokens = judge.tokenize(body["prompt"], bos=True)
    forced = server.handle_completions(
        {
            "prompt": tokens[:1],
            "max_tokens": len(tokens) - 1,
            "grammar": forced_tokens_grammar(tokens=tokens[1:]),
            "logprobs": 1,
            "temperature": 0,
            "cache_prompt": False,
        }
    )
    generated = server.handle_completions({"prompt": tokens, "max_tokens": 1, "logprobs": 1, "temperature": 0})
    rows = [(c["token"], c["logprob"]) for c in forced["choices"][0]["logprobs"]["content"]]
    rows += [(c["token"], c["logprob"]) for c in generated["choices"][0]["logprobs"]["content"]]
    texts, offsets, offset = [], [], 0
    for text, _ in rows:
        texts.append(text)
        offsets.append(offset)
        offset += len(text)
    return {
        "object": "text_completion",
        "model": body.get("model", "gemma-3-270m"),
        "choices": [
            {
                "index": 0,
                "text": "".join(texts),
                "finish_reason": "length",
                "logprobs": {
                    "tokens": texts,
                    "token_logprobs": [lp for _, lp in rows],
                    "text_offset": offsets,
                    "top_logprobs": [None] * len(rows),
                },
            }
        ],
        "usage": {"prompt_tokens": len(tokens), "completion_tokens": len(rows) - (len(tokens) - 1)},
    }


def make_app(judge: LocalJudge) -> Starlette:
    """``GET /v1/models`` and ``POST /v1/completions`` (echo only) over ``judge``'s engine."""

    async def models(request: Request) -> JSONResponse:
        return JSONResponse({"object": "list", "data": [{"id": "gemma-3-270m", "object": "model"}]})

    async def completions(request: Request) -> JSONResponse:
        body = await request.json()
        if not body.get("echo") or body.get("max_tokens") != 1:
            return JSONResponse({"error": {"message": "this endpoint serves echo with max_tokens 1"}}, status_code=400)
        return JSONResponse(echo_completion(judge, body))

    return Starlette(
        routes=[Route("/v1/models", models, methods=["GET"]), Route("/v1/completions", completions, methods=["POST"])]
    )


@contextmanager
def echo_completions(judge: LocalJudge) -> Iterator[str]:
    """Serve :func:`make_app` on a free loopback port; yields the base URL (``…/v1``)."""
    with serve_in_thread(make_app(judge)) as url:
        yield f"{url}/v1"
