"""Governance's errors beyond the shared ones in :mod:`app.core.errors`: one class per code."""

from __future__ import annotations

from cairn.app.core.errors import Forbidden


class AgentBrowserRequestRefused(Forbidden):
    """An agent credential presented by a browser (403 ``AGENT_BROWSER_REQUEST_REFUSED``)."""

    code = "AGENT_BROWSER_REQUEST_REFUSED"


class AgentScopeMissing(Forbidden):
    """The agent credential lacks the operation's scope (403 ``AGENT_SCOPE_MISSING``, ``scope``)."""

    code = "AGENT_SCOPE_MISSING"
