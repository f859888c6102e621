"""Function words: the frame of a question ("How do I … my …?", 「…はどうやって…ますか」,
「怎么…我的…？」), which must not carry a word match of a verified answer (issue 32 item 12).

:func:`strip_cjk_function_words` replaces CJK function material with a space and leaves the
content (subject) words where they were, so Cairn's analyser (:mod:`retrieval.analysis`) then
bigrams what is left of each CJK run; the English list is that analyser's stop list when it
analyses subject terms (:mod:`~app.contextsets.subjects`), so ``can't`` is dropped as the
tokenizer's ``can`` and ``t``. Three lists:

* **English** (:data:`ENGLISH_FUNCTION_WORDS`): the Snowball project's English stop list
  (127 pronouns, determiners, auxiliaries, prepositions, wh-words; shipped by Whoosh as
  ``whoosh.lang.stopwords.stoplists["en"]``, a dependency already, imported in 2 ms) without
  the words that tell two questions apart — directions and negations (``turn on`` vs ``turn
  off``, ``over`` vs ``under``, ``before``/``after``, ``not``) — plus the modals and frame
  words it lacks (``could would may might must please tell way``) and the contraction pieces
  the tokenizer splits off (``you'll`` → ``you``, ``ll``). scikit-learn's list (the Glasgow
  IR group's) was not taken: it holds subjects (``bill`` — ``billing`` stems to it —
  ``system``, ``fire``, ``name``, numerals) and ``import sklearn`` took 4.9 s here at start-up.
  Subject terms are analysed without Whoosh's analyser stop list, so this list alone decides.
* **Japanese**: hiragana is function material. Particles (の は が を に で と も か へ
  や), auxiliaries and endings (ます です ました たい ない), interrogatives (どう やって
  どの いつ) and okurigana are written in hiragana, while subjects are written in kanji,
  katakana or Latin letters; so a hiragana run is dropped whole and 取り消します leaves
  ``取`` ``消`` (the verb's stems, whatever its inflection). This is character-type (字種)
  segmentation, the dictionary-free approximation of a morphological analyser's
  particle/auxiliary filter (Lucene's Kuromoji ``JapanesePartOfSpeechStopFilter``), with its
  known limit: a subject written only in hiragana (ごみ, めがね) is not seen as a subject.
  Kanji frame words are listed in :data:`HAN_FUNCTION_WORDS` (方法 "way to", 教えて
  "tell me", 何, 誰, 出来る).
* **Chinese** (:data:`HAN_FUNCTION_WORDS`, longest first): interrogatives (怎么 如何 什么
  什么时候 为什么 哪里), pronouns (我 你 您 他 我们), particles (的 了 吗 呢 吧), the verbs
  是 在 有, prepositions 把 被 给, and frame words (可以 能否 是否 请问 方法 办法). Single
  characters that also start or end common content words are left out: 会 (会议 meeting),
  要 (重要), 能 (功能), 都 (首都), 还 (归还), 与 (参与), 地 (地址, 地震), 得 (获得), 着
  (到着), 和 (和室), 请 (申请).

The same stripping runs on the stored question and on the asker's text, so a content word
that happens to contain a listed character (现在 → 现) is cut the same way on both sides.
Korean and the other bigram scripts keep every term (Korean is spaced; its particles stay
attached to their word).
"""

from __future__ import annotations

import regex
from whoosh.lang.stopwords import stoplists


def _words(text: str) -> tuple[str, ...]:
    """The space-separated words of a list written as one string (easier to read and review)."""
    return tuple(text.split())


_SUBJECT_IN_SNOWBALL = frozenset(
    _words("on off up down out over under above below before after against no not nor more most few")
)
"""Entries of the Snowball list kept as subject words: they tell two questions apart (``turn on``
vs ``turn off``, ``over`` vs ``under 500 euros``, ``before`` vs ``after``)."""

ENGLISH_FUNCTION_WORDS = (frozenset(stoplists["en"]) - _SUBJECT_IN_SNOWBALL) | frozenset(
    _words("could would may might must shall cannot please tell way also us yet via ll ve re d m")
)
"""Lowercased English function words (module doc)."""

HAN_FUNCTION_WORDS = _words(
    # Chinese interrogatives, frame words and pronouns (several characters, matched first)
    "为什么 什么时候 怎么样 怎么 怎样 如何 什么 哪里 哪儿 哪个 哪些 多少 是否 能否 可否 可以 应该 需要 请问 "
    "我们 你们 他们 她们 自己 一下 的话 这个 那个 这些 那些 方法 办法 没有 "
    # Japanese kanji frame words (with their okurigana: matched before hiragana is dropped)
    "教えて 教え 下さい 出来 何故 "
    # single characters: particles, pronouns, copula, prepositions, interrogatives
    "的 了 吗 呢 吧 啊 呀 么 是 在 有 我 你 您 他 她 它 这 那 哪 谁 把 被 给 或 何 誰"
)
"""Han-script function words of Chinese and Japanese (module doc), matched longest first."""

_HAN = regex.compile("|".join(sorted((regex.escape(w) for w in HAN_FUNCTION_WORDS), key=len, reverse=True)))
_HIRAGANA = regex.compile(r"[\p{Hiragana}]+")  # ぁ-ゖ, ゝゞ (ー belongs to katakana words and stays)


def strip_cjk_function_words(text: str) -> str:
    """``text`` with its Chinese and Japanese function material (module doc) replaced by spaces.

    Args:
        text: Any string (NFKC-normalised by the caller, so half-width kana are full-width).

    Returns:
        The same text with each listed Han function word and each hiragana run replaced by one
        space; other scripts untouched. CJK content words that were separated by function
        material become separate runs (会議室の予約 → ``会議室 予約``).
    """
    return _HIRAGANA.sub(" ", _HAN.sub(" ", text))
