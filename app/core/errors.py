"""The CairnError hierarchy: one stable ``code`` and HTTP status per class, mapped to
``extensions.code`` by :func:`to_response`.

Codes are SPEC codes where the SPEC names one, otherwise Apollo's conventional
``BAD_USER_INPUT``, ``UNAUTHENTICATED``, ``FORBIDDEN``, ``NOT_FOUND``. ``http_status`` is
used by the HTTP routes and by GraphQL-over-HTTP when every root field failed the same way.
Each package declares its errors as subclasses (``app/<package>/errors.py`` or next to the
code raising them) with ``code`` and ``http_status`` as class attributes.
"""

from __future__ import annotations

import functools
from typing import Any, ClassVar

INTERNAL_CODE = "INTERNAL_SERVER_ERROR"


class CairnError(Exception):
    """Base of every error a client may see.

    Subclasses fix ``code`` (stable machine code, ``extensions.code``) and ``http_status``
    (for routes that map errors to statuses) as class attributes.

    Args:
        message: What went wrong and what to change, naming the field and the limit.
        code: Transitional: a more specific SPEC code for this one error (a few
            ``Forbidden``/``Rejected`` call sites not yet given their own subclass); new code
            declares a subclass instead.
        extra: More ``extensions`` members (e.g. ``field``, ``limit``, ``retryAfter``); None
            values are dropped.

    Raises:
        TypeError: ``http_status=`` passed (it is fixed per class).
    """

    code: ClassVar[str] = INTERNAL_CODE
    http_status: ClassVar[int] = 500

    def __init__(self, message: str, *, code: str | None = None, **extra: Any) -> None:
        if "http_status" in extra:  # would otherwise become an extensions member silently
            raise TypeError(f"{type(self).__name__}: the HTTP status is a class attribute; declare a subclass")
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code  # type: ignore[misc]  # the transitional per-error refinement
        self.extra = {k: v for k, v in extra.items() if v is not None}

    def extensions(self) -> dict[str, Any]:
        """The ``extensions`` object of the GraphQL error (without the envelope)."""
        return {"code": self.code, **self.extra}


def to_response(exc: BaseException) -> tuple[int, dict[str, Any]]:
    """The one mapping of an exception to what a client sees: ``(HTTP status, extensions)``.

    A :class:`CairnError` gives its class's ``http_status`` and ``{"code": …, **extra}``;
    anything else is ``(500, {"code": "INTERNAL_SERVER_ERROR"})`` (details stay in the log).
    Used by GraphQL errors (``to_graphql_error``) and the enveloped HTTP errors alike.
    """
    if isinstance(exc, CairnError):
        return exc.http_status, exc.extensions()
    return 500, {"code": INTERNAL_CODE}


@functools.cache
def error_class(code: str, http_status: int) -> type[CairnError]:
    """A CairnError class for a code and status known only at run time.

    For errors read back from storage (a replayed decision failure) and for statuses produced
    by the web framework (404/405 on unknown routes): the first declared subclass with exactly
    this code and status, else a new subclass made once per pair.
    """
    pending: list[type[CairnError]] = [CairnError]
    while pending:
        cls = pending.pop(0)
        if cls.code == code and cls.http_status == http_status:
            return cls
        pending.extend(cls.__subclasses__())
    name = "".join(part.capitalize() for part in code.lower().split("_")) or "Error"
    return type(f"{name}{http_status}", (CairnError,), {"code": code, "http_status": http_status, "__doc__": code})


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


class AgentCredentialAuthorityLost(Forbidden):
    """The member who created an agent credential no longer holds what the call needs, or left
    the workspace (403 ``AGENT_CREDENTIAL_AUTHORITY_LOST``)."""

    code = "AGENT_CREDENTIAL_AUTHORITY_LOST"


class NonRetainingWorkspace(Forbidden):
    """The workspace keeps no history, so no sessions or memories (403 ``NON_RETAINING_WORKSPACE``)."""

    code = "NON_RETAINING_WORKSPACE"


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
