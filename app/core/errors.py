"""The CairnError hierarchy: one stable ``code`` and HTTP status per class, mapped to
``extensions.code`` by :func:`to_response`.

Codes are SPEC codes where the SPEC names one, otherwise Apollo's conventional
``BAD_USER_INPUT``, ``UNAUTHENTICATED``, ``FORBIDDEN``, ``NOT_FOUND``. ``http_status`` is
used by the HTTP routes and by GraphQL-over-HTTP when every root field failed the same way.
Each package declares its errors as subclasses (``app/<package>/errors.py`` or next to the
code raising them) with ``code`` and ``http_status`` as class attributes.

Outages are declared here, as every package may meet them: ``STORAGE_FULL`` and
``DATABASE_UNAVAILABLE`` (503 with ``retryAfter``), recognised in any exception's chain by
:func:`outage_of` (the rule is :mod:`app.core.outages`), so :func:`to_response` maps a full
disk or a stopped database the same way on every transport.
"""

from __future__ import annotations

import functools
from typing import Any, ClassVar

from cairn.app.core.outages import chain, recognise

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

    A :class:`CairnError` gives its class's ``http_status`` and ``{"code": …, **extra}``; a
    storage or database outage anywhere in the exception's chain gives its 503 error
    (:func:`as_cairn_error`); anything else is ``(500, {"code": "INTERNAL_SERVER_ERROR"})``
    (details stay in the log). Used by GraphQL errors (``to_graphql_error``) and the enveloped
    HTTP errors alike.
    """
    known = as_cairn_error(exc)
    if known is not None:
        return known.http_status, known.extensions()
    return 500, {"code": INTERNAL_CODE}


def as_cairn_error(exc: BaseException) -> CairnError | None:
    """``exc`` itself when it is a :class:`CairnError`; the 503 ``STORAGE_FULL`` or
    ``DATABASE_UNAVAILABLE`` it stands for (:func:`outage_of`); else None."""
    if isinstance(exc, CairnError):
        return exc
    return outage_of(exc)


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


DATABASE_RETRY_AFTER_SECONDS = 2
"""``Retry-After`` of ``DATABASE_UNAVAILABLE``: a restarted PostgreSQL was answering again
within 4 s (issue 32), and pooled connections are re-checked before use (``pool_pre_ping``)."""

STORAGE_RETRY_AFTER_SECONDS = 30
"""``Retry-After`` of ``STORAGE_FULL``: space comes back by an operator's hand, not in seconds."""


class StorageFull(CairnError):
    """A write found its volume full, over quota or read-only (503 ``STORAGE_FULL``).

    ``extensions.retryAfter`` (seconds) is also sent as ``Retry-After``. Writes succeed again,
    without a restart, once space is freed; ``/readyz`` answers 503 meanwhile.
    """

    code = "STORAGE_FULL"
    http_status = 503


class DatabaseUnavailable(CairnError):
    """The database cannot be reached, or the connection was lost mid-call (503 ``DATABASE_UNAVAILABLE``).

    ``extensions.retryAfter`` (seconds) is also sent as ``Retry-After``; ``/readyz`` answers
    503 until the database answers again.
    """

    code = "DATABASE_UNAVAILABLE"
    http_status = 503


def storage_full(detail: str) -> StorageFull:
    """The :class:`StorageFull` error for ``detail`` (what failed), with what to do."""
    return StorageFull(
        f"storage full: {detail}; free space on the data volume (or raise its quota), then retry — no restart needed",
        retryAfter=STORAGE_RETRY_AFTER_SECONDS,
    )


def database_unavailable(detail: str) -> DatabaseUnavailable:
    """The :class:`DatabaseUnavailable` error for ``detail`` (what failed), with what to do."""
    return DatabaseUnavailable(
        f"the database is unavailable: {detail}; retry after a few seconds (check that the database server runs)",
        retryAfter=DATABASE_RETRY_AFTER_SECONDS,
    )


def outage_of(exc: BaseException, *, from_database: bool = False, disconnect: bool = False) -> CairnError | None:
    """The coded outage error ``exc`` stands for (:func:`app.core.outages.recognise`, whose
    arguments these are): a :class:`StorageFull` or :class:`DatabaseUnavailable` already in its
    chain, else one made from what failed; None when it is no outage."""
    for e in chain(exc):
        if isinstance(e, StorageFull | DatabaseUnavailable):
            return e
    found = recognise(exc, from_database=from_database, disconnect=disconnect)
    if found is None:
        return None
    kind, detail = found
    return storage_full(detail) if kind == "storage" else database_unavailable(detail)
