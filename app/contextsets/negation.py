"""Whether a question is negated: "How do I NOT reset …" asks another question than "How do I reset …".

:func:`negated` is true when the text holds a negation marker (method: regular expressions over
the NFKC-folded, lowercased text, with the common non-negating words that contain a marker
excluded):

* English: ``not``, ``n't`` (``don't``, ``shouldn't``, ``can't``), ``cannot``, ``never``, ``no``,
  ``nor``, ``without``.
* Japanese verb endings: ``ない``/``なかった``/``なく`` (not ``少ない``, ``危ない``), ``ません``
  (not ``すみません``), ``ず`` before ``に``/punctuation/end (not ``必ず``, a free-standing
  ``まず``), ``ぬ`` after an a-row kana (``知らぬ``).
* Chinese: ``不`` (not in ``不过``, ``不同``, ``不错``, ``不少``, ``不仅``, ``不但``, ``不断``,
  ``不久``, ``不具合``, ``不明``), ``没``/``没有`` (not ``淹没``/``沉没``/``埋没``/``出没``), ``别``
  (not ``别人``, ``别的``, ``特别``, ``区别``, ``分别``, ``类别``, ``级别``, ``识别``, ``个别``,
  ``性别``, ``差别``, ``告别``, ``别名``), ``勿`` (not ``勿論``), ``未`` (not ``未来``).

A polarity mismatch between task and stored question halves the coverage
(:meth:`~app.contextsets.matching.AnswerIndex.match`): same subject, opposite sense.
"""

from __future__ import annotations

import re
import unicodedata

_NEGATION = re.compile(
    r"\b(?:not|cannot|never|no|nor|without)\b|n['’]t\b"
    r"|(?<![少危汚切])ない|なかった|(?<![少危汚切])なく(?!て?も)"
    r"|(?<!すみ)ません"
    r"|(?<!必)ず(?=に|[、。，．？！?!\s]|$)"
    r"|(?<=[らさかまなたわがばせ])ぬ(?![いぐるれらりけ])"
    r"|不(?![过同错少仅但断久具明])"
    r"|(?<![淹沉埋出])没"
    r"|(?<![特区分类级识个性差告])别(?![人的名])"
    r"|勿(?!論)"
    r"|未(?!来)"
)
_FREE_MAZU = re.compile(r"(?:^|[^\u4e00-\u9fffぁ-ゖァ-ヺ])まず")


def negated(text: str) -> bool:
    """True when ``text`` (any language) holds a negation marker listed in the module doc."""
    folded = unicodedata.normalize("NFKC", text).lower()
    for m in _NEGATION.finditer(folded):
        if m.group(0) == "ず" and _FREE_MAZU.search(folded[max(0, m.start() - 2) : m.end()]):
            continue  # "まず" (first), not a negated verb (休まず is: a kanji before ま)
        return True
    return False
