"""The CairnError hierarchy: one stable ``code`` each, mapped to ``extensions.code``.

Codes are SPEC codes where the SPEC names one, otherwise Apollo's conventional
``BAD_USER_INPUT``, ``UNAUTHENTICATED``, ``FORBIDDEN``, ``NOT_FOUND``. ``http_status`` is
used by the HTTP routes and by GraphQL-over-HTTP when every root field failed the same way.
"""

from __future__ import annotations

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


class ContextSetScopeRefused(Forbidden):
    """A read outside the context set a credential is bound to (403 ``AGENT_CONTEXT_SET_SCOPE_REFUSED``).

    Raised for a document, collection, filter or context set outside the bound set's scope;
    the message names the field and the bound set.
    """

    code = "AGENT_CONTEXT_SET_SCOPE_REFUSED"


class ContextSetInactive(Forbidden):
    """The context set is deactivated (or gone) (403 ``AGENT_CONTEXT_SET_INACTIVE``).

    A credential bound to such a set is refused on every call (its scope never widens); a
    pack or library read naming an inactive set is refused the same way.
    """

    code = "AGENT_CONTEXT_SET_INACTIVE"
