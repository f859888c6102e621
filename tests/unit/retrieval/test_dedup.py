"""Dedup: exact hashes, shingle-Jaccard near duplicates and repeated paragraphs collapse
onto the best-ranked item."""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from dataclasses import dataclass

import pytest

from cairn.retrieval import dedup_shingles
from cairn.retrieval.chunking import chunk_text
from cairn.retrieval.dedup import DedupGroup, dedup, prepare
from cairn.retrieval.dedup_shingles import coverage, jaccard, shingle_keys, shingles, units
from tests.conftest import shared_data


@dataclass(frozen=True)
class Item:
    id: str
    text: str

    @property
    def sha(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()


def run(items: list[Item], **kwargs) -> list[DedupGroup[Item]]:
    return dedup(items, key=lambda i: i.id, text=lambda i: i.text, sha256=lambda i: i.sha, **kwargs)


PARAGRAPH = (
    "The quarterly report shows that revenue grew in every region, with the strongest "
    "growth in the northern markets where the new distribution centre opened in March "
    "and delivery times fell by almost a third compared with the previous year."
)
EDITED = PARAGRAPH.replace("almost a third", "nearly a third")  # one word changed
OTHER = "Cats sleep for most of the day and hunt at night, which is typical of small predators."


def test_near_duplicate_joins_the_better_ranked_item_with_alternates():
    items = [Item("best", EDITED), Item("other", OTHER), Item("worse", PARAGRAPH), Item("copy", EDITED)]
    groups = run(items)
    assert [(g.kept.id, [d.id for d in g.duplicates]) for g in groups] == [("best", ["worse", "copy"]), ("other", [])]
    similarity = jaccard(shingles(EDITED), shingles(PARAGRAPH))
    assert 0.8 <= similarity < 1.0
    assert groups[0].similarities == [similarity, 1.0]


def test_prepare_caches_everything_dedup_computes_and_changes_no_group():
    lines = "\n".join(
        f"Line {i}: the distribution centre opened in March and delivery times fell again." for i in range(4)
    )
    items = [
        Item("a", EDITED + " prepared"),
        Item("b", lines),
        Item("c", PARAGRAPH + " prepared"),
        Item("d", lines + " x"),
    ]
    before = run(items)
    dedup_shingles._profile.cache_clear()
    dedup_shingles._prefix.cache_clear()
    for item in items:
        prepare(item.text)
    profiles, prefixes = dedup_shingles._profile.cache_info(), dedup_shingles._prefix.cache_info()
    assert prefixes.currsize == 4 + 4 + 1  # the 4 texts, b's 4 lines, and d's last line (its others are b's)
    assert run(items) == before
    assert dedup_shingles._profile.cache_info().misses == profiles.misses  # dedup computed no shingle set
    assert dedup_shingles._prefix.cache_info().misses == prefixes.misses  # nor any prefix


def test_exact_duplicates_by_hash_even_without_text_overlap():
    items = [Item("a", "x"), Item("b", "y")]
    groups = dedup(items, key=lambda i: i.id, text=lambda i: i.text, sha256=lambda i: "same")
    assert [(g.kept.id, [d.id for d in g.duplicates], g.similarities) for g in groups] == [("a", ["b"], [1.0])]


def test_case_spacing_and_punctuation_do_not_matter():
    items = [Item("a", "Hello,   World! How are you?"), Item("b", "hello world how are you")]
    assert [[d.id for d in g.duplicates] for g in run(items)] == [["b"]]


def test_cjk_near_duplicates_use_character_shingles():
    ja = "東京都は日本の首都であり、人口が最も多い都市である。政治と経済の中心でもある。"
    ja_edit = ja.replace("首都", "首府")  # one character: 3 of 34 shingles change, J = 31/37
    zh = "数据库是按照数据结构来组织、存储和管理数据的仓库。"
    assert units("東京 Tower") == ["東", "京", "tower"]
    assert jaccard(shingles(ja), shingles(ja_edit)) == pytest.approx(31 / 37)
    groups = run([Item("ja", ja), Item("zh", zh), Item("ja2", ja_edit)])
    assert [(g.kept.id, [d.id for d in g.duplicates]) for g in groups] == [("ja", ["ja2"]), ("zh", [])]


def test_threshold_controls_grouping_and_unrelated_text_stays_apart():
    half = "alpha beta gamma delta epsilon zeta eta theta"
    other_half = "alpha beta gamma delta iota kappa lambda mu"
    assert len(run([Item("a", half), Item("b", other_half)])) == 2
    assert len(run([Item("a", half), Item("b", other_half)], threshold=0.2)) == 1


def test_item_joins_the_most_similar_kept_item():
    base = " ".join(f"w{i}" for i in range(40))
    near_a = base + " extra"
    a = Item("a", base)
    b = Item("b", " ".join(f"w{i}" for i in range(8, 48)))  # overlaps a at J < 0.8: its own group
    c = Item("c", near_a)
    groups = run([a, b, c])
    assert [(g.kept.id, [d.id for d in g.duplicates]) for g in groups] == [("a", ["c"]), ("b", [])]


def test_short_texts_and_empty_text():
    assert shingles("one two") == frozenset({"one two"})
    assert shingles("...") == frozenset()
    groups = run([Item("a", "..."), Item("b", "!!!"), Item("c", "one two"), Item("d", "One, two.")])
    assert [(g.kept.id, [d.id for d in g.duplicates]) for g in groups] == [("a", []), ("b", []), ("c", ["d"])]


def test_validation():
    with pytest.raises(ValueError):
        run([Item("a", "x")], threshold=0)
    with pytest.raises(ValueError):
        run([Item("a", "x")], threshold=1.5)
    with pytest.raises(ValueError):
        run([Item("a", "x"), Item("a", "y")])
    with pytest.raises(ValueError):
        shingles("x", n=0)
    with pytest.raises(ValueError):
        run([Item("a", "x")], cover=0)
    with pytest.raises(ValueError):
        run([Item("a", "x")], min_line_units=0)


def test_three_hundred_passages_are_deduplicated_deterministically():
    # speed is measured in bench/, never asserted here (a 0.5 s bound failed under load)
    words = [f"term{i}" for i in range(2_000)]
    items = []
    for i in range(300):
        start = (i * 37) % 1_800
        text = " ".join(words[start : start + 150])
        items.append(Item(f"p{i:03d}", text))
    groups = run(items)
    assert sum(1 + len(g.duplicates) for g in groups) == 300
    assert [g.kept.id for g in groups] == [g.kept.id for g in run(items)]


def _brute_force(items, threshold=0.8, cover=0.7, min_line_units=8):
    """Reference: compare every item with every kept item, and every line with every line
    (no index, no prefix filter): Jaccard rule first, else the best coverage."""
    groups = []
    for key, text, digest in items:
        exact = next((g for g in groups if digest in g["hashes"]), None)
        if exact is not None:
            exact["dups"].append((key, 1.0, 1.0))
            continue
        s = shingles(text)
        sims = [jaccard(s, g["shingles"]) if s else 0.0 for g in groups]
        covers = [coverage(text, g["text"], threshold, min_line_units)[0] if s else 0.0 for g in groups]
        best = None
        if any(sim >= threshold for sim in sims):
            best = min((i for i, sim in enumerate(sims) if sim >= threshold), key=lambda i: (-sims[i], i))
        elif any(c >= cover for c in covers):
            best = min((i for i, c in enumerate(covers) if c >= cover), key=lambda i: (-covers[i], -sims[i], i))
        if best is not None:
            groups[best]["dups"].append((key, sims[best], covers[best]))
            groups[best]["hashes"].add(digest)
            continue
        groups.append({"key": key, "text": text, "shingles": s, "hashes": {digest}, "dups": []})
    return [(g["key"], g["dups"]) for g in groups]


@pytest.mark.parametrize("seed", range(8))
def test_prefix_filtered_dedup_equals_brute_force(seed):
    import random

    rng = random.Random(seed)
    words = ["billing", "invoice", "region", "latency", "customer", "data", "union", "march", "nightly", "contact"]
    kana = "あいうえおかきくけこさしすせそ東京都大阪市検索文書意味"
    base = [" ".join(rng.choice(words) for _ in range(rng.randint(2, 30))) for _ in range(25)]
    base += ["".join(rng.choice(kana) for _ in range(rng.randint(2, 60))) for _ in range(25)]
    texts = list(base)
    for t in rng.sample(base, 30):  # near duplicates: one unit changed, appended or dropped
        if " " in t:
            w = t.split()
            w[rng.randrange(len(w))] = rng.choice(words)
            texts.append(" ".join(w))
        else:
            texts.append(t[:-1] + rng.choice(kana))
    # multi-line texts: lines drawn from the texts above (some edited), so lines recur
    # between texts with different neighbours — the coverage rule's candidates
    for _ in range(40):
        lines = rng.sample(texts, rng.randint(2, 5))
        if rng.random() < 0.5:
            lines[0] = lines[0] + " " + rng.choice(words)
        texts.append(("\n\n" if rng.random() < 0.5 else "\n").join(lines))
    texts += rng.sample(texts, 5)  # exact duplicates
    rng.shuffle(texts)
    items = [(f"k{i}", t, hashlib.sha256(t.encode()).hexdigest()) for i, t in enumerate(texts)]
    got = dedup(items, key=lambda x: x[0], text=lambda x: x[1], sha256=lambda x: x[2])
    want = _brute_force(items)
    assert [(g.kept[0], [(d[0], s, c) for d, s, c in zip(g.duplicates, g.similarities, g.coverages)]) for g in got] == [
        (k, [(d, pytest.approx(s), pytest.approx(c)) for d, s, c in dups]) for k, dups in want
    ]
    assert sum(len(g.duplicates) for g in got) >= 5
    assert sum(0 < c < 1 and s < 0.8 for g in got for s, c in zip(g.similarities, g.coverages)) >= 1


# --- repeated paragraphs between different neighbours (issue 11, item 8) -----------------


def _sentences(text: str, japanese: bool) -> list[str]:
    parts = re.split(r"(?<=。)", text) if japanese else re.split(r"(?<=[.!?])\s+(?=[A-Z0-9(])", text)
    return [p for p in parts if p.strip()]


def _jsquad(*ids: str) -> list[str]:
    with open(shared_data("jsquad", "beir", "corpus.jsonl"), encoding="utf-8") as fh:
        rows = {r["_id"]: r["text"] for r in map(json.loads, fh)}
    return [rows[i] for i in ids]


def _scifact(doc_id: str) -> str:
    with gzip.open(shared_data("scifact", "corpus.jsonl.gz"), "rt", encoding="utf-8") as fh:
        return next(r["text"] for r in map(json.loads, fh) if r["_id"] == doc_id)


def _three_documents(paragraph: str, wraps: list[tuple[str, str]]) -> tuple[list[Item], list[str]]:
    """Chunk (as ingest does) three documents holding ``paragraph`` between ``wraps``."""
    items, holders = [], []
    for d, (intro, outro) in enumerate(wraps):
        for n, chunk in enumerate(chunk_text(f"{intro}\n\n{paragraph}\n\n{outro}", max_tokens=200)):
            items.append(Item(f"d{d}p{n}", chunk.text))
            if paragraph in chunk.text:
                holders.append(f"d{d}p{n}")
    return items, holders


@pytest.mark.parametrize("language", ["en", "ja"])
def test_a_paragraph_between_different_intros_and_outros_collapses(language):
    if language == "en":  # the first three sentences of a SciFact abstract, different notes around them
        paragraph = " ".join(_sentences(_scifact("4983"), False)[:3])
        wraps = [
            (
                "Reading for Thursday's journal club on imaging in preterm infants.",
                "Please bring your questions about the diffusion methods to the meeting.",
            ),
            (
                "A colleague from the neonatal unit shared this excerpt last week.",
                "End of excerpt; the full article is in the shared folder.",
            ),
            (
                "Background for Tuesday's lab meeting, quoted from the abstract.",
                "The methods section of the article describes the scanner settings.",
            ),
        ]
    else:  # a JSQuAD paragraph (梅雨), different notes around it
        paragraph = _jsquad("a10336p0")[0]
        wraps = [
            ("以下は勉強会の資料から引用した段落です。", "出典はウィキペディアです。質問は来週までに。"),
            ("参考資料として配布された文章の一部です。", "以上。詳しくは原文を参照してください。"),
            ("来週の授業で読む予定の文章です。", "感想を一段落で書いて提出してください。"),
        ]
    items, holders = _three_documents(paragraph, wraps)
    assert len(holders) == 3  # one passage per document: intro, paragraph and outro together
    texts = {i.id: i.text for i in items}
    # whole-passage resemblance is 0.60-0.67: Jaccard alone keeps three items
    pairs = [(holders[0], holders[1]), (holders[0], holders[2]), (holders[1], holders[2])]
    assert all(0.6 < jaccard(shingle_keys(texts[a]), shingle_keys(texts[b])) < 0.7 for a, b in pairs)
    groups = run(items)
    assert [(g.kept.id, [d.id for d in g.duplicates]) for g in groups] == [(holders[0], holders[1:])]
    assert all(0.7 <= c < 0.85 for c in groups[0].coverages)
    assert groups[0].similarities == [
        jaccard(shingle_keys(texts[holders[0]]), shingle_keys(texts[h])) for h in holders[1:]
    ]


@pytest.mark.parametrize("ids", [("a10336p23", "a10336p24"), ("a14985p140", "a14985p142")])
def test_templated_japanese_paragraphs_with_shared_neighbours_stay_apart(ids):
    """Real JSQuAD paragraphs written from one template (梅雨入り/梅雨明け, 長い/短い; the
    都道府県 and 地区 committee rules) share most character 3-grams but no sentence; one
    sentence per line, between the same intro and outro, they must not collapse."""
    a, b = (f"参考資料\n\n{chr(10).join(_sentences(t, True))}\n\n以上。" for t in _jsquad(*ids))
    assert coverage(a, b)[0] < 0.5 and coverage(b, a)[0] < 0.5
    assert len(run([Item("a", a), Item("b", b)])) == 2


def test_shared_boilerplate_lines_do_not_merge_different_passages():
    boiler = "Please note that a web plugin is required to access this enhanced functionality."
    a = f"{boiler}\nMyelodysplastic syndromes are age-dependent stem cell malignancies of the elderly."
    b = f"{boiler}\nDNA methylation plays an important role in biological processes in human health."
    assert coverage(a, b) == (pytest.approx(13 / 24), 13)  # the boilerplate line: 13 of 24 units
    assert len(run([Item("a", a), Item("b", b)])) == 2
    # short lines (signature blocks, headings) never count as matched text
    form = "Signature:\nPrint Name:\nDate:\nTitle:\nBy:"
    c = f"{form}\nThe vendor agrees to keep the customer list confidential for three years."
    d = f"{form}\nThe employee agrees not to solicit customers for twelve months after leaving."
    assert coverage(c, d) == (0.0, 0)
    assert len(run([Item("c", c), Item("d", d)])) == 2


def test_a_text_inside_a_kept_text_joins_it_and_the_reverse_needs_coverage():
    para = (
        "The committee reviewed the annual budget and approved the new data retention policy, which "
        "takes effect in January for every regional office and for the two new branches opened this spring."
    )
    long = f"Minutes of the March meeting.\n\n{para}\n\nThe next meeting is in June."
    groups = run([Item("long", long), Item("short", para)])
    assert [(g.kept.id, [d.id for d in g.duplicates], g.coverages) for g in groups] == [("long", ["short"], [1.0])]
    groups = run([Item("short", para), Item("long", long)])  # 31 of the long text's 42 units
    assert [(g.kept.id, [d.id for d in g.duplicates], g.coverages) for g in groups] == [
        ("short", ["long"], [pytest.approx(31 / 42)])
    ]
    assert len(run([Item("short", para), Item("long", long)], cover=0.75)) == 2


def test_a_jaccard_match_takes_precedence_over_a_better_coverage():
    def words(a, b):
        return " ".join(f"w{i}" for i in range(a, b))

    container = Item("container", "an introduction line that has ten units in it here\nc0 c1 c2 c3 " + words(0, 36))
    near = Item("near", words(4, 44))  # J(item, near) = 0.81; near is not covered by the container
    item = Item("item", words(0, 40))  # fully covered by the container's second line (J 0.81), J 0.65 whole
    assert coverage(item.text, container.text)[0] == 1.0 and coverage(near.text, container.text)[0] == 0.0
    groups = run([container, near, item])
    assert [(g.kept.id, [d.id for d in g.duplicates]) for g in groups] == [("container", []), ("near", ["item"])]
