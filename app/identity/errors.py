"""Identity's errors (members, agent credentials): one class per code, each with its HTTP status."""

from __future__ import annotations

from cairn.app.core.errors import Conflict, Unauthenticated


class AgentCredentialRevoked(Unauthenticated):
    """The agent credential was revoked (401 ``AGENT_CREDENTIAL_REVOKED``)."""

    code = "AGENT_CREDENTIAL_REVOKED"


class AgentCredentialExpired(Unauthenticated):
    """The agent credential is past its expiry (401 ``AGENT_CREDENTIAL_EXPIRED``)."""

    code = "AGENT_CREDENTIAL_EXPIRED"


class AgentCredentialLimit(Conflict):
    """The workspace has the most active agent credentials allowed (409 ``AGENT_CREDENTIAL_LIMIT``, ``limit``)."""

    code = "AGENT_CREDENTIAL_LIMIT"


class LastOwner(Conflict):
    """The workspace's only owner cannot leave or step down (409 ``LAST_OWNER``)."""

    code = "LAST_OWNER"
