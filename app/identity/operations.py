"""Identity services: one function per operation, ``fn(services, principal, request)``.

Each opens and commits its own session and returns domain objects (never a secret except the
token of a just-issued credential or member, once). The session-level rules live in
:mod:`app.identity.service` and :mod:`app.identity.credential_state`.

``services`` is the process's :class:`app.context.Services` (not imported: ``app.context``
imports this package).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from cairn.app.core.models import AgentCredential, Member
from cairn.app.governance import Principal, ServicesPort, capabilities_for_scopes
from cairn.app.identity import service as identity
from cairn.app.identity.authentication import describe_principal
from cairn.app.identity.credential_state import CredentialState, credential_states

_DEFAULT_SCOPES = frozenset({"context:read", "queries:run", "replay:run"})


@dataclass(frozen=True)
class MemberInfo:
    """A member as callers see it (never the token)."""

    id: str
    name: str
    role: str
    created_at: datetime

    @classmethod
    def of(cls, m: Member) -> MemberInfo:
        """From a member row."""
        return cls(m.id, m.name, m.role, m.created_at)


@dataclass(frozen=True)
class NewMemberInfo:
    """A member just added, with its token (shown once)."""

    member: MemberInfo
    token: str


@dataclass(frozen=True)
class CredentialView:
    """An agent credential row (never its secret) and its current :class:`CredentialState`."""

    credential: AgentCredential
    state: CredentialState


@dataclass(frozen=True)
class NewCredential:
    """A credential just created, with its token (shown once)."""

    view: CredentialView
    token: str


@dataclass(frozen=True)
class CredentialRequest:
    """Create an agent credential (rules: :func:`app.identity.service.create_credential`).

    ``scopes`` ``None``: the defaults; ``profile`` holds only the lists given (camelCase keys).
    """

    name: str
    expires_in_days: int
    scopes: tuple[str, ...] | None = None
    context_set_id: str | None = None
    profile: dict[str, Any] | None = None


async def viewer_names(services: ServicesPort, principal: Principal) -> tuple[str, str]:
    """``(workspace name, display name)`` of the caller: the member's name, or the agent credential's.

    Raises:
        NotFound: the workspace, member or credential row is gone (see :func:`app.identity.authentication.describe_principal`).
    """
    async with services.db.session() as s:
        return await describe_principal(s, principal)


async def workspace_members(services: ServicesPort, principal: Principal) -> list[MemberInfo]:
    """Members of the caller's workspace."""
    async with services.db.session() as s:
        rows = await identity.list_members(s, workspace_id=principal.workspace_id)
    return [MemberInfo.of(m) for m in rows]


async def workspace_credentials(services: ServicesPort, principal: Principal) -> list[CredentialView]:
    """Agent credentials of the caller's workspace with their states."""
    async with services.db.session() as s:
        rows = await identity.list_credentials(s, workspace_id=principal.workspace_id)
        states = await credential_states(s, rows)
    return [CredentialView(c, states[c.id]) for c in rows]


async def _view(s: AsyncSession, cred: AgentCredential) -> CredentialView:
    states = await credential_states(s, [cred])
    return CredentialView(cred, states[cred.id])


async def issue_credential(services: ServicesPort, principal: Principal, request: CredentialRequest) -> NewCredential:
    """Create an agent credential for the caller; ``grantedCapabilities`` defaults to what its scopes open.

    Raises:
        BadInput / Forbidden / Conflict: as :func:`app.identity.service.create_credential`.
    """
    scopes: Sequence[str] | None = list(request.scopes) if request.scopes is not None else None
    async with services.db.session() as s:
        cred, issued = await identity.create_credential(
            s,
            creator=principal,
            name=request.name,
            scopes=scopes,
            expires_in_days=request.expires_in_days,
            context_set_id=request.context_set_id,
            profile=request.profile,
            default_capabilities=capabilities_for_scopes(set(scopes) if scopes is not None else set(_DEFAULT_SCOPES)),
        )
        view = await _view(s, cred)
    return NewCredential(view, issued.token)


async def revoke_agent_credential(services: ServicesPort, principal: Principal, credential_id: str) -> CredentialView:
    """Revoke a credential of the caller's workspace now.

    Raises:
        NotFound: no such credential in the workspace.
    """
    async with services.db.session() as s:
        cred = await identity.revoke_credential(s, workspace_id=principal.workspace_id, credential_id=credential_id)
        return await _view(s, cred)


async def set_agent_profile(
    services: ServicesPort, principal: Principal, credential_id: str, profile: dict[str, Any]
) -> CredentialView:
    """Replace the given responsibility lists of a credential (camelCase keys; omitted lists kept).

    Raises:
        NotFound: no such credential. BadInput: an unknown list entry.
    """
    async with services.db.session() as s:
        cred = await identity.set_credential_profile(
            s, workspace_id=principal.workspace_id, credential_id=credential_id, profile=profile
        )
        return await _view(s, cred)


async def add_member(services: ServicesPort, principal: Principal, name: str, role: str) -> NewMemberInfo:
    """Add a member to the caller's workspace; its token is returned once.

    Raises:
        BadInput / Conflict: as :func:`app.identity.service.create_member`.
    """
    async with services.db.session() as s:
        m, issued = await identity.create_member(s, workspace_id=principal.workspace_id, name=name, role=role)
    return NewMemberInfo(MemberInfo.of(m), issued.token)


async def remove_workspace_member(services: ServicesPort, principal: Principal, member_id: str) -> MemberInfo:
    """Remove a member of the caller's workspace (their agent credentials stop working).

    Raises:
        NotFound / Conflict: as :func:`app.identity.service.remove_member`.
    """
    async with services.db.session() as s:
        m = await identity.remove_member(
            s, workspace_id=principal.workspace_id, member_id=member_id, by_member_id=principal.member_id
        )
    return MemberInfo.of(m)


async def change_member_role(services: ServicesPort, principal: Principal, member_id: str, role: str) -> MemberInfo:
    """Change a member's role in the caller's workspace.

    Raises:
        NotFound / Conflict: as :func:`app.identity.service.set_member_role`.
    """
    async with services.db.session() as s:
        m = await identity.set_member_role(s, workspace_id=principal.workspace_id, member_id=member_id, role=role)
    return MemberInfo.of(m)
