"""The CairnError hierarchy: one stable ``code`` each, mapped to ``extensions.code``.

Codes are SPEC codes where the SPEC names one, otherwise Apollo's conventional
``BAD_USER_INPUT``, ``UNAUTHENTICATED``, ``FORBIDDEN``, ``NOT_FOUND``. ``http_status`` is
used by the HTTP routes and by GraphQL-over-HTTP when every root field failed the same way.
"""

from __future__ import annotations

import re
from typing import Any


class CairnError(Exception):
    """Base of every error a client may see.

    Args:
        message: What went wrong and what to change, naming the field and the limit.
        code: Stable machine code (``extensions.code``).
        http_status: HTTP status for routes that map errors to statuses.
        extra: More ``extensions`` members (e.g. ``field``, ``limit``, ``retryAfter``).
    """

    code = "INTERNAL_SERVER_ERROR"
    http_status = 500

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        http_status: int | None = None,
        **extra: Any,
    ) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        if http_status is not None:
            self.http_status = http_status
        self.extra = {k: v for k, v in extra.items() if v is not None}

    def extensions(self) -> dict[str, Any]:
        """The ``extensions`` object of the GraphQL error (without the envelope)."""
        return {"code": self.code, **self.extra}


class BadInput(CairnError):
    """Input outside a documented limit or shape (400 ``BAD_USER_INPUT``).

    Pass ``field=`` (the GraphQL input path, e.g. ``input.budget.maxTokens``) and, where one
    applies, ``limit=`` so clients can fix the call mechanically.
    """

    code = "BAD_USER_INPUT"
    http_status = 400


def require_text(value: str, field: str) -> None:
    """Refuse strings that cannot be stored as text: lone surrogates and NUL (U+0000, which
    PostgreSQL text columns cannot hold).

    Raises:
        BadInput: naming ``field``.
    """
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise BadInput(f"{field} contains an unpaired surrogate code point; send valid UTF-8 text",
                       field=field) from None
    if "\x00" in value:
        raise BadInput(f"{field} contains a NUL character (U+0000); remove it", field=field)


_CONTROLS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_CONTROLS_ONE_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def require_clean_text(value: str, field: str, *, multiline: bool) -> None:
    """:func:`require_text`, and no control characters (C0, C1) or bidirectional overrides
    (U+202A–U+202E, U+2066–U+2069), which can hide or reorder what a reader sees; a
    ``multiline`` value may hold tab, line feed and carriage return.

    Raises:
        BadInput: naming ``field`` and the first offending code point.
    """
    require_text(value, field)
    m = (_CONTROLS if multiline else _CONTROLS_ONE_LINE).search(value)
    if m:
        allowed = " (tab, line feed and carriage return are allowed)" if multiline else ""
        raise BadInput(f"{field} contains the control character U+{ord(m.group()):04X} at offset {m.start()}; "
                       f"remove it{allowed}", field=field)


class Unauthenticated(CairnError):
    """No credential, or one that does not parse or match (401)."""

    code = "UNAUTHENTICATED"
    http_status = 401


class Forbidden(CairnError):
    """Authenticated, but not allowed (403); specific SPEC codes override ``code``."""

    code = "FORBIDDEN"
    http_status = 403


class NotFound(CairnError):
    """The thing does not exist in the caller's workspace (404)."""

    code = "NOT_FOUND"
    http_status = 404


class Conflict(CairnError):
    """The request conflicts with current state (409)."""

    code = "CONFLICT"
    http_status = 409


class Gone(CairnError):
    """The thing existed but has expired (410)."""

    code = "GONE"
    http_status = 410


class PackIncomplete(CairnError):
    """``coverage: REQUIRE_COMPLETE`` could not be met (422 ``CONTEXT_PACK_INCOMPLETE``)."""

    code = "CONTEXT_PACK_INCOMPLETE"
    http_status = 422
