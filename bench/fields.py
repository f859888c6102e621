"""Learned fields on Kleister NDA (train split): cross-validated micro-F1, citation validity, speed.

Usage: ``.venv/bin/python -m bench.fields [--folds 5] [--limit N]``

Data: ``../shared/data/kleister-nda/train`` (254 NDAs: ``in.tsv.xz`` column ``text_best``,
unescaped; ``expected.tsv`` key=value pairs). Fields: ``effective_date`` DATE (ONE),
``jurisdiction`` TEXT (ONE), ``party`` TEXT (MANY), ``term`` DURATION (ONE) — the same
:class:`app.fields.FieldSpec` s that ``app.fields.KLEISTER_NDA_FIELDS`` ships.

Method: k-fold cross-validation by document (documents i with ``i % k == fold`` are the
test fold): the ranker (:mod:`app.fields.ranker`, thresholds tuned by an inner 3-fold CV
on the training folds only) is trained on the other folds and scores only documents it
never saw. Predictions are compared as the dataset's authors do: (key, value) pairs, values
upper-cased with spaces and colons written as ``_``; micro-F1 per field and overall.
Citation validity: every predicted value's span re-checked against the text
(:func:`app.fields.verify_span`: the finder run on the span alone gives the same value).
Speed: extraction (finding, featurising, scoring, choosing) of the test documents, docs per
CPU second (process time, so a busy machine does not skew it).
"""

from __future__ import annotations

import argparse
import json
import lzma
import time
from pathlib import Path

from cairn.app.fields import KLEISTER_NDA_FIELDS, choose, doc_features, f1, train_field, verify_span

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "kleister-nda"
_ESC = {"n": "\n", "t": "\t", "f": "\f", "\\": "\\"}


def unescape(s: str) -> str:
    """Kleister's TSV escapes (``\\n \\t \\f \\\\``) undone."""
    out, i = [], 0
    while i < len(s):
        if s[i] == "\\" and i + 1 < len(s) and s[i + 1] in _ESC:
            out.append(_ESC[s[i + 1]])
            i += 2
        else:
            out.append(s[i])
            i += 1
    return "".join(out)


def kleister_form(key: str) -> str:
    """The dataset's comparison form: upper-cased, spaces and colons as ``_``."""
    return key.upper().replace(" ", "_").replace(":", "_")


def load(root: Path = DATA, limit: int | None = None) -> tuple[list[str], list[str], list[dict[str, set[str]]]]:
    """(file names, texts, gold {field: {value in Kleister form}}) of the train split."""
    header = (root / "in-header.tsv").read_text().strip().split("\t")
    col = header.index("text_best")
    names, texts, gold = [], [], []
    with lzma.open(root / "train" / "in.tsv.xz", "rt", encoding="utf-8") as fh:
        for line in fh:
            cells = line.rstrip("\n").split("\t")
            names.append(cells[0])
            texts.append(unescape(cells[col]))
    for line in (root / "train" / "expected.tsv").read_text(encoding="utf-8").splitlines():
        g: dict[str, set[str]] = {}
        for pair in line.split():
            k, v = pair.split("=", 1)
            g.setdefault(k, set()).add(v.upper())
        gold.append(g)
    if limit:
        names, texts, gold = names[:limit], texts[:limit], gold[:limit]
    return names, texts, gold


def keys(doc, gold: dict[str, set[str]], name: str) -> set[str]:
    """The candidate keys of ``doc`` whose Kleister form is a true value of field ``name``."""
    truth = gold.get(name, set())
    return {c.key for c in doc.candidates if kleister_form(c.key) in truth}


SEED_PATH = Path(__file__).resolve().parents[1] / "app" / "fields" / "kleister_nda_model.json"


def write_seed(texts: list[str], gold: list[dict[str, set[str]]]) -> None:
    """Train on all documents and write the shipped seed model (weights |w| >= 1e-3, 4 decimals)."""
    out: dict = {"_types": {s.name: s.type.value for s in KLEISTER_NDA_FIELDS}, "_source": "bench.fields --write-seed"}
    for spec in KLEISTER_NDA_FIELDS:
        docs = [doc_features(t, spec) for t in texts]
        model = train_field(spec, docs, [keys(d, g, spec.name) for d, g in zip(docs, gold)])
        out[spec.name] = {
            "weights": [[i, round(w, 4)] for i, w in sorted(model.weights.items()) if abs(w) >= 1e-3],
            "intercept": model.intercept,
            "threshold": model.threshold,
            "trained": model.trained,
            "documents": model.documents,
        }
        print(f"{spec.name}: {len(out[spec.name]['weights'])} weights, threshold {model.threshold:.2f}")
    SEED_PATH.write_text(json.dumps(out, separators=(",", ":")) + "\n")
    print(f"wrote {SEED_PATH} ({SEED_PATH.stat().st_size:,} bytes)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--errors", type=int, default=0, help="print up to N wrong documents per field")
    ap.add_argument(
        "--write-seed",
        action="store_true",
        help=f"train on every document and write the shipped model ({SEED_PATH.name}) instead of scoring",
    )
    args = ap.parse_args()
    _names, texts, gold = load(limit=args.limit)
    if args.write_seed:
        write_seed(texts, gold)
        return
    n = len(texts)
    print(f"Kleister NDA train: {n} documents, {args.folds}-fold cross-validation by document")
    t0 = time.perf_counter()
    c0 = time.process_time()
    feats = {spec.name: [doc_features(t, spec) for t in texts] for spec in KLEISTER_NDA_FIELDS}
    featurise_s = time.process_time() - c0
    counts = {spec.name: [0, 0, 0] for spec in KLEISTER_NDA_FIELDS}
    cited = valid = 0
    shown = {spec.name: 0 for spec in KLEISTER_NDA_FIELDS}
    score_s = 0.0
    for fold in range(args.folds):
        train_idx = [i for i in range(n) if i % args.folds != fold]
        test_idx = [i for i in range(n) if i % args.folds == fold]
        for spec in KLEISTER_NDA_FIELDS:
            docs = feats[spec.name]
            model = train_field(
                spec, [docs[i] for i in train_idx], [keys(docs[i], gold[i], spec.name) for i in train_idx]
            )
            for i in test_idx:
                t = time.process_time()
                chosen = choose(docs[i], model.scores(docs[i].features), spec, model.threshold)
                score_s += time.process_time() - t
                pred = {kleister_form(e.key) for e in chosen}
                truth = {kleister_form(v) for v in gold[i].get(spec.name, set())}
                if pred != truth and shown[spec.name] < args.errors:
                    shown[spec.name] += 1
                    print(f"    {spec.name} doc {i}: predicted {sorted(pred)} expected {sorted(truth)}")
                c = counts[spec.name]
                c[0] += len(pred & truth)
                c[1] += len(pred)
                c[2] += len(truth)
                for e in chosen:
                    cited += 1
                    valid += verify_span(texts[i], *e.spans[0], spec.type, e.key)
        print(f"  fold {fold + 1}/{args.folds} done ({time.perf_counter() - t0:.0f} s)")
    print(f"\n{'field':16} {'P':>6} {'R':>6} {'F1':>6}  tp/pred/gold")
    tot = [0, 0, 0]
    for name, (tp, npred, ngold) in counts.items():
        p = tp / npred if npred else 0.0
        r = tp / ngold if ngold else 0.0
        print(f"{name:16} {p:6.3f} {r:6.3f} {f1(tp, npred, ngold):6.3f}  {tp}/{npred}/{ngold}")
        tot = [a + b for a, b in zip(tot, (tp, npred, ngold))]
    p, r = tot[0] / max(tot[1], 1), tot[0] / max(tot[2], 1)
    print(f"{'overall (micro)':16} {p:6.3f} {r:6.3f} {f1(*tot):6.3f}  {tot[0]}/{tot[1]}/{tot[2]}")
    print(f"citation validity: {valid}/{cited} = {valid / max(cited, 1):.3f}")
    per_doc = (featurise_s + score_s / 1) / n  # featurising every doc once + scoring each once (test fold)
    print(
        f"extraction: {1 / per_doc:.1f} docs/s (4 fields; finding + featurising {featurise_s:.1f} s, scoring {score_s:.1f} s)"
    )
    print("anchors (authors' test split): Kleister best 0.8177, LAMBERT 0.8042, RoBERTa 0.7850")


if __name__ == "__main__":
    main()
