"""Verified-answer and definition word matching (issue 32 item 12): function words carry no
match, the stored question's subject words must be in the task, and the pack applies the
threshold docs/capabilities.md states exactly."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench.answer_matching import DATA, load, packed
from cairn.app.contextsets.matching import PACK_MIN_COVERAGE, AnswerIndex, DefinitionIndex, subject_terms

CAPABILITIES_DOC = Path(__file__).resolve().parents[3] / "docs" / "capabilities.md"


def one(question: str, task: str, answer: str = "See the handbook.") -> tuple[float, bool] | None:
    """(coverage, about) of ``question``'s answer for ``task`` in a set holding only it; None if not listed."""
    hits = AnswerIndex([question], [answer]).match(task, 3)
    return (hits[0].coverage, hits[0].about) if hits else None


@pytest.mark.parametrize(
    ("question", "task", "coverage"),
    [
        # the examples: the frame matched, the subject did not
        ("How do I reset my VPN password?", "How do I reset my router?", 0.333333),
        ("会議室の予約はどうやって取り消しますか？", "会議室の照明はどうやって消しますか？", 0.5),
        ("怎么重置我的VPN密码？", "怎么重置我的路由器？", 0.333333),
        # another subject or action in the same frame
        ("How do I reset my VPN password?", "How do I change my VPN password?", 0.666667),
        ("会議室の予約はどうやって取り消しますか？", "会議室の予約はどうやって変更しますか？", 0.5),
        ("会议室的预订怎么取消？", "酒店的预订怎么取消？", 0.666667),
        ("When are invoices generated?", "When are payslips generated?", 0.5),
    ],
)
def test_near_misses_are_not_about_the_stored_question(question, task, coverage):
    assert one(question, task) == (coverage, False)


@pytest.mark.parametrize(
    ("question", "task"),
    [
        ("How do I reset my VPN password?", "How can I reset the VPN password?"),
        ("How do I reset my VPN password?", "VPN password reset"),
        ("How do I reset my VPN password?", "I forgot my VPN password, how do I reset it?"),
        ("会議室の予約はどうやって取り消しますか？", "会議室の予約を取り消す方法を教えてください"),
        ("会議室の予約はどうやって取り消しますか？", "会議室予約の取り消し方"),
        ("怎么重置我的VPN密码？", "VPN密码如何重置？"),
        ("怎么重置我的VPN密码？", "我忘记了VPN密码，怎样重置？"),
        ("年假有多少天？", "我一年有多少天年假？"),  # 天 alone in the question, inside 天年 in the task
    ],
)
def test_paraphrases_are_about_the_stored_question(question, task):
    assert one(question, task) == (1.0, True)


def test_function_words_alone_carry_no_match():
    idx = AnswerIndex(["How do I reset my VPN password?", "什么是RRF？"], ["a", "b"])
    assert idx.match("How do I do this?", 5) == []
    assert idx.match("什么是它？", 5) == []
    hit = idx.match("How do I reset my router?", 5)[0]
    assert hit.matched_words == ("reset",)  # not How, do, I, my


def test_subject_terms_keep_subjects_that_stop_lists_drop():
    # scikit-learn's stop list has "bill" (billing → bill) and "fire"; the analyser's stop list has "on"
    assert [t for t, _ in subject_terms("Where is the billing service hosted?")] == ["bill", "servic", "host"]
    assert [t for t, _ in subject_terms("How do I turn on the fire alarm?")] == ["turn", "on", "fire", "alarm"]
    # a CJK run weighs 1 whatever its length; hiragana and 的/怎么 are function material
    assert subject_terms("会議室の予約を取り消す") == [("会議", 0.5), ("議室", 0.5), ("予約", 1), ("取", 1), ("消", 1)]
    assert [t for t, _ in subject_terms("怎么重置我的VPN密码？")] == ["重置", "vpn", "密码"]
    # a text made only of function words is its own subject
    assert [t for t, _ in subject_terms("What is it?")] == ["what"]


def test_the_threshold_is_the_documented_one_and_is_applied_exactly():
    stated = re.search(r"the task holds ≥ (\d+) % of the question's", CAPABILITIES_DOC.read_text(encoding="utf-8"))
    assert stated and int(stated.group(1)) == round(PACK_MIN_COVERAGE * 100) == 70
    question = "alpha bravo charlie delta echo foxtrot golf hotel india juliet"
    words = question.split()
    assert one(question, " ".join(words[:7])) == (0.7, True)  # 7 of 10: in, not 0.6999…
    assert one(question, " ".join(words[:6])) == (0.6, False)


def test_a_subject_word_replaced_by_another_is_not_a_dropped_one():
    q = "How do I reset my VPN password on a Windows laptop?"
    assert one(q, "How do I reset my VPN password on Windows?") == (0.833333, True)  # laptop dropped
    assert one(q, "How do I reset my VPN password on a Windows desktop?") == (0.833333, False)  # replaced
    assert one(q, "How do I reset my router password on a Windows laptop?") == (0.833333, False)
    assert one("東京オフィスの住所を教えてください", "大阪オフィスの住所を教えてください")[1] is False
    assert one("北京办公室的地址是什么？", "上海办公室的地址是什么？")[1] is False
    assert one("报销差旅费需要哪些材料？", "差旅费报销需要什么材料")[1] is True  # reordered, not replaced


def test_no_near_miss_of_the_committed_set_is_packed():
    """bench/answer_matching.jsonl: precision 1.00 on near-misses (same frame, another subject,
    action or qualifier); ``python -m bench.answer_matching`` prints recall and the other-question rows."""
    rows = load(DATA)
    assert sum(r["kind"] == "paraphrase" for r in rows) >= 30 and sum(r["kind"] == "near-miss" for r in rows) >= 30
    assert {r["lang"] for r in rows} == {"en", "ja", "zh"}
    by_lang: dict[str, dict[str, str]] = {}
    for r in rows:
        by_lang.setdefault(r["lang"], {}).setdefault(r["stored"], r["answer"])
    wrong = []
    for r in rows:
        qa = by_lang[r["lang"]]
        in_set = r["stored"] in packed(AnswerIndex(list(qa), list(qa.values())), list(qa), r["task"])
        alone = r["stored"] in packed(AnswerIndex([r["stored"]], [r["answer"]]), [r["stored"]], r["task"])
        if r["kind"] == "near-miss" and (in_set or alone):
            wrong.append(r["task"])
    assert wrong == []


def test_definitions_a_term_is_its_own_subject_and_function_words_carry_nothing():
    idx = DefinitionIndex(
        [
            ("What-if analysis", [], "Scenario planning."),
            ("IT", ["information technology"], "The computer department."),
            ("RRF", ["rank fusion"], "Reciprocal rank fusion."),
        ]
    )
    assert idx.lookup("what is a VPN", 5) == []  # only "what" was shared
    assert [(m.index, m.score) for m in idx.lookup("IT", 5)] == [(1, 1.0)]
    assert [(m.index, m.score) for m in idx.lookup("Rank Fusion", 5)] == [(2, 1.0)]
    assert [m.index for m in idx.lookup("what-if scenarios", 5)][:1] == [0]
    assert idx.in_text("How does rank fusion order the IT tickets?") == [(2, 2)]


@pytest.mark.parametrize(
    ("question", "task"),
    [
        # the tester's cases: every subject word present, the sense reversed (was (1.0, True))
        ("How do I reset my VPN password?", "How do I NOT reset my VPN password?"),
        ("How do I reset my VPN password?", "Why shouldn't I reset my VPN password?"),
        ("How do I reset my VPN password?", "How can I reset my VPN password without the portal?"),
        ("Why can't I reset my VPN password?", "How do I reset my VPN password?"),  # negated question
        ("会議室の予約はどうやって取り消しますか？", "会議室の予約はどうやって取り消しませんか？"),
        ("会議室の予約はどうやって取り消しますか？", "会議室の予約を取り消さない方法"),
        ("怎么重置我的VPN密码？", "怎么不重置我的VPN密码？"),
        ("怎么重置我的VPN密码？", "为什么没有重置我的VPN密码？"),
        ("怎么重置我的VPN密码？", "别重置我的VPN密码"),
    ],
)
def test_a_negation_on_one_side_only_is_another_question(question, task):
    coverage, about = one(question, task)
    assert coverage <= 0.5 and about is False


@pytest.mark.parametrize(
    ("question", "task"),
    [
        # negated on both sides, or a word that only looks like a negation
        ("Why can't I reset my VPN password?", "Why am I not able to reset my VPN password?"),
        ("How do I reset my VPN password? I know the old one.", "I know my old VPN password, how do I reset it?"),
        ("会議室の予約はどうやって取り消しますか？", "すみません、会議室の予約はどうやって取り消しますか？"),
        ("会議室の予約はどうやって取り消しますか？", "まず、会議室の予約はどうやって取り消しますか？"),
        ("怎么重置我的VPN密码？", "不过，怎么重置我的VPN密码？"),
        ("为什么收不到发票？", "为什么我收不到发票"),
    ],
)
def test_matching_polarity_still_matches(question, task):
    coverage, about = one(question, task)
    assert coverage > 0.7 and about is True  # not halved


def test_answer_scores_are_those_of_the_code_before_the_one_bm25():
    """Verified answers' BM25 through retrieval.lexical.bm25 (ANSWER_BM25: k1 1.2, b 0.75, Lucene's
    IDF; answers weighted 0.3): the matches of commit 2c2adb9 on the same set, scores and
    coverage as served (rounded to 6 places), identical."""
    from cairn.app.contextsets.matching import ANSWER_BM25

    assert (ANSWER_BM25.k1, ANSWER_BM25.b, ANSWER_BM25.idf.value) == (1.2, 0.75, "lucene")
    idx = AnswerIndex(
        [
            "How do I reset my VPN password?",
            "What is the VPN VPN VPN address for the office?",
            "Who approves travel expenses?",
            "Reset the office printer",
        ],
        [
            "Use the self-service portal.",
            "vpn.example.com, VPN profile office",
            "Your manager approves them.",
            "Hold reset for ten seconds.",
        ],
    )
    expected = {
        "reset VPN password": [(0, 2.226011, 1.0, True), (1, 1.396071, 0.6, False), (3, 1.180366, 0.333333, False)],
        "office VPN address": [
            (1, 3.501314, 1.0, True),
            (3, 0.828763, 0.333333, False),
            (0, 0.595673, 0.333333, False),
        ],
        "travel expense approval": [(2, 4.32715, 1.0, True)],
    }
    for task, matches in expected.items():
        assert [(m.index, m.score, m.coverage, m.about) for m in idx.match(task, 5)] == matches
