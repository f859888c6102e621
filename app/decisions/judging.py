"""Decision context, prompts and answers: from a validated request to scored options.

Context (SPEC §8 ``context.mode``): ``STATE`` renders the state object as indented
``key: value`` lines; ``SESSION`` renders the session's newest messages as ``role: text``
lines, oldest first. Both must fit ``context_tokens`` (cl100k tokens, default 1,500): a
state over it → 422 ``decision_context_too_large``; a session keeps its newest messages
that fit (older ones are left out and counted in ``context.omittedMessages``); a newest
message alone over it → 422 ``decision_context_too_large``; no messages → 422
``decision_context_unavailable``.

Prompt (``auto``): the context, the question's instructions, then ``Answer:``; each option's
text is the continuation whose log-likelihood is its score. Options are listed before
``Answer:`` only when one has a description (a list is the only place to show it).
Probabilities: softmax over the summed log-likelihood minus the same option's
log-likelihood with an empty context (calibration, "PMI", Holtzman et al. 2021; the
baseline depends only on the question, so it is LRU-cached). Chosen on
``bench/decisions.py`` (44 items, Gemma 3 270M, accuracy sum-PMI / uncalibrated sum):
options not listed 79.5% / 68.2%; listed 68.2% / 54.5%; Gemma chat turns 65.9% / 43.2%;
3-shot 61.4% / 52.3% at 2.6x the latency.
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from typing import Any

from cairn.app.decisions.errors import (
    DecisionContextTooLarge,
    DecisionContextUnavailable,
    DecisionInvalidUpstreamResponse,
)
from cairn.app.decisions.judges import Judge, OptionScore, option_probabilities, timeout_error
from cairn.app.decisions.request import DecisionRequest, Question
from cairn.retrieval.tokens import count_tokens

NORMALISE = "sum"
PROMPT_STYLE = "auto"
CALIBRATE = True


def _render_value(value: Any, indent: int, lines: list[str]) -> None:
    pad = "  " * indent
    if isinstance(value, dict):
        for k, v in value.items():
            if isinstance(v, (dict, list)) and v:
                lines.append(f"{pad}{k}:")
                _render_value(v, indent + 1, lines)
            else:
                lines.append(f"{pad}{k}: {_scalar(v)}")
    elif isinstance(value, list):
        for v in value:
            if isinstance(v, (dict, list)) and v:
                lines.append(f"{pad}-")
                _render_value(v, indent + 1, lines)
            else:
                lines.append(f"{pad}- {_scalar(v)}")
    else:
        lines.append(f"{pad}{_scalar(value)}")


def _scalar(v: Any) -> str:
    if isinstance(v, str):
        return v
    return json.dumps(v, ensure_ascii=False)


def render_state(state: dict[str, Any]) -> str:
    """The state object as indented ``key: value`` lines (strings unquoted)."""
    lines: list[str] = []
    _render_value(state, 0, lines)
    return "\n".join(lines)


def state_context(state: dict[str, Any], max_tokens: int) -> tuple[str, dict[str, Any]]:
    """Context text of a state, and the ``context`` facts recorded on the decision.

    Raises:
        JudgeError: 422 ``decision_context_too_large``.
    """
    text = render_state(state)
    tokens = count_tokens(text)
    if tokens > max_tokens:
        raise DecisionContextTooLarge(f"state renders to {tokens} tokens; the decision context budget is {max_tokens}")
    return text, {"tokens": tokens}


def session_context(messages: list[tuple[str, str]], max_tokens: int) -> tuple[str, dict[str, Any]]:
    """Context text of a session: the newest ``(role, content)`` messages that fit ``max_tokens``.

    Raises:
        JudgeError: 422 ``decision_context_unavailable`` (no messages) or
            ``decision_context_too_large`` (the newest message alone is over the budget).
    """
    if not messages:
        raise DecisionContextUnavailable("the session has no messages to decide on; append messages first")
    kept: list[str] = []
    used = 0
    for role, content in reversed(messages):
        line = f"{role}: {content}"
        cost = count_tokens(line) + 1
        if used + cost > max_tokens:
            break
        kept.append(line)
        used += cost
    if not kept:
        raise DecisionContextTooLarge(
            f"the newest session message alone is over the decision context budget of {max_tokens} tokens"
        )
    kept.reverse()
    return "\n".join(kept), {"tokens": used, "messages": len(kept), "omittedMessages": len(messages) - len(kept)}


FEWSHOT = """Answer each question with exactly one of its options, using only the context.

Context:
store:
  opens: 09:00
  closes: 17:00
time_now: 20:30
Question: Is the store open right now?
Options:
- true
- false
Answer: false

Context:
item: a long yellow fruit that monkeys like
Question: Which fruit is it?
Options:
- apple
- banana
- cherry
Answer: banana

Context:
user: The delivery came on time and everything was perfect.
Question: How well was the order handled?
Levels:
- Poorly
- Very well
Answer: Very well

"""


def build_prompt(question: Question, context: str, style: str = "auto") -> str:
    """The prompt whose continuation is an option's text (see module doc).

    ``style``: ``nolist`` (context, question, ``Answer:``; the options are not listed),
    ``plain`` (the options listed before ``Answer:``), ``auto`` (served: ``nolist``, or
    ``plain`` when an option has a description, which only a list can show), ``chat`` (Gemma
    turn markers), ``fewshot`` (three worked examples first).
    """
    if style == "auto":
        style = "plain" if any(o.description for o in question.options) else "nolist"
    kind = "option" if question.type == "CHOICE" else "level"
    options = [f"- {o.text}" + (f" ({o.description.strip()})" if o.description else "") for o in question.options]
    if style == "plain":
        return (
            "\n".join(
                [
                    "Context:",
                    context.strip(),
                    "",
                    f"Question: {question.instructions.strip()}",
                    f"{kind.capitalize()}s:",
                    *options,
                    "Answer:",
                ]
            )
            + " "
        )
    if style == "nolist":
        return (
            "\n".join(["Context:", context.strip(), "", f"Question: {question.instructions.strip()}", "Answer:"]) + " "
        )
    if style == "fewshot":
        return (
            FEWSHOT
            + "\n".join(
                [
                    "Context:",
                    context.strip(),
                    f"Question: {question.instructions.strip()}",
                    f"{kind.capitalize()}s:",
                    *options,
                    "Answer:",
                ]
            )
            + " "
        )
    lines = [
        "<start_of_turn>user",
        f"Read the context, then answer the question with exactly one {kind} from the list.",
        "",
        "Context:",
        context.strip(),
        "",
        f"Question: {question.instructions.strip()}",
        f"{kind.capitalize()}s:",
        *options,
        "<end_of_turn>",
        "<start_of_turn>model",
        "",
    ]
    return "\n".join(lines)


_BASELINES: OrderedDict[tuple[str, str], list[OptionScore]] = OrderedDict()
_BASELINES_LOCK = threading.Lock()
BASELINE_CACHE_SIZE = 512


def _baseline(judge: Judge, question: Question, options: list[str]) -> list[OptionScore]:
    """Option scores under the same question with an empty context (``(none)``), LRU-cached.

    The baseline depends only on the question and its options, so an agent asking the same
    question again pays for one scoring pass, not two.
    """
    prompt = build_prompt(question, "(none)", PROMPT_STYLE)
    key = (judge.name, prompt + "\x00" + "\x00".join(options))
    with _BASELINES_LOCK:
        if key in _BASELINES:
            _BASELINES.move_to_end(key)
            return _BASELINES[key]
    scores = judge.score(prompt, options)
    with _BASELINES_LOCK:
        _BASELINES[key] = scores
        while len(_BASELINES) > BASELINE_CACHE_SIZE:
            _BASELINES.popitem(last=False)
    return scores


def answer_question(judge: Judge, question: Question, context: str) -> dict[str, Any]:
    """Score every option with ``judge`` and pick the most probable (blocking).

    Returns:
        ``{type, name, value | (score, label), probabilities: [...]}`` in option order.

    Raises:
        JudgeError: from the judge.
    """
    options = [o.text for o in question.options]
    scores = judge.score(build_prompt(question, context, PROMPT_STYLE), options)
    baseline = _baseline(judge, question, options) if CALIBRATE else None
    if len(scores) != len(question.options) or (baseline is not None and len(baseline) != len(options)):
        raise DecisionInvalidUpstreamResponse("the judge returned a score count that does not match the options")
    probs = option_probabilities(scores, normalise=NORMALISE, baseline=baseline)
    best = max(range(len(probs)), key=lambda i: (probs[i], -i))
    chosen = question.options[best]
    answer: dict[str, Any] = {"type": question.type, "name": question.name}
    table = []
    for o, p in zip(question.options, probs):
        if question.type == "CHOICE":
            table.append({"value": o.value, "probability": round(p, 6)})
        else:
            table.append({"label": o.text, "score": o.score, "probability": round(p, 6)})
    if question.type == "CHOICE":
        answer["value"] = chosen.value
    else:
        answer["score"] = chosen.score
        answer["label"] = chosen.text
    answer["probabilities"] = table
    return answer


def answer_all(
    judge: Judge, request: DecisionRequest, context: str, deadline: float | None = None
) -> list[dict[str, Any]]:
    """Answers to every question of ``request`` in order (blocking; run in a worker thread).

    Args:
        deadline: ``time.monotonic()`` value after which no further question is scored (a
            thread cannot be cancelled: this is how a timed-out decision stops working).

    Raises:
        JudgeError: from the judge, or ``decision_timeout`` once ``deadline`` has passed.
    """
    answers = []
    for q in request.questions:
        if deadline is not None and time.monotonic() > deadline:
            raise timeout_error(0)
        answers.append(answer_question(judge, q, context))
    return answers
