"""Context-gap errors: one :class:`~app.core.errors.BadInput` subclass per code (400)."""

from __future__ import annotations

from cairn.app.core.errors import BadInput, Conflict


class ContextGapTextTooLong(BadInput):
    """``task`` over 4,000 or ``missing`` over 2,000 characters (400 ``CONTEXT_GAP_TEXT_TOO_LONG``,
    ``field``, ``limit``)."""

    code = "CONTEXT_GAP_TEXT_TOO_LONG"


class ContextGapPageSizeOutOfRange(BadInput):
    """``first`` outside 1–200 (400 ``PAGE_SIZE_OUT_OF_RANGE``, ``field``, ``limit``)."""

    code = "PAGE_SIZE_OUT_OF_RANGE"


class ContextGapCursorInvalid(BadInput):
    """An ``after`` cursor not issued by ``contextGaps`` (400 ``INVALID_CURSOR``, field ``after``)."""

    code = "INVALID_CURSOR"


class ContextGapResolved(Conflict):
    """The gap was already resolved or dismissed (409 ``CONTEXT_GAP_RESOLVED``, field ``id``)."""

    code = "CONTEXT_GAP_RESOLVED"
