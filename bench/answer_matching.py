"""Verified-answer matching: does a set-first pack put an approved answer at its head only when
the task asks that answer's question? Precision on near-misses, recall on paraphrases.

Usage: ``.venv/bin/python -m bench.answer_matching [--data bench/answer_matching.jsonl] [--show]``

Data: ``bench/answer_matching.jsonl``, hand-written for Cairn (CC0): 22 stored questions with
answers (10 English, 6 Japanese, 6 Chinese) and 143 tasks: 72 paraphrases the stored answer
answers (``kind: paraphrase``: reworded, reordered, other function words, a dropped
qualifier, a question inside a longer task, synonyms), 64 near-misses (``near-miss``: the
same frame with another subject — ``How do I reset my router?`` for ``How do I reset my VPN
password?``, 会議室の照明 for 会議室の予約, 上海办公室 for 北京办公室 — or another action or
qualifier: change for reset, third for first year, turn on for turn off) and 7 other
questions about the same subject (``other-question``: ``Why are invoices generated twice?``
for ``When are invoices generated?``). The last 15 rows are negations on one side
only (``How do I NOT reset …``, 取り消しませんか, 不重置: near-misses) and look-alike controls
(``I know …``, すみません, まず, 不过: paraphrases). The 40 rows before them (27 paraphrases, 6 near-misses, 7
other questions) were written without running the matcher: its recall was not tuned to them.

Method: per language one :class:`app.contextsets.matching.AnswerIndex` over that language's
stored questions (a set of 10 or 6 answers: the "set" figures), and one holding only the row's
stored question (the "alone" figures, as in the issue's examples). A task's pack takes what
``app/contextsets/packing.py`` takes: among ``match(task, 12)``, best BM25 first, the answers
the pack accepts, at most 3. A row is *predicted* a match when its stored question is among
them. Precision = paraphrases predicted / (paraphrases + near-misses predicted); recall =
paraphrases predicted / paraphrases; ``other-q`` = other-question rows predicted / all of them
(word matching cannot see that a task asks another thing about the same words: reported, not
in the precision). ``other`` counts answers packed for a row that are not its
stored question (in "set" mode; a paraphrase of a more specific stored question may
legitimately bring the general one too: e7 → e1). The matcher is whatever the tree has when
this runs, so a run before and after a change shows the change.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter, defaultdict
from pathlib import Path

from cairn.app.contextsets import matching

DATA = Path(__file__).with_name("answer_matching.jsonl")
LANGS = ("en", "ja", "zh")
PACK_CANDIDATES, PACK_ANSWERS = 12, 3  # packing.py: match(task, MAX_ANSWERS * 4), at most MAX_ANSWERS


def load(path: Path) -> list[dict]:
    """Rows of the JSONL file (``#`` lines skipped)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip() and not line.startswith("#")]


def accepted(m: matching.AnswerMatch) -> bool:
    """The pack's test for one match. Before issue 32 the pack tested ``coverage ≥
    PACK_MIN_COVERAGE`` and ``AnswerMatch`` had no ``about``: the fallback measures that tree."""
    about = getattr(m, "about", None)
    return m.coverage >= matching.PACK_MIN_COVERAGE if about is None else bool(about)


def packed(index: matching.AnswerIndex, questions: list[str], task: str) -> list[str]:
    """The stored questions a set-first pack puts first for ``task``, in pack order."""
    return [questions[m.index] for m in index.match(task, PACK_CANDIDATES) if accepted(m)][:PACK_ANSWERS]


def run(rows: list[dict], show: bool) -> None:
    """Print precision and recall per language and overall, in set and alone modes."""
    stored: dict[str, dict[str, str]] = defaultdict(dict)
    for r in rows:
        stored[r["lang"]].setdefault(r["stored"], r["answer"])
    indexes = {lang: (matching.AnswerIndex(list(qa), list(qa.values())), list(qa)) for lang, qa in stored.items()}
    print(f"threshold {matching.PACK_MIN_COVERAGE}; {len(rows)} rows")
    print(
        f"{'mode':6} {'lang':5} {'para':>4} {'near':>4} {'TP':>3} {'FP':>3} {'precision':>9} {'recall':>6} {'other-q':>7} {'other':>5}"
    )
    for mode in ("set", "alone"):
        counts: dict[str, Counter[str]] = defaultdict(Counter)
        for r in rows:
            if mode == "set":
                idx, qs = indexes[r["lang"]]
            else:
                idx, qs = matching.AnswerIndex([r["stored"]], [r["answer"]]), [r["stored"]]
            got = packed(idx, qs, r["task"])
            hit = r["stored"] in got
            kind = r.get("kind", "paraphrase" if r["match"] else "near-miss")
            for lang in (r["lang"], "all"):
                c = counts[lang]
                c[kind] += 1
                c[kind + " packed"] += hit
                c["other"] += sum(1 for q in got if q != r["stored"])
            if show and hit != r["match"]:
                print(
                    f"  {mode} {'MISSED' if r['match'] else 'WRONGLY PACKED'} ({kind}): {r['task']!r} ~ {r['stored']!r}"
                )
        for lang in (*LANGS, "all"):
            c = counts[lang]
            tp, fp = c["paraphrase packed"], c["near-miss packed"]
            prec = tp / (tp + fp) if tp + fp else 1.0
            rec = tp / c["paraphrase"] if c["paraphrase"] else 0.0
            oq = f"{c['other-question packed']}/{c['other-question']}"
            print(
                f"{mode:6} {lang:5} {c['paraphrase']:4} {c['near-miss']:4} {tp:3} {fp:3} {prec:9.3f} {rec:6.3f} {oq:>7} {c['other']:5}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--show", action="store_true", help="list the rows the matcher gets wrong")
    args = parser.parse_args()
    run(load(args.data), args.show)


if __name__ == "__main__":
    main()
