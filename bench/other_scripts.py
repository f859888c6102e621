"""Retrieval in scripts other than Latin and CJK: which dense model should read them, and how BM25 does.

Usage: ``.venv/bin/python -m bench.other_scripts [--data bench/other_scripts.tsv [--data bench/latin_scripts.tsv]]``

Data: ``bench/other_scripts.tsv``, hand-written for Cairn (CC0): 16 short encyclopedic
paragraphs on 16 topics that pair up as near-misses (two rivers, two sports, two
instruments, two rice dishes, two chemists, two mountains, two big cats, two monuments),
in English (``en``, the control) and translated with the same facts into Russian, Greek,
Arabic, Hebrew, Hindi, Bengali, Tamil and Thai; per paragraph one paraphrased question in
its language and that question's English translation. Routing version 1
(``retrieval.language.is_cjk``) sent these scripts to all-MiniLM-L6-v2; the bench prints
how many paragraphs the routing rule in the tree when it runs (``is_non_latin`` or
``is_cjk``) sends to multilingual-e5-small.

Latin-script companion: ``bench/latin_scripts.tsv`` (same format, hand-written for Cairn,
CC0) has the same 16 paragraphs and questions in French, Spanish, German, Portuguese,
Vietnamese and Turkish, and no English rows. ``--data`` may be given more than once: the
files are read into one set (a (lang, topic) pair may appear in only one of them), so
``--data bench/other_scripts.tsv --data bench/latin_scripts.tsv`` measures all 15
languages with the English control. Every table, pool and count covers the languages the
loaded files have (in :data:`LANGS` order), so the default run (only other_scripts.tsv) is
the 9-language run it always was.

Method:

* Corpora: one per language (its 16 paragraphs) and one mixed corpus of all loaded
  languages (144 paragraphs for the 9 of other_scripts.tsv). A question's gold is its own
  language's paragraph of its topic (one gold, so recall@k is hit@k).
* Dense: every paragraph is embedded once per model with ``encode`` and every question with
  ``encode_query``, as Cairn does (:class:`retrieval.embeddings.minilm.LocalMiniLM`, whose queries
  run on ONNX Runtime when it sets up, and :class:`retrieval.embeddings.e5.LocalE5`, which adds
  the ``passage:``/``query:`` prefixes itself); passages are ranked by cosine (dot product of
  the L2-normalised vectors), ties by passage id. Each model is loaded once.
* BM25: :class:`retrieval.lexical.whoosh_index.WhooshIndex` with its defaults in a temporary folder, one
  index per corpus, the paragraph as body and no title, searched with the question (top 10).
  The analyzer is whatever :mod:`retrieval.analysis` is when this runs, so a run before and
  after an analyzer change shows the change; a paragraph BM25 does not return is a miss.
* Metrics: recall@1, recall@5 and MRR@10 per language; "8 non-EN" pools the 128 questions
  of the eight non-English languages (the label counts the non-English languages loaded).
  When both Latin-script and other-script non-English languages are loaded, two more pools
  split them: "N Latin non-EN" and "N non-Latin".
* Cross-lingual (only when English rows are loaded): the 16 English questions against the
  mixed corpus, gold = the topic's paragraph in each of the non-English languages (the English paragraph is in the
  corpus, neither gold nor removed): share of questions with any gold in the top 10, and
  per language the share whose paragraph in that language is in the top 10; and recall@1
  of the English questions against each language's own 16-paragraph corpus.
* Diagnostics: for sample words per language, the terms :func:`retrieval.analysis.analyze`
  gives (fragmentation made visible), analyzer terms per whitespace word and the share of
  one-character terms over each language's paragraphs, and MiniLM's vocabulary coverage
  (:meth:`LocalMiniLM.vocabulary_coverage`: share of word pieces not ``[UNK]``).

Prints the tables (per-language corpora, mixed corpus, cross-lingual, analyzer) with the
time taken, and saves ``bench/out/results/other_scripts.json``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from bench.common import machine, save_results
from bench.scripts_set import DATA, LANGS, Item, languages, load_all, pools

if TYPE_CHECKING:
    from cairn.retrieval.embeddings.e5 import LocalE5
    from cairn.retrieval.embeddings.minilm import LocalMiniLM

SAMPLE_WORDS = {
    "en": ["kilometres", "discovered", "spectators"],
    "ru": ["Каспийское", "впадает", "Менделеев"],
    "el": ["Δούναβης", "χιλιόμετρα", "ανακάλυψε"],
    "ar": ["كيلومترًا", "والراديوم", "البرياني"],
    "he": ["הכדורסל", "ג'יימס", "המחזורית"],
    "hi": ["किलोमीटर", "प्रसिद्ध", "बिरयानी", "ज़्यादातर"],
    "bn": ["কিলোমিটার", "বিরিয়ানি", "আবিষ্কার"],
    "ta": ["கிலோமீட்டர்", "பிரியாணி", "கண்டுபிடித்தார்"],
    "th": ["แม่น้ำวอลกา", "ที่ยาวที่สุด", "บาสเกตบอล"],
    "fr": ["découvert", "Mendeleïev", "l'Everest"],
    "es": ["kilómetros", "descubrió", "¿Cuántos"],
    "de": ["Periodensystem", "Gladiatorenkämpfen", "größte"],
    "pt": ["quilômetros", "deságua", "construí-lo"],
    "vi": ["nguyên", "khấu", "Đấu"],
    "tr": ["Avrupa'nın", "İtalya'nın", "yüksekliğiyle"],
}
"""Words (for Thai: unspaced runs) from the data whose analyzer terms are printed."""

WORKSPACE = "bench"
TOP = 10


def metrics(ranked: Sequence[str], gold: str) -> tuple[float, float, float]:
    """``(recall@1, recall@5, reciprocal rank within the top 10)`` of one question with one gold."""
    top = list(ranked[:TOP])
    rank = top.index(gold) + 1 if gold in top else 0
    return float(rank == 1), float(0 < rank <= 5), (1.0 / rank if rank else 0.0)


def mean_metrics(rows: Sequence[tuple[float, float, float]]) -> dict[str, float]:
    """Average :func:`metrics` rows into ``{"R@1", "R@5", "MRR@10"}``."""
    arr = np.asarray(rows, dtype=np.float64).reshape(-1, 3)
    r1, r5, mrr = arr.mean(axis=0) if len(arr) else (0.0, 0.0, 0.0)
    return {"R@1": float(r1), "R@5": float(r5), "MRR@10": float(mrr)}


def dense_ranker(passage_vectors: np.ndarray, pids: Sequence[str]) -> Callable[[np.ndarray, Sequence[str]], list[str]]:
    """A function ``(query_vector, corpus_pids) → top-10 pids`` by cosine over the given corpus.

    ``passage_vectors`` row ``i`` is passage ``pids[i]`` (L2-normalised); ties order by pid.
    """
    row = {pid: i for i, pid in enumerate(pids)}

    def rank(query: np.ndarray, corpus: Sequence[str]) -> list[str]:
        scores = passage_vectors[[row[p] for p in corpus]] @ query
        order = sorted(range(len(corpus)), key=lambda i: (-float(scores[i]), corpus[i]))
        return [corpus[i] for i in order[:TOP]]

    return rank


def embed(
    model: LocalMiniLM | LocalE5, items: Sequence[Item]
) -> tuple[np.ndarray, dict[str, np.ndarray], dict[str, float]]:
    """Embed every paragraph (``encode``) and every distinct question text (``encode_query``).

    Returns:
        ``(passage matrix in item order, question text → vector, timings in seconds)``.
    """
    t0 = time.perf_counter()
    model.load()
    t1 = time.perf_counter()
    passages = model.encode([it.paragraph for it in items])
    t2 = time.perf_counter()
    texts = list(dict.fromkeys([it.question for it in items] + [it.question_en for it in items]))
    queries = {text: model.encode_query(text) for text in texts}
    t3 = time.perf_counter()
    timing = {
        "load_s": t1 - t0,
        "passages": len(items),
        "passages_s": t2 - t1,
        "queries": len(texts),
        "queries_s": t3 - t2,
    }
    return passages, queries, timing


def bm25_rankings(items: Sequence[Item]) -> tuple[dict[str, list[str]], dict[str, list[str]], dict[str, float]]:
    """BM25 top 10 of every question, over its language's corpus and over the mixed corpus.

    One :class:`retrieval.lexical.whoosh_index.WhooshIndex` per corpus in a temporary folder (module doc).

    Returns:
        ``(pid → ranking in its language's corpus, pid → ranking in the mixed corpus, timings)``,
        keyed by the question's own passage id.
    """
    from cairn.retrieval.lexical import WhooshIndex
    from cairn.retrieval.lexical.schema import IndexedPassage

    def passage(it: Item) -> IndexedPassage:
        return IndexedPassage(
            passage_id=it.pid,
            workspace_id=WORKSPACE,
            collection_id=it.lang,
            document_id=it.pid,
            title="",
            text=it.paragraph,
        )

    def search(folder: Path, corpus: Sequence[Item], asked: Sequence[Item]) -> dict[str, list[str]]:
        index = WhooshIndex(folder)
        try:
            index.add([passage(it) for it in corpus])
            return {
                it.pid: [pid for pid, _ in index.search(it.question, workspace_id=WORKSPACE, limit=TOP)] for it in asked
            }
        finally:
            index.close()

    t0 = time.perf_counter()
    own: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory(prefix="cairn-other-scripts-") as tmp:
        for lang in languages(items):
            corpus = [it for it in items if it.lang == lang]
            own.update(search(Path(tmp) / lang, corpus, corpus))
        mixed = search(Path(tmp) / "mixed", items, items)
    return own, mixed, {"bm25_s": time.perf_counter() - t0}


def per_language(rankings: dict[str, list[str]], items: Sequence[Item]) -> dict[str, dict[str, float]]:
    """Per loaded language (and the :func:`pools`, e.g. ``8 non-EN``): mean metrics of each
    question's ranking vs its own paragraph."""
    out = {}
    for lang in languages(items):
        out[lang] = mean_metrics([metrics(rankings[it.pid], it.pid) for it in items if it.lang == lang])
    for label, langs in pools(items).items():
        out[label] = mean_metrics([metrics(rankings[it.pid], it.pid) for it in items if it.lang in langs])
    return out


def cross_lingual(
    rank: Callable[[np.ndarray, Sequence[str]], list[str]],
    queries: dict[str, np.ndarray],
    items: Sequence[Item],
) -> dict[str, float]:
    """English questions vs the mixed corpus and vs each language's corpus (module doc).

    Returns:
        ``any@10``, ``<lang>@10`` (paragraph in that language in the mixed top 10) and
        ``<lang> R@1`` (top 1 of that language's 16-paragraph corpus) for each loaded
        non-English language. Needs English rows in ``items``.
    """
    other = [lang for lang in languages(items) if lang != "en"]
    english = [it for it in items if it.lang == "en"]
    all_pids = [it.pid for it in items]
    per_lang = {lang: [it.pid for it in items if it.lang == lang] for lang in other}
    hits_any = 0
    hits = dict.fromkeys(other, 0)
    first = dict.fromkeys(other, 0)
    for it in english:
        vector = queries[it.question_en]
        top = set(rank(vector, all_pids))
        golds = {lang: f"{lang}:{it.topic}" for lang in other}
        hits_any += any(g in top for g in golds.values())
        for lang, gold in golds.items():
            hits[lang] += gold in top
            first[lang] += rank(vector, per_lang[lang])[0] == gold
    n = len(english)
    out = {"any@10": hits_any / n}
    out.update({f"{lang}@10": hits[lang] / n for lang in other})
    out.update({f"{lang} R@1": first[lang] / n for lang in other})
    return out


def analyzer_report(items: Sequence[Item]) -> dict[str, dict]:
    """Per loaded language: sample words' analyzer terms, terms per whitespace word, share of 1-char terms."""
    from cairn.retrieval.analysis import analyze

    out: dict[str, dict] = {}
    for lang in languages(items):
        paragraphs = [it.paragraph for it in items if it.lang == lang]
        words = sum(len(p.split()) for p in paragraphs)
        terms = [t for p in paragraphs for t in analyze(p)]
        out[lang] = {
            "terms_per_word": len(terms) / words,
            "one_char_share": sum(len(t) == 1 for t in terms) / len(terms) if terms else 0.0,
            "samples": {w: analyze(w) for w in SAMPLE_WORDS[lang]},
        }
    return out


def routing_rule() -> tuple[str, Callable[[str], bool]]:
    """The script rule that sends text to the multilingual model in the tree being run:
    ``is_non_latin`` (routing version 2) if :mod:`retrieval.language` has it, else ``is_cjk``
    (version 1). Returns ``(name, function)``."""
    from cairn.retrieval import language

    for name in ("is_non_latin", "is_cjk"):
        rule = getattr(language, name, None)
        if rule is not None:
            return name, rule
    raise SystemExit("cairn.retrieval.language has neither is_non_latin nor is_cjk")


def _table(title: str, by_model: dict[str, dict[str, dict[str, float]]], counts: dict[str, int]) -> None:
    """Print one metrics table: a row per key of ``counts`` (languages, then pools), a column group per model."""
    names = list(by_model)
    print(f"\n{title}")
    head = " | ".join(f"{name:^20}" for name in names)
    print(f"{'lang':<9}{'script':<11}{'n':>4} | {head}")
    sub = " | ".join(f"{'R@1':>6}{'R@5':>7}{'MRR':>7}" for _ in names)
    print(f"{'':<24} | {sub}")
    for key in counts:
        cells = " | ".join(
            f"{by_model[m][key]['R@1']:>6.3f}{by_model[m][key]['R@5']:>7.3f}{by_model[m][key]['MRR@10']:>7.3f}"
            for m in names
        )
        label = f"{key:<9}{LANGS[key]:<11}" if key in LANGS else f"{key:<20}"
        print(f"{label}{counts[key]:>4} | {cells}")


def run(paths: Sequence[Path]) -> dict:
    """Measure (module doc) over the set read from ``paths``, print the tables and return the results dict."""
    from cairn.retrieval.embeddings.e5 import LocalE5
    from cairn.retrieval.embeddings.minilm import LocalMiniLM

    started = time.perf_counter()
    items = load_all(paths)
    langs = languages(items)
    other = [lang for lang in langs if lang != "en"]
    pids = [it.pid for it in items]
    counts = {lang: sum(it.lang == lang for it in items) for lang in langs}
    counts.update({label: sum(counts[lang] for lang in group) for label, group in pools(items).items()})
    print(f"{len(items)} paragraphs, {len(langs)} languages, {machine()}")
    rule, to_e5 = routing_rule()
    routed = {lang: sum(to_e5(it.paragraph) for it in items if it.lang == lang) for lang in langs}
    print(
        f"routing rule in the tree: {rule} sends to e5 " + ", ".join(f"{k} {v}/{counts[k]}" for k, v in routed.items())
    )

    data: str | list[str] = str(paths[0]) if len(paths) == 1 else [str(p) for p in paths]
    results: dict = {"machine": machine(), "data": data, "routing": {"rule": rule, "to_e5": routed}, "timing": {}}
    own: dict[str, dict[str, dict[str, float]]] = {}
    mixed: dict[str, dict[str, dict[str, float]]] = {}
    cross: dict[str, dict[str, float]] = {}
    coverage: dict[str, float] = {}
    for label, model in (("MiniLM", LocalMiniLM()), ("e5", LocalE5())):
        passages, queries, timing = embed(model, items)
        results["timing"][label] = timing
        print(
            f"{label}: load {timing['load_s']:.1f} s, {timing['passages']} passages in {timing['passages_s']:.1f} s, "
            f"{timing['queries']} queries in {timing['queries_s']:.1f} s",
            flush=True,
        )
        rank = dense_ranker(passages, pids)
        lang_pids = {lang: [p for p in pids if p.startswith(f"{lang}:")] for lang in langs}
        own[label] = per_language({it.pid: rank(queries[it.question], lang_pids[it.lang]) for it in items}, items)
        mixed[label] = per_language({it.pid: rank(queries[it.question], pids) for it in items}, items)
        if "en" in langs:
            cross[label] = cross_lingual(rank, queries, items)
        if isinstance(model, LocalMiniLM):
            for lang in langs:
                texts = [it.paragraph for it in items if it.lang == lang]
                coverage[lang] = sum(model.vocabulary_coverage(t) for t in texts) / len(texts)

    bm25_own, bm25_mixed, timing = bm25_rankings(items)
    results["timing"]["BM25"] = timing
    own["BM25"] = per_language(bm25_own, items)
    mixed["BM25"] = per_language(bm25_mixed, items)
    misses = {
        lang: sum(it.pid not in bm25_own[it.pid] for it in items if it.lang == lang) for lang in langs
    }  # gold not in BM25's top 10 of its language's corpus

    _table("Per-language corpus (16 paragraphs each): the question's own paragraph", own, counts)
    _table(
        f"Mixed corpus (all {len(items)} paragraphs of {len(langs)} languages): the question's own paragraph",
        mixed,
        counts,
    )

    if cross:
        print(
            f"\nCross-lingual: {counts['en']} English questions; gold = the topic's paragraph in each non-English language"
        )
        print(
            f"{'model':<8}{'any@10':>8} | "
            + " ".join(f"{lang + '@10':>6}" for lang in other)
            + " | R@1 in that language's corpus:"
        )
        for label, c in cross.items():
            at10 = " ".join(f"{c[f'{lang}@10']:>6.2f}" for lang in other)
            at1 = " ".join(f"{lang} {c[f'{lang} R@1']:.2f}" for lang in other)
            print(f"{label:<8}{c['any@10']:>8.2f} | {at10} | {at1}")
    else:
        print("\nCross-lingual: skipped (no English rows loaded)")

    analysis = analyzer_report(items)
    print("\nAnalyzer (cairn.retrieval.analysis.analyze as it is now) and MiniLM vocabulary coverage")
    print(f"{'lang':<6}{'MiniLM cov':>11}{'terms/word':>11}{'1-char':>8}{'BM25 miss':>10}  sample word → terms")
    for lang in langs:
        a = analysis[lang]
        samples = "  ".join(f"{w} → {' '.join(terms) or '∅'}" for w, terms in a["samples"].items())
        print(
            f"{lang:<6}{coverage[lang]:>11.3f}{a['terms_per_word']:>11.2f}{a['one_char_share']:>8.2f}"
            f"{misses[lang]:>7}/{counts[lang]:<2}  {samples}"
        )
    elapsed = time.perf_counter() - started
    print(f"\ntotal {elapsed:.1f} s")
    results.update(
        {
            "per_language_corpus": own,
            "mixed_corpus": mixed,
            "cross_lingual": cross,
            "analyzer": analysis,
            "minilm_vocabulary_coverage": coverage,
            "bm25_gold_missing_top10_own_corpus": misses,
            "total_s": elapsed,
        }
    )
    return results


def main() -> None:
    """Parse the arguments, run the measurement and save the results."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--data",
        type=Path,
        action="append",
        help="a TSV; give it more than once to load the files into one set "
        "(default: bench/other_scripts.tsv; its Latin-script companion is bench/latin_scripts.tsv)",
    )
    args = ap.parse_args()
    save_results("other_scripts", run(args.data or [DATA]), ensure_ascii=False)


if __name__ == "__main__":
    main()
