"""One set of rules for every text input, by kind: names, identifiers, paths and free text.

Why: PostgreSQL ``text`` cannot store or compare NUL (U+0000), the OS refuses it in paths, and
control characters (C0, C1, DEL) and bidirectional controls hide or reorder what a reader of a
member, credential, collection, session or network name sees. Every resolver, service, CLI
command and HTTP route calls one of these before the value reaches storage or a lookup.

Kinds:

* :func:`validate_name` — names and titles: no C0/C1 controls (newline, tab, ESC, DEL
  included), no line/paragraph separators, no bidi controls (U+202A–U+202E, U+2066–U+2069,
  U+200E, U+200F, U+061C), no lone surrogates, no leading/trailing whitespace,
  ``min_len..max_len`` characters.
* :func:`validate_identifier` — ids and external ids (looked up or stored): the name rules.
* :func:`validate_path` — file-system paths: no NUL, no controls or bidi controls.
* :func:`validate_text` — free text: tab, line feed and carriage return allowed; other
  controls and bidi embeddings/overrides/isolates refused.
* :func:`require_storable` — bodies stored as is (document text, pack tasks): only what
  cannot be stored (NUL, lone surrogates) is refused.

Every function raises a coded 400 (``BAD_USER_INPUT`` unless ``error`` builds another
:class:`~app.core.errors.CairnError`) whose message names the field and either the code point
(``U+XXXX``) and its offset, or the limit; ``extensions.field`` and ``extensions.limit`` are set.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from cairn.app.core.errors import BadInput, CairnError

ErrorFactory = Callable[..., CairnError]
"""Builds the error: ``error(message, field=..., limit=...)`` (default :class:`BadInput`)."""

_SURROGATES = "\ud800-\udfff"
_BIDI = "\u200e\u200f\u061c\u202a-\u202e\u2066-\u2069"
_BIDI_EMBEDDINGS = "\u202a-\u202e\u2066-\u2069"
_ONE_LINE = re.compile(f"[\x00-\x1f\x7f-\x9f\u2028\u2029{_BIDI}{_SURROGATES}]")
_MULTILINE = re.compile(f"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f{_BIDI_EMBEDDINGS}{_SURROGATES}]")
_STORABLE = re.compile(f"[\x00{_SURROGATES}]")


def _describe(ch: str) -> str:
    o = ord(ch)
    if o == 0:
        return "the NUL character U+0000"
    if 0xD800 <= o <= 0xDFFF:
        return f"an unpaired surrogate U+{o:04X}"
    if o < 0x20 or 0x7F <= o <= 0x9F or o in (0x2028, 0x2029):
        return f"the control character U+{o:04X}"
    return f"the bidirectional control character U+{o:04X}"


def _scan(value: str, field: str, pattern: re.Pattern[str], error: ErrorFactory, note: str = "") -> None:
    m = pattern.search(value)
    if m:
        raise error(f"{field} contains {_describe(m.group())} at offset {m.start()}; remove it{note}", field=field)


def _string(value: Any, field: str, error: ErrorFactory) -> str:
    if not isinstance(value, str):
        raise error(f"{field} must be a string, not {type(value).__name__}", field=field)
    return value


def _length(value: str, field: str, min_len: int, max_len: int, error: ErrorFactory, what: str) -> None:
    if not min_len <= len(value) <= max_len:
        raise error(
            f"{field} must be {min_len}–{max_len} {what} (got {len(value)})", field=field, limit=f"{min_len}-{max_len}"
        )


def validate_name(value: Any, field: str, max_len: int, *, min_len: int = 1, error: ErrorFactory = BadInput) -> str:
    """A name or title: one line of visible text, ``min_len..max_len`` characters (code points).

    Returns:
        ``value`` unchanged.

    Raises:
        BadInput (or ``error``): not a string, length outside the limit, leading/trailing
            whitespace, or a control / bidi / surrogate code point (named with its offset).
    """
    value = _string(value, field, error)
    _length(value, field, min_len, max_len, error, "characters")
    _scan(value, field, _ONE_LINE, error)
    if value != value.strip():
        raise error(f"{field} must not start or end with whitespace", field=field)
    return value


def validate_identifier(value: Any, field: str, max_len: int = 64, *, error: ErrorFactory = BadInput) -> str:
    """An id or external id (stored, or looked up): the :func:`validate_name` rules, 1..``max_len``.

    Checked before any lookup so that a NUL never reaches PostgreSQL (which cannot compare it).

    Raises:
        BadInput (or ``error``): as :func:`validate_name`.
    """
    return validate_name(value, field, max_len, error=error)


def validate_path(value: Any, field: str, max_len: int = 4096, *, error: ErrorFactory = BadInput) -> str:
    """A file-system path: 1..``max_len`` characters, no NUL, controls or bidi controls.

    Raises:
        BadInput (or ``error``): naming the code point and offset, or the limit.
    """
    value = _string(value, field, error)
    _length(value, field, 1, max_len, error, "characters")
    _scan(value, field, _ONE_LINE, error)
    return value


def validate_text(value: Any, field: str, max_len: int, *, min_len: int = 1, error: ErrorFactory = BadInput) -> str:
    """Free text: tab, line feed and carriage return allowed; other C0/C1 controls, DEL, bidi
    embeddings/overrides/isolates (U+202A–U+202E, U+2066–U+2069), NUL and lone surrogates refused.

    Raises:
        BadInput (or ``error``): naming the code point and offset, or the limit.
    """
    value = _string(value, field, error)
    _length(value, field, min_len, max_len, error, "characters")
    _scan(value, field, _MULTILINE, error, " (tab, line feed and carriage return are allowed)")
    return value


def require_storable(value: Any, field: str, *, error: ErrorFactory = BadInput) -> str:
    """Text stored as is (document bodies, pack tasks): refuses only NUL (PostgreSQL ``text``
    cannot hold it) and lone surrogates (not encodable as UTF-8).

    Raises:
        BadInput (or ``error``): naming the code point and offset.
    """
    value = _string(value, field, error)
    _scan(value, field, _STORABLE, error)
    return value
