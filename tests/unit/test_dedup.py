"""Dedup: exact hashes and shingle-Jaccard near duplicates collapse onto the best-ranked."""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass

import pytest

from retrieval.dedup import DedupGroup, dedup, jaccard, shingles, units


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


def test_three_hundred_passages_are_fast_and_deterministic():
    words = [f"term{i}" for i in range(2_000)]
    items = []
    for i in range(300):
        start = (i * 37) % 1_800
        text = " ".join(words[start : start + 150])
        items.append(Item(f"p{i:03d}", text))
    started = time.perf_counter()
    groups = run(items)
    elapsed = time.perf_counter() - started
    assert elapsed < 0.5
    assert sum(1 + len(g.duplicates) for g in groups) == 300
    assert [g.kept.id for g in groups] == [g.kept.id for g in run(items)]


def _brute_force(items, threshold=0.8):
    """Reference: compare every item with every kept item (no index, no prefix filter)."""
    kept, groups = [], []
    for key, text, digest in items:
        exact = next((g for g in groups if digest in g["hashes"]), None)
        if exact is not None:
            exact["dups"].append((key, 1.0))
            continue
        s = shingles(text)
        best, best_sim = None, 0.0
        for g in groups:
            sim = jaccard(s, g["shingles"]) if s else 0.0
            if sim >= threshold and sim > best_sim:
                best, best_sim = g, sim
        if best is not None:
            best["dups"].append((key, best_sim))
            best["hashes"].add(digest)
            continue
        groups.append({"key": key, "shingles": s, "hashes": {digest}, "dups": []})
        kept.append(key)
    return [(g["key"], g["dups"]) for g in groups]


@pytest.mark.parametrize("seed", range(8))
def test_prefix_filtered_dedup_equals_brute_force(seed):
    import hashlib
    import random

    rng = random.Random(seed)
    words = "billing invoice region latency customer data union march nightly contact".split()
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
    texts += rng.sample(texts, 5)  # exact duplicates
    rng.shuffle(texts)
    items = [(f"k{i}", t, hashlib.sha256(t.encode()).hexdigest()) for i, t in enumerate(texts)]
    got = dedup(items, key=lambda x: x[0], text=lambda x: x[1], sha256=lambda x: x[2])
    want = _brute_force(items)
    assert [(g.kept[0], [(d[0], s) for d, s in zip(g.duplicates, g.similarities)]) for g in got] == \
        [(k, [(d, pytest.approx(s)) for d, s in dups]) for k, dups in want]
    assert sum(len(g.duplicates) for g in got) >= 5
