"""Script detection (retrieval/language.py): the share of non-Latin letters, exactly as defined —
letters are ``str.isalpha`` characters, Latin letters those of them whose Unicode ``Script`` is
Latin — and the routing it gives (issue 18: every non-Latin script goes to the multilingual model)."""

from __future__ import annotations

import random
import unicodedata

import pytest

from cairn.retrieval.language import (
    NON_LATIN_MIN_SHARE,
    identify_language,
    is_non_latin,
    is_other_language,
    non_latin_share,
    passage_is_multilingual,
)


def is_latin_letter(ch: str) -> bool:
    """Reference for one character: a letter whose Unicode name says LATIN (the Latin script's
    letters are so named, plus the ordinal indicators ª º)."""
    return ch.isalpha() and (unicodedata.name(ch, "").startswith("LATIN") or ch in "ªº")


def reference(text: str) -> float:
    """The definition, one character at a time."""
    letters = [ch for ch in text if ch.isalpha()]
    other = [ch for ch in letters if not is_latin_letter(ch)]
    return len(other) / len(letters) if letters else 0.0


@pytest.mark.parametrize(
    ("text", "share"),
    [
        ("", 0.0),
        ("123 !?", 0.0),
        ("Glaciers carve moraines", 0.0),
        ("Ça coûte cher, Đà Nẵng", 0.0),  # Latin with diacritics (French, Vietnamese) stays Latin
        ("東京", 1.0),
        ("ReactのuseEffect", 1 / 15),
        ("〇〇 ok", 0.0),  # 〇 (U+3007) is a number (Nl), not a letter: it does not count at all
        ("ｱｲ ab", 0.5),  # half-width katakana
        ("𠀋 x", 0.5),  # extension B, outside the BMP
        ("한국어 text", 3 / 7),
        ("Москва", 1.0),
        ("β-cells in mice", 1 / 12),  # a Greek letter in English science
        ("हिन्दी", 1.0),  # the vowel signs and the virama are marks, not letters: ह न द count
        ("ภาษาไทย", 1.0),
        ("مرحبا بالعالم", 1.0),
    ],
)
def test_share_of_non_latin_letters(text, share):
    assert non_latin_share(text) == pytest.approx(share)


def test_equal_to_the_definition_on_random_mixed_text():
    rng = random.Random(18)
    blocks = [(0x20, 0x250), (0x370, 0x3FF), (0x400, 0x4FF), (0x590, 0x5FF), (0x600, 0x6FF), (0x900, 0x97F)]
    blocks += [
        (0xE00, 0xE7F),
        (0x1E00, 0x1EFF),
        (0x3040, 0x30FF),
        (0x4E00, 0x4E80),
        (0xAC00, 0xAC40),
        (0x20000, 0x20040),
    ]
    pool = [chr(c) for lo, hi in blocks for c in range(lo, hi)]
    for _ in range(2000):
        text = "".join(rng.choice(pool) for _ in range(rng.randint(0, 50)))
        assert non_latin_share(text) == pytest.approx(reference(text)), text
        assert is_non_latin(text) == (reference(text) >= NON_LATIN_MIN_SHARE)


@pytest.mark.parametrize(
    ("text", "routed"),
    [
        ("How do glaciers carve moraines?", False),
        ("Где находится самая глубокая точка озера Байкал?", True),
        ("ピアノのコンクールは？", True),
        ("ताजमहल किसने बनवाया था?", True),
        ("Which English translation of «Война и мир» by Leo Tolstoy is the most faithful?", False),  # a quoted title
        ("Qui a écrit Les Misérables ?", False),  # Latin-script French: MiniLM (module doc)
    ],
)
def test_routing(text, routed):
    assert is_non_latin(text) is routed


def test_refuses_a_non_string():
    with pytest.raises(TypeError, match="str"):
        non_latin_share(b"bytes")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "other"),
    [
        ("Le Danube est le deuxième plus long fleuve d'Europe ; il se jette dans la mer Noire.", True),
        ("Voleybol 1895 yılında William Morgan tarafından Amerika'da icat edildi.", True),
        ("Sông Volga là con sông dài nhất châu Âu, chảy vào biển Caspi.", True),
        ("Die Wolga ist der längste Fluss Europas und mündet ins Kaspische Meer.", True),
        # English of the kinds measured (an abstract, a chat turn, a contract) stays English
        ("Migratory dendritic cells transfer antigen to a lymph node-resident dendritic cell population.", False),
        ("Joanna: See ya Nate! Catch you later at the game.", False),
        ("MUTUAL NON-DISCLOSURE AGREEMENT This Mutual Non-Disclosure Agreement is dated as of 31st January", False),
        ("E4471-QX 2024 Lot 7", False),  # too few letters to tell: stays with the primary model
    ],
)
def test_latin_script_passages_in_other_languages(text, other):
    assert is_other_language(text) is other
    assert passage_is_multilingual(text) is other


def test_identify_language_names_the_language_with_its_probability():
    language, probability = identify_language("Qui a écrit Les Misérables et Notre-Dame de Paris ?")
    assert language == "fr" and 0.9 <= probability <= 1.0
    assert passage_is_multilingual("Москва — столица России") and not is_other_language("x" * 5)
    with pytest.raises(TypeError, match="str"):
        identify_language(None)  # type: ignore[arg-type]
