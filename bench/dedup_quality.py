"""Near-duplicate dedup on real text: recall of repeated paragraphs, and false merges.

Usage: ``.venv/bin/python -m bench.dedup_quality [--cases N] [--seed S] [--show K]``

Recall (does a paragraph repeated between different short paragraphs collapse?): for each
case a real paragraph — a JSQuAD paragraph, or the first 2–6 sentences of a SciFact abstract,
40–170 cl100k tokens — is placed in three documents between an intro and an outro paragraph,
each a real sentence of another document of the same corpus; the documents are chunked as
ingest does (200 tokens) and every passage of the three is deduplicated in one list. A case
succeeds when the passages holding the paragraph form one group (the kept passage lists the
other two as alternates). Reported separately for intros/outros of 4–15 and 16–30 tokens.

Precision (are genuinely different passages merged?): every pair of passages of a chunked
corpus, same or different document, is checked with the whole-text rule (Jaccard) and the
line rule (coverage, :mod:`retrieval.dedup`) in both directions; the pairs the line rule
merges and the Jaccard rule does not are counted and the first ``--show`` printed for
reading. Corpora with lines: JSQuAD articles (each article's paragraphs joined by blank
lines), TimeQA Wikipedia pages (paragraphs), Kleister-NDA contracts (text_best, PDF line
breaks: shared legal boilerplate), and SciFact abstracts and JSQuAD paragraphs with one
sentence per line (a stress test: any two texts sharing most sentences would merge).
"""

from __future__ import annotations

import argparse
import gzip
import json
import lzma
import random
import re
from collections import defaultdict
from itertools import chain

from bench.common import SHARED
from cairn.retrieval.chunking import chunk_text
from cairn.retrieval.dedup import DEFAULT_COVER, dedup
from cairn.retrieval.dedup_shingles import (
    DEFAULT_MIN_LINE_UNITS,
    DEFAULT_THRESHOLD,
    _prefix,
    _resembles,
    coverage,
    jaccard,
    line_keys,
    shingle_keys,
)
from cairn.retrieval.tokens import count_tokens

_EN_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(])")


def sentences(text: str, japanese: bool) -> list[str]:
    """Sentences of ``text`` (after 。 for Japanese, after . ! ? before a capital otherwise)."""
    parts = re.split(r"(?<=。)", text) if japanese else _EN_SENTENCE.split(text)
    return [p.strip() for p in parts if p.strip()]


def scifact_texts() -> list[str]:
    with gzip.open(SHARED / "scifact/corpus.jsonl.gz", "rt", encoding="utf-8") as fh:
        return [json.loads(line)["text"] for line in fh if line.strip()]


def jsquad_rows() -> list[dict]:
    with open(SHARED / "jsquad/beir/corpus.jsonl", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def jsquad_articles() -> dict[str, str]:
    """Article id → its paragraphs (in paragraph order) joined by blank lines."""
    paras: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for row in jsquad_rows():
        article, _, number = row["_id"].rpartition("p")
        paras[article].append((int(number), row["text"]))
    return {a: "\n\n".join(t for _, t in sorted(ps)) for a, ps in sorted(paras.items())}


def timeqa_pages() -> dict[str, str]:
    """Page link → its paragraphs joined by blank lines (test and train, each page once)."""
    pages: dict[str, str] = {}
    for split in ("test", "train"):
        with gzip.open(SHARED / f"timeqa/human_annotated_{split}.json.gz", "rt", encoding="utf-8") as fh:
            for page in json.load(fh):
                pages.setdefault(page["link"], "\n\n".join(page["paras"]))
    return pages


def nda_texts() -> dict[str, str]:
    """File name → text_best with its escapes undone (``\\n`` line breaks kept)."""
    unescape = {"n": "\n", "t": "\t", "f": "\f", "\\": "\\"}
    out = {}
    with lzma.open(SHARED / "kleister-nda/train/in.tsv.xz", "rt", encoding="utf-8") as fh:
        for line in fh:
            cols = line.rstrip("\n").split("\t")
            out[cols[0]] = re.sub(r"\\(.)", lambda m: unescape.get(m.group(1), m.group(0)), cols[-1])
    return out


def chunked(docs: dict[str, str]) -> list[tuple[str, str]]:
    """``(document id, passage text)`` for every 200-token chunk of every document."""
    return [(doc, c.text) for doc, text in docs.items() for c in chunk_text(text, max_tokens=200)]


# ---------------------------------------------------------------------------- recall


def _paragraph(rng: random.Random, pool: list[str], japanese: bool) -> str:
    while True:
        ss = sentences(rng.choice(pool), japanese)
        para = ("" if japanese else " ").join(ss[: rng.randint(2, 6)])
        if 40 <= count_tokens(para) <= 170:
            return para


def _short(rng: random.Random, pool: list[str], japanese: bool, lo: int, hi: int) -> str:
    while True:
        s = rng.choice(sentences(rng.choice(pool), japanese) or [""])
        if lo <= count_tokens(s) <= hi:
            return s


def recall(
    pool: list[str],
    japanese: bool,
    cases: int,
    rng: random.Random,
    lo: int,
    hi: int,
    by_jaccard: dict[tuple[float, float], list[int]],
) -> dict:
    """Share of cases whose three paragraph-bearing passages form one group (old and new rule).

    Also counts, per Jaccard band of ``by_jaccard`` (``(lo, hi) → [pairs, merged, least
    coverage]``), the pairs of paragraph-bearing passages that the new rule put in one group.
    """
    old = new = 0
    for case in range(cases):
        para = _paragraph(rng, pool, japanese)
        items, holders = [], []
        for d in range(3):
            text = f"{_short(rng, pool, japanese, lo, hi)}\n\n{para}\n\n{_short(rng, pool, japanese, lo, hi)}"
            for n, c in enumerate(chunk_text(text, max_tokens=200)):
                key = f"c{case}d{d}p{n}"
                items.append((key, c.text))
                if para in c.text:
                    holders.append(key)
        for rule, kwargs in (("old", {"cover": 1.0, "min_line_units": 10**9}), ("new", {})):
            groups = dedup(items, key=lambda i: i[0], text=lambda i: i[1], sha256=lambda i: i[0], **kwargs)
            together = any({g.kept[0], *(d[0] for d in g.duplicates)} >= set(holders) for g in groups)
            if rule == "old":
                old += together
                continue
            new += together
            group_of = {m[0]: n for n, g in enumerate(groups) for m in (g.kept, *g.duplicates)}
            text_of = dict(items)
            for a, b in ((0, 1), (0, 2), (1, 2)):
                if max(a, b) >= len(holders):
                    continue
                sim = jaccard(shingle_keys(text_of[holders[a]]), shingle_keys(text_of[holders[b]]))
                cov = min(
                    coverage(text_of[holders[a]], text_of[holders[b]])[0],
                    coverage(text_of[holders[b]], text_of[holders[a]])[0],
                )
                for (jlo, jhi), counts in by_jaccard.items():
                    if jlo <= sim < jhi:
                        counts[0] += 1
                        counts[1] += group_of[holders[a]] == group_of[holders[b]]
                        counts[2] = min(counts[2], cov)
    return {"cases": cases, "old": old / cases, "new": new / cases}


# ---------------------------------------------------------------------------- precision


def line_rule_pairs(passages: list[tuple[str, str]]) -> list[tuple[int, int, float, float, int]]:
    """Pairs (i, j) that the line rule merges in some direction and the Jaccard rule does not.

    All pairs, found exactly: matching lines by prefix filtering over every line of the
    corpus (the same test as :func:`retrieval.dedup.dedup`), then coverage per pair.

    Returns:
        ``(i, j, Jaccard, coverage of i by j, covered units of i)`` for each direction that
        fires, i and j indexes into ``passages``.
    """
    lines = [line_keys(t) for _, t in passages]
    postings: dict[tuple, list[tuple[int, int]]] = defaultdict(list)
    for i, ls in enumerate(lines):
        for li, (sh, n) in enumerate(ls):
            if n < DEFAULT_MIN_LINE_UNITS:
                continue
            for key in _prefix(sh, DEFAULT_THRESHOLD):
                postings[key].append((i, li))
    covered: dict[tuple[int, int], int] = defaultdict(int)  # (item, other) → covered units of item
    for i, ls in enumerate(lines):
        for sh, n in ls:
            if n < DEFAULT_MIN_LINE_UNITS:
                continue
            cands = set(chain.from_iterable(postings.get(k, ()) for k in _prefix(sh, DEFAULT_THRESHOLD)))
            others = {j for j, lj in cands if j != i and _resembles(sh, lines[j][lj][0], DEFAULT_THRESHOLD)}
            for j in others:
                covered[(i, j)] += n
    out = []
    for (i, j), n in covered.items():
        total = sum(m for _, m in lines[i])
        if n / total >= DEFAULT_COVER:
            sim = jaccard(shingle_keys(passages[i][1]), shingle_keys(passages[j][1]))
            if sim < DEFAULT_THRESHOLD and passages[i][1] != passages[j][1]:
                out.append((i, j, sim, n / total, n))
    return sorted(out)


def precision(name: str, passages: list[tuple[str, str]], show: int) -> dict:
    """Count (and print ``show`` of) the pairs merged only by the line rule."""
    pairs = line_rule_pairs(passages)
    multi = sum(len(line_keys(t)) > 1 for _, t in passages)
    print(
        f"\n{name}: {len(passages)} passages ({multi} with several lines), "
        f"{len(passages) * (len(passages) - 1) // 2} pairs; line rule adds {len(pairs)} directed merges "
        f"({sum(passages[i][0] != passages[j][0] for i, j, *_ in pairs)} across documents)"
    )
    for i, j, sim, cov, n in pairs[:show]:
        print(f"  J={sim:.2f} coverage={cov:.2f} ({n} units)  {passages[i][0]} ← {passages[j][0]}")
        print(f"    item: {passages[i][1][:400]!r}")
        print(f"    kept: {passages[j][1][:400]!r}")
    return {"passages": len(passages), "line_rule_merges": len(pairs)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--cases", type=int, default=300, help="recall cases per corpus and intro length")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--show", type=int, default=20, help="line-rule merges printed per corpus")
    ap.add_argument("--skip-precision", action="store_true")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    sci = scifact_texts()
    jsq = [r["text"] for r in jsquad_rows()]
    print(
        f"recall: a paragraph between an intro and an outro in 3 documents, {args.cases} cases each "
        f"(threshold {DEFAULT_THRESHOLD}, cover {DEFAULT_COVER:.3f}, lines of >= {DEFAULT_MIN_LINE_UNITS} units)"
    )
    for name, pool, ja in (("SciFact", sci, False), ("JSQuAD", jsq, True)):
        bands: dict[tuple[float, float], list] = {
            band: [0, 0, 1.0] for band in ((0.0, 0.5), (0.5, 0.65), (0.65, 0.75), (0.75, 0.8))
        }
        for lo, hi in ((4, 15), (16, 30)):
            r = recall(pool, ja, args.cases, rng, lo, hi, bands)
            print(
                f"  {name:8} intro/outro {lo:2}-{hi:2} tokens: three passages in one group: "
                f"old rule {r['old']:.3f}, new {r['new']:.3f}"
            )
        for (jlo, jhi), (n, merged, least) in bands.items():
            print(
                f"  {name:8} passage pairs with Jaccard in [{jlo:.2f}, {jhi:.2f}): {merged}/{n} merged "
                f"(least coverage, both ways: {least:.3f})"
            )
    if args.skip_precision:
        return
    corpora = {
        "JSQuAD articles": jsquad_articles(),
        "TimeQA pages": timeqa_pages(),
        "Kleister-NDA": nda_texts(),
        "SciFact, a sentence per line": {str(i): "\n".join(sentences(t, False)) for i, t in enumerate(sci)},
        "JSQuAD, a sentence per line": {r["_id"]: "\n".join(sentences(r["text"], True)) for r in jsquad_rows()},
    }
    for name, docs in corpora.items():
        precision(name, chunked(docs), args.show)


if __name__ == "__main__":
    main()
