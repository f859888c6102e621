"""Identity and governance: viewer, registry, members, agent credentials and profiles."""

from __future__ import annotations

import enum
from datetime import datetime

import strawberry

from cairn.app import identity
from cairn.app.core.errors import BadInput
from cairn.app.core.text_rules import validate_identifier, validate_name
from cairn.app.governance import (
    DEFAULT_SCOPES,
    MAX_EXPIRY_DAYS,
    MIN_EXPIRY_DAYS,
    REGISTRY,
    ROLE_PERMISSIONS,
    ROLES,
    SCOPE_PERMISSIONS,
    Governed,
    Principal,
)
from cairn.app.identity import CredentialRequest, CredentialView, MemberInfo
from cairn.resolvers.types import Info


@strawberry.type(description="Who is calling.")
class Viewer:
    kind: str = strawberry.field(description="member | agent")
    id: strawberry.ID
    workspace_id: strawberry.ID
    workspace_name: str
    name: str = strawberry.field(description="The member's name, or the agent credential's name.")
    role: str = strawberry.field(description="The member's role (for an agent: its creator's current role).")
    permissions: list[str]
    scopes: list[str]
    context_set_id: strawberry.ID | None
    expires_at: datetime | None


@strawberry.type(description="A registered operation: coordinate G.U.P.Z.A and capability.")
class RegisteredOperation:
    name: str
    kind: str
    coordinate: str
    capability: str
    scope: str | None
    effect: str
    rate_class: str | None = strawberry.field(
        description="Rate-limit class the call counts against per credential: packs, decisions, writes, "
        "reads (null: no credential)."
    )


@strawberry.type(description="An agent scope: whether it is on by default and what its creator must hold.")
class AgentScope:
    name: str
    default: bool = strawberry.field(description="On when createAgentCredential is given no scopes.")
    permissions: list[str] = strawberry.field(
        description="Member permissions the creator must hold, at creation and at every call."
    )
    minimum_role: str = strawberry.field(
        description="The lowest role holding them: a creator below it makes the scope fail with "
        "AGENT_CREDENTIAL_AUTHORITY_LOST."
    )


def agent_scopes() -> list[AgentScope]:
    """Every agent scope with its default, permissions and the lowest role that holds them."""
    return [
        AgentScope(
            name=name,
            default=name in DEFAULT_SCOPES,
            permissions=sorted(perms),
            minimum_role=next(r for r in ROLES if perms <= ROLE_PERMISSIONS[r]),
        )
        for name, perms in SCOPE_PERMISSIONS.items()
    ]


@strawberry.type(description="The five responsibility lists of an agent credential.")
class ResponsibilityProfile:
    granted_capabilities: list[str]
    natural_avoidances: list[str]
    suggest_only: list[str]
    reconfirm_before: list[str]
    hard_boundaries: list[str]


@strawberry.input(
    description="Responsibility lists; an omitted list keeps its value (on create: empty, granted = the scopes' capabilities)."
)
class ResponsibilityProfileInput:
    granted_capabilities: list[str] | None = None
    natural_avoidances: list[str] | None = None
    suggest_only: list[str] | None = None
    reconfirm_before: list[str] | None = None
    hard_boundaries: list[str] | None = None


@strawberry.enum(description="What an agent credential can do now (derived from its creator's current standing).")
class CredentialStatus(enum.Enum):
    ACTIVE = "ACTIVE"
    REVOKED = "REVOKED"
    EXPIRED = "EXPIRED"
    AUTHORITY_LOST = strawberry.enum_value(
        "AUTHORITY_LOST",
        description="Its creator was removed (every call fails) or no longer holds what any of its "
        "scopes needs (every scoped call fails), with AGENT_CREDENTIAL_AUTHORITY_LOST.",
    )


@strawberry.type
class AgentCredential:
    id: strawberry.ID
    name: str
    creator_id: strawberry.ID
    scopes: list[str]
    context_set_id: strawberry.ID | None
    created_at: datetime
    expires_at: datetime
    revoked_at: datetime | None
    last_used_at: datetime | None = strawberry.field(
        description="When it last authenticated a call, to the minute (null: never used)."
    )
    active: bool = strawberry.field(description="status is ACTIVE: it works and counts toward the 50-credential cap.")
    status: CredentialStatus
    lost_scopes: list[str] = strawberry.field(
        description="Scopes whose permissions its creator no longer holds (all of them once the creator is removed); "
        "calls needing them fail with AGENT_CREDENTIAL_AUTHORITY_LOST."
    )
    profile: ResponsibilityProfile


@strawberry.type(description="A new credential; token is shown once and never again.")
class NewAgentCredential:
    credential: AgentCredential
    token: str


@strawberry.input
class CreateAgentCredentialInput:
    name: str
    expires_in_days: int = strawberry.field(description="1–365.")
    scopes: list[str] | None = strawberry.field(
        default=None, description="Default: context:read, queries:run, replay:run."
    )
    context_set_id: strawberry.ID | None = None
    profile: ResponsibilityProfileInput | None = None


@strawberry.type
class Member:
    id: strawberry.ID
    name: str
    role: str
    created_at: datetime


@strawberry.type(description="A new member; token is shown once and never again.")
class NewMember:
    member: Member
    token: str


def _profile_dict(p: ResponsibilityProfileInput | None) -> dict | None:
    if p is None:
        return None
    pairs = {
        "grantedCapabilities": p.granted_capabilities,
        "naturalAvoidances": p.natural_avoidances,
        "suggestOnly": p.suggest_only,
        "reconfirmBefore": p.reconfirm_before,
        "hardBoundaries": p.hard_boundaries,
    }
    return {k: v for k, v in pairs.items() if v is not None}


def to_credential(view: CredentialView) -> AgentCredential:
    """Credential and its :class:`~app.identity.CredentialState` → GraphQL type (never the secret)."""
    c, state = view.credential, view.state
    prof = c.profile or {}
    return AgentCredential(
        id=strawberry.ID(c.id),
        name=c.name,
        creator_id=strawberry.ID(c.creator_id),
        scopes=list(c.scopes),
        context_set_id=strawberry.ID(c.context_set_id) if c.context_set_id is not None else None,
        created_at=c.created_at,
        expires_at=c.expires_at,
        revoked_at=c.revoked_at,
        last_used_at=c.last_used_at,
        active=state.active,
        status=CredentialStatus(state.status),
        lost_scopes=list(state.lost_scopes),
        profile=ResponsibilityProfile(
            granted_capabilities=prof.get("grantedCapabilities", []),
            natural_avoidances=prof.get("naturalAvoidances", []),
            suggest_only=prof.get("suggestOnly", []),
            reconfirm_before=prof.get("reconfirmBefore", []),
            hard_boundaries=prof.get("hardBoundaries", []),
        ),
    )


def to_member(m: MemberInfo) -> Member:
    """Service member → GraphQL type (never the token)."""
    return Member(id=strawberry.ID(m.id), name=m.name, role=m.role, created_at=m.created_at)


def _validate_create(input: CreateAgentCredentialInput) -> None:
    if not MIN_EXPIRY_DAYS <= input.expires_in_days <= MAX_EXPIRY_DAYS:
        raise BadInput("input.expiresInDays must be between 1 and 365", field="input.expiresInDays", limit="1-365")
    if input.scopes is not None:
        unknown = [s for s in input.scopes if s not in SCOPE_PERMISSIONS]
        if unknown:
            raise BadInput(
                f"input.scopes has unknown {unknown}; allowed: {', '.join(SCOPE_PERMISSIONS)}", field="input.scopes"
            )
    validate_name(input.name, "input.name", 120)
    if input.context_set_id is not None:
        validate_identifier(input.context_set_id, "input.contextSetId")


def _validate_credential_id(id: str, **_: object) -> None:
    validate_identifier(id, "id")


def _validate_member(name: str, role: str) -> None:
    validate_name(name, "name", 120)
    if role not in ("viewer", "editor", "admin", "owner"):
        raise BadInput("role must be viewer, editor, admin or owner", field="role")


def _validate_member_id(member_id: str) -> None:
    validate_identifier(member_id, "memberId")


def _validate_role(member_id: str, role: str) -> None:
    _validate_member_id(member_id)
    _validate_member("x", role)


@strawberry.type
class IdentityQuery:
    @strawberry.field(
        description="The caller: member or agent, role, permissions, scopes.", extensions=[Governed("viewer")]
    )
    async def viewer(self, info: Info, principal: Principal) -> Viewer:
        permissions = principal.permissions
        if principal.is_agent:  # what the agent can use: its scopes' share of its creator's rights
            permissions = permissions & frozenset().union(*(SCOPE_PERMISSIONS[s] for s in principal.scopes))
        workspace_name, name = await identity.viewer_names(info.context.services, principal)
        return Viewer(
            kind=principal.kind,
            id=strawberry.ID(principal.id),
            workspace_id=strawberry.ID(principal.workspace_id),
            workspace_name=workspace_name,
            name=name,
            role=principal.role,
            permissions=sorted(permissions),
            scopes=sorted(principal.scopes),
            context_set_id=strawberry.ID(principal.context_set_id) if principal.context_set_id is not None else None,
            expires_at=principal.expires_at,
        )

    @strawberry.field(
        description="Every registered operation with its coordinate and capability.",
        extensions=[Governed("operations")],
    )
    async def operations(self, info: Info) -> list[RegisteredOperation]:
        return [
            RegisteredOperation(
                name=o.name,
                kind=o.kind,
                coordinate=o.coordinate,
                capability=o.capability,
                scope=o.scope,
                effect=o.effect,
                rate_class=o.rate_class,
            )
            for o in REGISTRY.values()
        ]

    @strawberry.field(
        description="The agent scopes a credential can hold: defaults and the creator's minimum role.",
        extensions=[Governed("agentScopes")],
    )
    async def agent_scopes(self, info: Info) -> list[AgentScope]:
        return agent_scopes()

    @strawberry.field(description="Members of your workspace (admins and owners).", extensions=[Governed("members")])
    async def members(self, info: Info, principal: Principal) -> list[Member]:
        return [to_member(m) for m in await identity.workspace_members(info.context.services, principal)]

    @strawberry.field(
        description="Agent credentials of your workspace (secrets are never shown again).",
        extensions=[Governed("agentCredentials")],
    )
    async def agent_credentials(self, info: Info, principal: Principal) -> list[AgentCredential]:
        return [to_credential(v) for v in await identity.workspace_credentials(info.context.services, principal)]


@strawberry.type
class IdentityMutation:
    @strawberry.mutation(
        description="Create an agent credential (owners/admins). The token is returned once.",
        extensions=[Governed("createAgentCredential", validate=_validate_create)],
    )
    async def create_agent_credential(
        self, info: Info, input: CreateAgentCredentialInput, principal: Principal
    ) -> NewAgentCredential:
        request = CredentialRequest(
            name=input.name,
            expires_in_days=input.expires_in_days,
            scopes=tuple(input.scopes) if input.scopes is not None else None,
            context_set_id=input.context_set_id,
            profile=_profile_dict(input.profile),
        )
        new = await identity.issue_credential(info.context.services, principal, request)
        return NewAgentCredential(credential=to_credential(new.view), token=new.token)

    @strawberry.mutation(
        description="Revoke an agent credential now.",
        extensions=[Governed("revokeAgentCredential", validate=_validate_credential_id)],
    )
    async def revoke_agent_credential(self, info: Info, id: strawberry.ID, principal: Principal) -> AgentCredential:
        return to_credential(await identity.revoke_agent_credential(info.context.services, principal, id))

    @strawberry.mutation(
        description="Replace lists of an agent credential's responsibility profile.",
        extensions=[Governed("setAgentProfile", validate=_validate_credential_id)],
    )
    async def set_agent_profile(
        self, info: Info, id: strawberry.ID, profile: ResponsibilityProfileInput, principal: Principal
    ) -> AgentCredential:
        view = await identity.set_agent_profile(info.context.services, principal, id, _profile_dict(profile) or {})
        return to_credential(view)

    @strawberry.mutation(
        description="Add a member to your workspace (owners). The member token is returned once.",
        extensions=[Governed("addMember", validate=_validate_member)],
    )
    async def add_member(self, info: Info, name: str, role: str, principal: Principal) -> NewMember:
        new = await identity.add_member(info.context.services, principal, name, role)
        return NewMember(member=to_member(new.member), token=new.token)

    @strawberry.mutation(
        description="Remove a member (owners). Their agent credentials stop working at once.",
        extensions=[Governed("removeMember", validate=_validate_member_id)],
    )
    async def remove_member(self, info: Info, member_id: strawberry.ID, principal: Principal) -> Member:
        return to_member(await identity.remove_workspace_member(info.context.services, principal, member_id))

    @strawberry.mutation(
        description="Change a member's role (owners). Their agents act with the new role at once.",
        extensions=[Governed("setMemberRole", validate=_validate_role)],
    )
    async def set_member_role(self, info: Info, member_id: strawberry.ID, role: str, principal: Principal) -> Member:
        return to_member(await identity.change_member_role(info.context.services, principal, member_id, role))
