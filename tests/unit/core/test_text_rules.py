"""app.core.text_rules: one rule set per kind of text input (names, identifiers, paths, free text)."""

from __future__ import annotations

import pytest

from cairn.app.core.errors import BadInput
from cairn.app.core.text_rules import require_storable, validate_identifier, validate_name, validate_path, validate_text
from cairn.app.decisions.body import DecisionInputError

ONE_LINE_BAD = [
    "\x00",
    "\x01",
    "\t",
    "\n",
    "\r",
    "\x1b",
    "\x7f",
    "\x85",
    "\x9f",
    "\u2028",
    "\u2029",
    "\u202a",
    "\u202e",
    "\u2066",
    "\u2069",
    "\u200e",
    "\u200f",
    "\u061c",
    "\ud800",
    "\udfff",
]


@pytest.mark.parametrize("ch", ONE_LINE_BAD)
@pytest.mark.parametrize("check", [validate_name, validate_identifier, validate_path])
def test_one_line_kinds_refuse_controls_bidi_and_surrogates_naming_code_point_and_offset(check, ch):
    with pytest.raises(BadInput) as e:
        check("ab" + ch + "c", "input.name", 100) if check is not validate_path else check(
            "ab" + ch + "c", "input.name"
        )
    assert e.value.code == "BAD_USER_INPUT" and e.value.http_status == 400
    assert e.value.extra["field"] == "input.name"
    assert f"U+{ord(ch):04X} at offset 2" in e.value.message and e.value.message.startswith("input.name ")


@pytest.mark.parametrize("value", ["東京の資料", "数据库 📚", "family 👨\u200d👩\u200d👧", "naïve café", "a b", "x"])
def test_names_in_any_script_with_emoji_and_joiners_pass(value):
    assert validate_name(value, "name", 120) == value
    assert validate_identifier(value, "id", 64) == value


@pytest.mark.parametrize("value", [" lead", "trail ", "\u3000full-width space"])
def test_names_refuse_surrounding_whitespace(value):
    with pytest.raises(BadInput, match="start or end with whitespace"):
        validate_name(value, "name", 120)


@pytest.mark.parametrize("value,min_len,max_len", [("", 1, 10), ("x" * 11, 1, 10), ("abc", 4, 10)])
def test_lengths_name_the_limit(value, min_len, max_len):
    with pytest.raises(BadInput) as e:
        validate_name(value, "title", max_len, min_len=min_len)
    assert e.value.extra == {"field": "title", "limit": f"{min_len}-{max_len}"}
    assert f"{min_len}–{max_len} characters (got {len(value)})" in e.value.message


def test_empty_title_allowed_when_min_len_is_zero():
    assert validate_name("", "input.title", 1000, min_len=0) == ""


def test_non_strings_are_refused():
    with pytest.raises(BadInput, match="must be a string, not int"):
        validate_identifier(5, "id")


def test_paths_allow_spaces_and_unicode_but_not_over_the_limit():
    assert validate_path("/data/my docs/東京.txt ", "path") == "/data/my docs/東京.txt "
    with pytest.raises(BadInput) as e:
        validate_path("/" * 4097, "path")
    assert e.value.extra["limit"] == "1-4096"


def test_free_text_allows_tab_newline_cr_and_rtl_marks_but_not_other_controls():
    ok = "line one\r\nline two\tcol — שלום\u200f עולם"
    assert validate_text(ok, "input.text", 1000) == ok
    for ch in ("\x00", "\x0b", "\x1b", "\x7f", "\x85", "\u202e", "\u2067", "\ud800"):
        with pytest.raises(BadInput, match=f"U\\+{ord(ch):04X} at offset 1"):
            validate_text("a" + ch, "input.text", 1000)


def test_storable_refuses_only_nul_and_surrogates():
    assert require_storable("ESC \x1b and \u202e stay in stored bodies", "input.text")
    for ch in ("\x00", "\udc00"):
        with pytest.raises(BadInput, match=f"U\\+{ord(ch):04X} at offset 3"):
            require_storable("abc" + ch, "input.text")


def test_error_factory_keeps_the_callers_code():
    with pytest.raises(DecisionInputError) as e:
        validate_identifier("s\x00", "sessionId", 256, error=DecisionInputError)
    assert e.value.code == "invalid_decision_input" and e.value.extra["field"] == "sessionId"
