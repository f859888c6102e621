"""Context sets' errors: one class per code, each with its HTTP status.

The scope refusals shared with other packages (``AGENT_CONTEXT_SET_SCOPE_REFUSED``,
``AGENT_CONTEXT_SET_INACTIVE``) live in :mod:`app.core.errors` and are re-exported here.
"""

from __future__ import annotations

from cairn.app.core.errors import Conflict, ContextSetInactive, ContextSetScopeRefused

__all__ = ["ContextSetInactive", "ContextSetLimit", "ContextSetNameTaken", "ContextSetScopeRefused"]


class ContextSetLimit(Conflict):
    """The workspace holds the most context sets allowed (409 ``CONTEXT_SET_LIMIT``, ``limit``)."""

    code = "CONTEXT_SET_LIMIT"


class ContextSetNameTaken(Conflict):
    """Another context set of the workspace has that name (409 ``CONTEXT_SET_NAME_TAKEN``, ``field``)."""

    code = "CONTEXT_SET_NAME_TAKEN"
