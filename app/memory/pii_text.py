"""The normalised text the PII detectors of :mod:`app.memory.pii` read: :func:`fold`, then :func:`compact`.

Detectors are regular expressions written for one ASCII separator between digit groups
(``536-22-1234``, ``536 22 1234``). A value written with other separators is the same value,
so it is brought to that form first, keeping a map back to the caller's offsets:

1. :func:`fold` (same length): any Unicode decimal digit → ASCII, full-width forms → ASCII,
   no-break/thin/ideographic and other Unicode spaces → space, Unicode hyphens, dashes and the
   minus sign → ``-``, ``ー`` and ``_`` between digits (spaces aside) → ``-`` (``536_22_1234``;
   only between digits: ``user_123`` and ``snake_case`` are names, not digit groups).
2. :func:`compact` (shorter, with an offset map): invisible characters (zero-width space and
   joiners, word joiner, BOM, soft hyphen) are dropped anywhere; a *gap* between two ASCII
   letters/digits, at least one of them a digit, made of spaces with at most one ``-``, ``/``
   or (after a space) ``.`` among them and longer than one character, becomes that one mark
   (or one space): ``536 - 22 - 1234`` → ``536-22-1234``, ``536  22  1234`` → ``536 22 1234``;
   then a run of 9 or more single digits each after one space (``5 3 6 2 2 1 2 3 4``, digits
   typed one by one) loses its spaces (``536221234``): 9 is the shortest id written that way
   (SSN, SIN, TFN); shorter runs (``rated 4 5 5 out of 5``) are lists of small numbers, and
   a run next to another number (``1 2 3 4 5 6 7 8 9 10``) is a count.

So a spaced form is masked exactly when its compact form is, and as the same kind. A date
``2024 - 05 - 01`` is a date like ``2024-05-01`` (left alone); ``3 - 4 people`` stays (no
detector takes ``3-4``). Not gaps: tabs and line breaks (columns and lines, not digit groups),
two marks (``12 -- 34``), and gaps between two letters (prose).
"""

from __future__ import annotations

import re
import unicodedata

_SPACES = frozenset("\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000")
_DASHES = frozenset("\u2010\u2011\u2012\u2013\u2014\u2015\u2212\u2e3a\u2e3b\ufe31\ufe32\ufe58\ufe63")
_LONG_MARKS = frozenset("\u30fc\uff70_")  # ー typed as a dash between digits (03ー1234ー5678), and _
_INVISIBLE = frozenset("\u00ad\u200b\u200c\u200d\u2060\ufeff")
# a dot needs a space before it: "1987. 12345" ends a sentence, "1234 . 5678" is one number
# a spelled id stands alone: "1 2 … 9 10" is a count, its run is not glued to the next number
_SPELLED = re.compile(r"(?<![0-9A-Za-z])(?<![0-9] )[0-9](?: [0-9]){8,}(?![0-9A-Za-z])(?! [0-9])", re.ASCII)
_GAP = re.compile(r"(?<=[A-Za-z0-9])(?: {2,}| *[-/] *| +\. *)(?=[A-Za-z0-9])", re.ASCII)


def _digit_beside(text: str, i: int, step: int) -> bool:
    """Whether the nearest character from ``i`` in direction ``step`` that is not a space is a digit."""
    i += step
    while 0 <= i < len(text) and (text[i] == " " or text[i] in _SPACES):
        i += step
    return 0 <= i < len(text) and unicodedata.decimal(text[i], None) is not None


def fold(text: str) -> str:
    """``text`` with the same length, digits, letters, spaces and dashes normalised for detection.

    Unicode decimal digits → ASCII digits; full-width ASCII forms (U+FF01–FF5E) → ASCII;
    no-break, thin and ideographic spaces → space; Unicode hyphens, dashes and minus → ``-``;
    ``ー`` with a digit on each side (spaces aside) → ``-``. Every other character is kept, so
    offsets into the result are offsets into ``text``.
    """
    if text.isascii() and "_" not in text:
        return text
    out = list(text)
    for i, ch in enumerate(text):
        if ch < "\x80" and ch != "_":
            continue
        digit = unicodedata.decimal(ch, None)
        if digit is not None:
            out[i] = str(digit)
        elif "\uff01" <= ch <= "\uff5e":
            out[i] = chr(ord(ch) - 0xFEE0)
        elif ch in _SPACES:
            out[i] = " "
        elif ch in _DASHES or (ch in _LONG_MARKS and _digit_beside(text, i, -1) and _digit_beside(text, i, 1)):
            out[i] = "-"
    return "".join(out)


def compact(folded: str) -> tuple[str, list[int]]:
    """``(compact text, offsets)`` of a folded text (module doc, step 2).

    ``offsets[i]`` is the index in ``folded`` of the compact text's character ``i``, so a span
    ``(s, e)`` of the compact text is ``(offsets[s], offsets[e - 1] + 1)`` of ``folded`` (and of
    the caller's text, which :func:`fold` keeps aligned). Text without gaps or invisible
    characters comes back as is, with the identity map.
    """
    keep = [i for i, ch in enumerate(folded) if ch not in _INVISIBLE]
    visible = "".join(folded[i] for i in keep)
    chars: list[str] = []
    offsets: list[int] = []
    pos = 0
    for m in _GAP.finditer(visible):
        gap = m.group(0)
        if not (visible[m.start() - 1].isdigit() or visible[m.end()].isdigit()):
            continue  # between two letters: prose, not a digit group
        mark = gap.strip() or " "
        chars.append(visible[pos : m.start()])
        offsets.extend(keep[pos : m.start()])
        chars.append(mark)
        offsets.append(keep[m.start() + (gap.index(mark) if mark != " " else 0)])
        pos = m.end()
    chars.append(visible[pos:])
    offsets.extend(keep[pos:])
    gapped = "".join(chars)
    drop = {m.start() + i for m in _SPELLED.finditer(gapped) for i in range(1, m.end() - m.start(), 2)}
    if not drop:
        return gapped, offsets
    return "".join(c for i, c in enumerate(gapped) if i not in drop), [
        o for i, o in enumerate(offsets) if i not in drop
    ]
