"""The hand-written evaluation set of Cairn's language benchmarks: its languages, rows and files.

Two TSV files, ours (CC0): ``bench/other_scripts.tsv`` — 16 encyclopedic paragraphs on 16
topics in near-miss pairs, in English and translated with the same facts into Russian, Greek,
Arabic, Hebrew, Hindi, Bengali, Tamil and Thai — and ``bench/latin_scripts.tsv``, the same
topics in French, Spanish, German, Portuguese, Vietnamese and Turkish; per paragraph one
paraphrased question in its language and that question's English translation.
:func:`load_items` / :func:`load_all` read them; :func:`build_beir` writes them as BEIR files
for ``python -m bench.beir --dataset scripts``. The measurements are in
:mod:`bench.other_scripts`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.common import OUT

DATA = Path(__file__).with_name("other_scripts.tsv")
LATIN_DATA = Path(__file__).with_name("latin_scripts.tsv")
"""The Latin-script companion set (French, Spanish, German, Portuguese, Vietnamese, Turkish)."""

LANGS = {
    "en": "Latin",
    "ru": "Cyrillic",
    "el": "Greek",
    "ar": "Arabic",
    "he": "Hebrew",
    "hi": "Devanagari",
    "bn": "Bengali",
    "ta": "Tamil",
    "th": "Thai",
    "fr": "Latin",
    "es": "Latin",
    "de": "Latin",
    "pt": "Latin",
    "vi": "Latin",
    "tr": "Latin",
}
"""Language code → script, in table order (English first: the control; the languages of
``bench/latin_scripts.tsv`` last)."""

OTHER = [lang for lang in LANGS if lang != "en"]
"""Every non-English language code :data:`LANGS` knows (a run uses those its data has)."""


@dataclass(frozen=True)
class Item:
    """One row of the data set: a paragraph and its question.

    Attributes:
        lang: Language code (a key of :data:`LANGS`).
        topic: Topic id, ``t01`` … ``t16``; the same topic in every language.
        paragraph: The passage text.
        question: A question in ``lang`` answered by ``paragraph``.
        question_en: The question's English translation.
    """

    lang: str
    topic: str
    paragraph: str
    question: str
    question_en: str

    @property
    def pid(self) -> str:
        """Passage id, ``lang:topic``."""
        return f"{self.lang}:{self.topic}"


def load_items(path: Path = DATA) -> list[Item]:
    """Read the TSV (``#`` lines are comments, then a header line) into items.

    Raises:
        ValueError: If a row does not have five fields, a language is unknown, or a
            (lang, topic) pair repeats.
    """
    items: list[Item] = []
    seen: set[str] = set()
    lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip() and not ln.startswith("#")]
    for n, line in enumerate(lines[1:], start=2):
        fields = line.split("\t")
        if len(fields) != 5:
            raise ValueError(f"{path} data line {n}: expected 5 tab-separated fields, got {len(fields)}")
        item = Item(*(f.strip() for f in fields))
        if item.lang not in LANGS or item.pid in seen:
            raise ValueError(f"{path} data line {n}: unknown language or repeated row {item.pid}")
        seen.add(item.pid)
        items.append(item)
    return items


def load_all(paths: Sequence[Path]) -> list[Item]:
    """Read several TSVs (:func:`load_items`) into one set, in the given order.

    Raises:
        ValueError: As :func:`load_items`, or if a (lang, topic) pair is in two files.
    """
    items: list[Item] = []
    seen: set[str] = set()
    for path in paths:
        for item in load_items(path):
            if item.pid in seen:
                raise ValueError(f"{path}: row {item.pid} is already in an earlier file")
            seen.add(item.pid)
            items.append(item)
    return items


def languages(items: Sequence[Item]) -> list[str]:
    """The language codes that ``items`` have, in :data:`LANGS` order."""
    present = {it.lang for it in items}
    return [lang for lang in LANGS if lang in present]


def pools(items: Sequence[Item]) -> dict[str, list[str]]:
    """Pooled rows of the tables: label → language codes (module doc, "Metrics").

    ``"<n> non-EN"`` (every non-English language loaded) always; ``"<n> Latin non-EN"`` and
    ``"<n> non-Latin"`` as well when the loaded non-English languages include both kinds.
    """
    others = [lang for lang in languages(items) if lang != "en"]
    latin = [lang for lang in others if LANGS[lang] == "Latin"]
    non_latin = [lang for lang in others if LANGS[lang] != "Latin"]
    out = {f"{len(others)} non-EN": others}
    if latin and non_latin:
        out[f"{len(latin)} Latin non-EN"] = latin
        out[f"{len(non_latin)} non-Latin"] = non_latin
    return out


BEIR_ROOT = OUT / "other-scripts-beir"
BEIR_CORPUS = BEIR_ROOT / "corpus.jsonl"
BEIR_QUERIES = BEIR_ROOT / "queries.jsonl"
BEIR_QRELS = BEIR_ROOT / "qrels" / "test.tsv"


def build_beir(paths: Sequence[Path] = (DATA, LATIN_DATA)) -> Path:
    """Write the set as BEIR files for ``python -m bench.beir --dataset scripts`` (one mixed
    corpus through Cairn's packs): corpus = every paragraph of ``paths`` (default: both files,
    240 paragraphs in 15 languages; ``_id`` ``lang:topic``, no title), queries = every
    question in its own language (``_id`` ``q:lang:topic``), qrels = that question's own
    paragraph. Rewritten on every call (small). Returns the folder."""
    items = load_all(list(paths))
    (BEIR_ROOT / "qrels").mkdir(parents=True, exist_ok=True)
    BEIR_CORPUS.write_text(
        "".join(
            json.dumps({"_id": it.pid, "title": "", "text": it.paragraph}, ensure_ascii=False) + "\n" for it in items
        ),
        encoding="utf-8",
    )
    BEIR_QUERIES.write_text(
        "".join(json.dumps({"_id": f"q:{it.pid}", "text": it.question}, ensure_ascii=False) + "\n" for it in items),
        encoding="utf-8",
    )
    BEIR_QRELS.write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"q:{it.pid}\t{it.pid}\t1\n" for it in items), encoding="utf-8"
    )
    return BEIR_ROOT
