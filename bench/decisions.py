"""Decision judge benchmark: accuracy and latency on 44 labelled, clear-cut decisions.

    python -m bench.decisions                 # embedded Gemma 3 270M (default)
    python -m bench.decisions --judge openai --url http://127.0.0.1:8000/v1 --model gemma

Each item is a state object or a session (messages) with one CHOICE or SCORE question and
its expected answer. Every option is scored once with the real judge, through the same
context rendering and prompt as the server (:mod:`app.decisions.judging`); the
options are also scored under a context-free prompt (same question, empty context) for the
calibrated variants. Printed: accuracy of four normalisations over the same scores —
``sum`` (joint log-likelihood), ``mean`` (per token), and both calibrated by subtracting the
context-free score (``sum-pmi``, ``mean-pmi``; Holtzman et al. 2021) — plus the median and
p95 latency of one decision as served: one scoring pass when the question's calibration
baseline is cached, two for a new question; and the model load time.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

from cairn.app.decisions.judges import LocalJudge, OpenAIJudge, option_probabilities
from cairn.app.decisions.judging import build_prompt, session_context, state_context
from cairn.app.decisions.request import validate_request

YES_NO = [{"value": True}, {"value": False}]


def _c(instr: str, choices: list, expect: Any) -> tuple[dict, Any]:
    vals = [c if isinstance(c, dict) else {"value": c} for c in choices]
    return {"type": "CHOICE", "instructions": instr, "choices": vals}, expect


def _s(instr: str, levels: list[tuple[str, float]], expect: str) -> tuple[dict, Any]:
    return {
        "type": "SCORE",
        "instructions": instr,
        "levels": [{"label": lab, "score": sc} for lab, sc in levels],
    }, expect


RATING = [("Bad", 1), ("Okay", 3), ("Great", 5)]
DONE = [("Incomplete", 0), ("Partial", 0.5), ("Complete", 1)]
LANGS = ["English", "French", "German", "Japanese"]
DEPTS = ["Billing", "Technical support", "Sales"]

# (context: dict state | list of (role, text) messages, (question, expected answer))
ITEMS: list[tuple[Any, tuple[dict, Any]]] = [
    (
        {"message": "My issue is resolved, thank you!"},
        _c("Has the user confirmed the issue is resolved?", YES_NO, True),
    ),
    (
        {"message": "It still crashes every time I open the app."},
        _c("Has the user confirmed the issue is resolved?", YES_NO, False),
    ),
    ({"email": "Please cancel my subscription immediately."}, _c("Does the customer want to cancel?", YES_NO, True)),
    ({"email": "I love the product, keep up the good work."}, _c("Does the customer want to cancel?", YES_NO, False)),
    ({"order": {"status": "delivered", "date": "2024-05-02"}}, _c("Has the order been delivered?", YES_NO, True)),
    ({"order": {"status": "in transit", "eta": "next week"}}, _c("Has the order been delivered?", YES_NO, False)),
    ({"invoice": {"amount_due": 120, "amount_paid": 0}}, _c("Is the invoice fully paid?", YES_NO, False)),
    ({"patient": {"temperature_c": 39.8}}, _c("Does the patient have a fever?", YES_NO, True)),
    ({"weather_forecast": "Heavy rain all day."}, _c("Should I take an umbrella?", YES_NO, True)),
    ({"person": {"age": 7}}, _c("Is this person an adult?", YES_NO, False)),
    ({"person": {"age": 45}}, _c("Is this person an adult?", YES_NO, True)),
    ({"email_subject": "You WON a free iPhone!!! Click here now"}, _c("Is this email spam?", YES_NO, True)),
    ({"email_subject": "Minutes of Tuesday's team meeting"}, _c("Is this email spam?", YES_NO, False)),
    (
        {"review": "Terrible, it broke after one day."},
        _c("What is the sentiment of the review?", ["positive", "negative"], "negative"),
    ),
    (
        {"review": "Absolutely wonderful, works perfectly."},
        _c("What is the sentiment of the review?", ["positive", "negative"], "positive"),
    ),
    (
        {"text": "Bonjour, je voudrais réserver une table pour deux."},
        _c("Which language is the text in?", LANGS, "French"),
    ),
    ({"text": "Guten Morgen, wie geht es Ihnen?"}, _c("Which language is the text in?", LANGS, "German")),
    ({"text": "今日はいい天気ですね。"}, _c("Which language is the text in?", LANGS, "Japanese")),
    ({"text": "Where is the nearest train station?"}, _c("Which language is the text in?", LANGS, "English")),
    (
        {"ticket": "I was charged twice for my last invoice."},
        _c("Which department should handle the ticket?", DEPTS, "Billing"),
    ),
    (
        {"ticket": "The login page shows error 500 and I cannot sign in."},
        _c("Which department should handle the ticket?", DEPTS, "Technical support"),
    ),
    (
        {"ticket": "Can I get a price quote for 50 licenses?"},
        _c("Which department should handle the ticket?", DEPTS, "Sales"),
    ),
    ({"animal": "It barks and wags its tail."}, _c("Which animal is described?", ["dog", "cat", "bird"], "dog")),
    (
        {"animal": "It has feathers and sings in the morning."},
        _c("Which animal is described?", ["dog", "cat", "bird"], "bird"),
    ),
    ({"city": "Paris"}, _c("Which country is the city in?", ["France", "Japan", "Brazil"], "France")),
    ({"city": "Tokyo"}, _c("Which country is the city in?", ["France", "Japan", "Brazil"], "Japan")),
    (
        {"message": "URGENT: the payment server is down and no customer can pay!"},
        _c("What priority does this message have?", ["low", "high"], "high"),
    ),
    (
        {"message": "Small typo on the about page, fix it whenever you have time."},
        _c("What priority does this message have?", ["low", "high"], "low"),
    ),
    ({"review": "Worst purchase ever. Completely useless."}, _s("Rate the customer's opinion.", RATING, "Bad")),
    ({"review": "Excellent quality, I am delighted with it."}, _s("Rate the customer's opinion.", RATING, "Great")),
    (
        {"task": "Write the quarterly report", "progress": "The report is finished and was sent to the board."},
        _s("How complete is the task?", DONE, "Complete"),
    ),
    (
        {"task": "Write the quarterly report", "progress": "I have not started it yet."},
        _s("How complete is the task?", DONE, "Incomplete"),
    ),
    (
        {"symptoms": "a mild headache since this morning"},
        _s("How severe is the situation?", [("Mild", 1), ("Severe", 3)], "Mild"),
    ),
    (
        {"symptoms": "unconscious and not breathing"},
        _s("How severe is the situation?", [("Mild", 1), ("Severe", 3)], "Severe"),
    ),
    (
        {"question": "What is the capital of France?", "answer": "The capital of France is Paris."},
        _s("Is the answer correct?", [("Wrong", 0), ("Correct", 1)], "Correct"),
    ),
    (
        {"question": "What is 2 + 2?", "answer": "2 + 2 = 5"},
        _s("Is the answer correct?", [("Wrong", 0), ("Correct", 1)], "Wrong"),
    ),
    # sessions
    (
        [
            ("user", "My package never arrived."),
            ("assistant", "I have shipped a replacement."),
            ("user", "Got it today, all good now, thanks!"),
        ],
        _c("Has the user confirmed the issue is resolved?", YES_NO, True),
    ),
    (
        [
            ("user", "The app keeps crashing."),
            ("assistant", "Please try reinstalling it."),
            ("user", "I did, and it is still crashing."),
        ],
        _c("Has the user confirmed the issue is resolved?", YES_NO, False),
    ),
    (
        [("user", "I would like to book a flight to Rome next Friday.")],
        _c("What does the user want?", ["booking", "complaint", "cancellation"], "booking"),
    ),
    (
        [("user", "This is unacceptable, my order was wrong twice!")],
        _c("What does the user want?", ["booking", "complaint", "cancellation"], "complaint"),
    ),
    (
        [("user", "Please cancel my hotel reservation for tomorrow.")],
        _c("What does the user want?", ["booking", "complaint", "cancellation"], "cancellation"),
    ),
    (
        [("user", "You solved everything, you are amazing!")],
        _s("How satisfied is the user?", [("Unhappy", 0), ("Happy", 1)], "Happy"),
    ),
    (
        [("user", "This support is useless, I am furious.")],
        _s("How satisfied is the user?", [("Unhappy", 0), ("Happy", 1)], "Unhappy"),
    ),
    (
        [("user", "Can you translate 'hello' into Spanish?"), ("assistant", "Sure: 'hola'.")],
        _s("How completely was the user's request fulfilled?", DONE, "Complete"),
    ),
]

VARIANTS = {"sum": ("sum", False), "mean": ("mean", False), "sum-pmi": ("sum", True), "mean-pmi": ("mean", True)}


def run(judge, style: str = "auto") -> dict[str, Any]:
    """Score every item; returns accuracy per variant, latencies and per-item results."""
    correct = dict.fromkeys(VARIANTS, 0)
    latencies: list[float] = []
    cold: list[float] = []
    by_kind = {"CHOICE": [0, 0], "SCORE": [0, 0], "STATE": [0, 0], "SESSION": [0, 0]}
    picks: list[dict[str, Any]] = []
    for context, (question, expect) in ITEMS:
        if isinstance(context, dict):
            req = validate_request({"state": context, "questions": [question]})
            started = time.perf_counter()
            text, _ = state_context(context, 1500)
        else:
            req = validate_request({"sessionId": "sess_bench", "questions": [question]})
            started = time.perf_counter()
            text, _ = session_context(context, 1500)
        q = req.questions[0]
        options = [o.text for o in q.options]
        scores = judge.score(build_prompt(q, text, style), options)
        warm = time.perf_counter() - started
        t0 = time.perf_counter()
        base = judge.score(build_prompt(q, "(none)", style), options)
        latencies.append(warm)
        cold.append(warm + time.perf_counter() - t0)
        truth = next(i for i, o in enumerate(q.options) if (o.value if q.type == "CHOICE" else o.text) == expect)
        picked: dict[str, int] = {}
        for name, (norm, pmi) in VARIANTS.items():
            probs = option_probabilities(scores, normalise=norm, baseline=base if pmi else None)
            picked[name] = max(range(len(probs)), key=lambda i: probs[i])
            hit = picked[name] == truth
            correct[name] += hit
            if name == "sum-pmi":  # the served configuration
                for k in (q.type, req.mode):
                    by_kind[k][0] += hit
                    by_kind[k][1] += 1
        picks.append(
            {
                "question": q.instructions,
                "options": options,
                "truth": truth,
                "picked": picked,
                "logprobs": [s.logprob for s in scores],
                "baseline": [b.logprob for b in base],
                "tokens": [s.tokens for s in scores],
            }
        )
    n = len(ITEMS)
    return {
        "n": n,
        "accuracy": {k: v / n for k, v in correct.items()},
        "latencies": latencies,
        "cold": cold,
        "by_kind": by_kind,
        "picks": picks,
    }


def main() -> None:
    """CLI entry point (see module doc)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--judge", choices=["local", "openai"], default="local")
    ap.add_argument("--url")
    ap.add_argument("--model", default="gemma-3-270m")
    ap.add_argument(
        "--style",
        choices=["auto", "nolist", "plain", "chat", "fewshot"],
        default="auto",
        help="prompt style (see build_prompt)",
    )
    ap.add_argument("--picks", metavar="PATH", help="write every item's scores and picks as JSON (to compare judges)")
    args = ap.parse_args()
    judge = OpenAIJudge(args.url, args.model) if args.judge == "openai" else LocalJudge()
    started = time.perf_counter()
    judge.score("warm up", [" a"])
    load = time.perf_counter() - started
    out = run(judge, args.style)
    if args.picks:
        Path(args.picks).write_text(json.dumps({"judge": judge.name, "picks": out["picks"]}, indent=1))
    lat = sorted(out["latencies"])
    cold = sorted(out["cold"])
    print(f"judge: {judge.name}   prompt: {args.style}   items: {out['n']}   load+first call: {load:.2f} s")
    for name, acc in out["accuracy"].items():
        print(f"  accuracy {name:9s} {acc:6.1%}")
    for kind, (hit, total) in out["by_kind"].items():
        print(f"  sum-pmi by {kind:8s} {hit}/{total}")
    print(
        f"  latency per decision, baseline cached (one pass): median {statistics.median(lat) * 1000:.0f} ms, "
        f"p95 {lat[int(0.95 * (len(lat) - 1))] * 1000:.0f} ms"
    )
    print(
        f"  latency per decision, new question (two passes): median {statistics.median(cold) * 1000:.0f} ms, "
        f"p95 {cold[int(0.95 * (len(cold) - 1))] * 1000:.0f} ms"
    )


if __name__ == "__main__":
    main()
