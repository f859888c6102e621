"""Workspaces, members, agent credentials, and authentication of a bearer token.

Rules (SPEC §1): owners/admins (``agent_credential:manage``) create credentials; at most 50
active per retaining workspace (``ACTIVE`` in :mod:`app.identity.credential_state`: a removed
creator's credentials do not count); expiry 1–365 days; every scope needs its creator to hold the
scope's permissions at creation *and* at every call (else ``AGENT_CREDENTIAL_AUTHORITY_LOST``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from cairn.app.core.db import serialize
from cairn.app.core.errors import (
    BadInput,
    Conflict,
    Forbidden,
    NotFound,
)
from cairn.app.core.ids import new_id, utcnow
from cairn.app.core.models import AgentCredential, ContextSet, Member, Workspace
from cairn.app.core.text_rules import validate_identifier, validate_name
from cairn.app.governance import (
    DEFAULT_SCOPES,
    MAX_ACTIVE_CREDENTIALS,
    MAX_EXPIRY_DAYS,
    MIN_EXPIRY_DAYS,
    PROFILE_LISTS,
    ROLES,
    SCOPE_PERMISSIONS,
    Principal,
    issue_token,
)
from cairn.app.identity.credential_state import count_active
from cairn.app.identity.errors import AgentCredentialLimit, LastOwner

"""``AgentCredential.last_used_at`` moves only when it is this much older than the call: one
write per credential per minute at most, not one per call."""


@dataclass(frozen=True)
class IssuedToken:
    """A newly issued secret: ``token`` is shown once and never stored."""

    id: str
    token: str


async def create_workspace(s: AsyncSession, *, name: str, retaining: bool = True) -> Workspace:
    """Create a workspace.

    Raises:
        BadInput: name empty or over 120 characters.
        Conflict: the name is taken.
    """
    validate_name(name, "name", 120)
    await serialize(s, "workspace-name", name)
    if (await s.execute(select(Workspace).where(col(Workspace.name) == name))).scalar_one_or_none():
        raise Conflict(f"workspace {name!r} already exists", field="name")
    ws = Workspace(id=new_id("ws"), name=name, retaining=retaining, created_at=utcnow())
    s.add(ws)
    await s.flush()
    return ws


async def get_workspace_by_name(s: AsyncSession, name: str) -> Workspace | None:
    """The workspace called ``name``, or None."""
    return (await s.execute(select(Workspace).where(col(Workspace.name) == name))).scalar_one_or_none()


async def create_member(s: AsyncSession, *, workspace_id: str, name: str, role: str) -> tuple[Member, IssuedToken]:
    """Add a member with a fresh member token.

    Raises:
        BadInput: unknown role or bad name.
    """
    validate_name(name, "name", 120)
    if role not in ROLES:
        raise BadInput(f"role must be one of {', '.join(ROLES)}", field="role")
    token_id, sha, token = issue_token("cm")
    m = Member(
        id=new_id("usr"),
        workspace_id=workspace_id,
        name=name,
        role=role,
        token_id=token_id,
        token_sha256=sha,
        created_at=utcnow(),
    )
    s.add(m)
    await s.flush()
    return m, IssuedToken(m.id, token)


async def set_member_role(s: AsyncSession, *, workspace_id: str, member_id: str, role: str) -> Member:
    """Change a member's role (takes effect on the next call of their credentials).

    Raises:
        BadInput: unknown role. NotFound: no such member.
    """
    validate_identifier(member_id, "memberId")
    if role not in ROLES:
        raise BadInput(f"role must be one of {', '.join(ROLES)}", field="role")
    m = await _locked_member(s, workspace_id, member_id)
    if m.role == "owner" and role != "owner":
        await _keep_an_owner(s, workspace_id, leaving=m.id)
    m.role = role
    s.add(m)
    await s.flush()
    return m


def _check_profile(profile: dict | None) -> dict:
    profile = dict(profile or {})
    unknown = set(profile) - set(PROFILE_LISTS)
    if unknown:
        raise BadInput(
            f"unknown responsibility list(s) {sorted(unknown)}; allowed: {', '.join(PROFILE_LISTS)}",
            field="profile",
        )
    out: dict[str, list[str]] = {}
    for key in PROFILE_LISTS:
        values = profile.get(key)
        if values is None:
            out[key] = []
            continue
        if len(values) > 200 or any(not isinstance(v, str) or not 1 <= len(v) <= 80 for v in values):
            raise BadInput(
                f"profile.{key} must be at most 200 capability strings of 1–80 characters",
                field=f"profile.{key}",
                limit=200,
            )
        unknown_caps = [v for v in values if not _known_capability(v)]
        if unknown_caps:
            raise BadInput(
                f"profile.{key} names unknown capabilities {sorted(unknown_caps)}; see the `operations` "
                "query for the capabilities (or use '*' / 'area:*')",
                field=f"profile.{key}",
            )
        out[key] = sorted(set(values))
    return out


def _known_capability(entry: str) -> bool:
    from cairn.app.governance import REGISTRY

    caps = {op.capability for op in REGISTRY.values()}
    if entry == "*" or entry in caps:
        return True
    return entry.endswith(":*") and any(c.startswith(entry[:-1]) for c in caps)


async def create_credential(
    s: AsyncSession,
    *,
    creator: Principal,
    name: str,
    scopes: Sequence[str] | None,
    expires_in_days: int,
    context_set_id: str | None = None,
    profile: dict | None = None,
    default_capabilities: Sequence[str] = (),
) -> tuple[AgentCredential, IssuedToken]:
    """Create an agent credential for ``creator`` (a member with ``agent_credential:manage``).

    Args:
        scopes: Requested scopes; ``None`` means the defaults (context:read, queries:run,
            replay:run).
        expires_in_days: 1–365.
        profile: Responsibility lists; ``grantedCapabilities`` defaults to
            ``default_capabilities`` (the capabilities the scopes open).

    Raises:
        BadInput: unknown scope, expiry out of 1–365, bad profile.
        Forbidden: the creator lacks a scope's permissions.
        Conflict: 50 active credentials already (``AGENT_CREDENTIAL_LIMIT``).
    """
    validate_name(name, "input.name", 120)
    scope_list = list(DEFAULT_SCOPES) if scopes is None else list(dict.fromkeys(scopes))
    unknown = [sc for sc in scope_list if sc not in SCOPE_PERMISSIONS]
    if unknown:
        raise BadInput(f"unknown scope(s) {unknown}; allowed: {', '.join(SCOPE_PERMISSIONS)}", field="input.scopes")
    if not scope_list:
        raise BadInput("input.scopes must name at least one scope", field="input.scopes")
    if not MIN_EXPIRY_DAYS <= expires_in_days <= MAX_EXPIRY_DAYS:
        raise BadInput("expiresInDays must be between 1 and 365", field="expiresInDays", limit="1-365")
    for sc in scope_list:
        missing = SCOPE_PERMISSIONS[sc] - creator.permissions
        if missing:
            raise Forbidden(
                f"scope {sc} needs the creator to hold {sorted(missing)}; your role is {creator.role}",
                field="input.scopes",
            )
    ws = await s.get(Workspace, creator.workspace_id)
    now = utcnow()
    if ws is not None and ws.retaining:
        # count-then-insert: serialised per workspace, so N concurrent creates at 49 admit one
        await serialize(s, "credential-cap", creator.workspace_id)
        if await count_active(s, creator.workspace_id) >= MAX_ACTIVE_CREDENTIALS:
            raise AgentCredentialLimit(
                f"this workspace already has {MAX_ACTIVE_CREDENTIALS} active agent credentials "
                "(the limit); revoke one first",
                limit=MAX_ACTIVE_CREDENTIALS,
            )
    if context_set_id is not None:
        # binding (SPEC §1): one *active* set of this workspace
        validate_identifier(context_set_id, "input.contextSetId")
        cs = await s.get(ContextSet, context_set_id)
        if cs is None or cs.workspace_id != creator.workspace_id:
            raise NotFound(f"context set {context_set_id!r} not found in this workspace", field="input.contextSetId")
        if not cs.active:
            raise BadInput(
                f"context set {context_set_id!r} is deactivated; bind a credential to an active set",
                field="input.contextSetId",
            )
    prof = _check_profile(profile)
    if profile is None or "grantedCapabilities" not in profile:
        prof["grantedCapabilities"] = sorted(set(default_capabilities))
    token_id, sha, token = issue_token("ck")
    cred = AgentCredential(
        id=token_id,
        workspace_id=creator.workspace_id,
        creator_id=creator.member_id,
        name=name,
        secret_sha256=sha,
        scopes=sorted(scope_list),
        profile=prof,
        context_set_id=context_set_id,
        created_at=now,
        expires_at=now + timedelta(days=expires_in_days),
    )
    s.add(cred)
    await s.flush()
    return cred, IssuedToken(cred.id, token)


async def list_credentials(s: AsyncSession, *, workspace_id: str) -> list[AgentCredential]:
    """Every credential of the workspace (secrets never included), newest first."""
    rows = await s.execute(
        select(AgentCredential)
        .where(col(AgentCredential.workspace_id) == workspace_id)
        .order_by(col(AgentCredential.created_at).desc(), col(AgentCredential.id))
    )
    return list(rows.scalars())


async def revoke_credential(s: AsyncSession, *, workspace_id: str, credential_id: str) -> AgentCredential:
    """Revoke a credential now (immediate: the next call is refused).

    Raises:
        NotFound: no such credential in the workspace.
    """
    validate_identifier(credential_id, "id")
    cred = await s.get(AgentCredential, credential_id)
    if cred is None or cred.workspace_id != workspace_id:
        raise NotFound(f"agent credential {credential_id!r} not found", field="credentialId")
    if cred.revoked_at is None:  # conditional: of concurrent revokes the first time stays
        await s.execute(
            update(AgentCredential)
            .where(col(AgentCredential.id) == cred.id, col(AgentCredential.revoked_at).is_(None))
            .values(revoked_at=utcnow())
        )
        fresh = await s.get(AgentCredential, credential_id, populate_existing=True)
        if fresh is None:  # deleted meanwhile (its workspace was)
            raise NotFound(f"agent credential {credential_id!r} not found", field="credentialId")
        cred = fresh
    return cred


async def set_credential_profile(
    s: AsyncSession, *, workspace_id: str, credential_id: str, profile: dict
) -> AgentCredential:
    """Replace a credential's responsibility profile.

    Raises:
        NotFound: no such credential. BadInput: bad profile.
    """
    validate_identifier(credential_id, "id")
    await serialize(s, "credential-profile", credential_id)  # read-merge-write: no lost list
    cred = await s.get(AgentCredential, credential_id, populate_existing=True)
    if cred is None or cred.workspace_id != workspace_id:
        raise NotFound(f"agent credential {credential_id!r} not found", field="credentialId")
    merged = {**cred.profile, **profile}
    cred.profile = _check_profile(merged)
    s.add(cred)
    await s.flush()
    return cred


async def _locked_member(s: AsyncSession, workspace_id: str, member_id: str) -> Member:
    """A live member of the workspace, read after taking the workspace's ``owners`` lock.

    Raises:
        NotFound: no such live member.
    """
    await serialize(s, "owners", workspace_id)
    m = await s.get(Member, member_id, populate_existing=True)
    if m is None or m.workspace_id != workspace_id or m.removed_at is not None:
        raise NotFound(f"member {member_id!r} not found", field="memberId")
    return m


async def _keep_an_owner(s: AsyncSession, workspace_id: str, *, leaving: str) -> None:
    """Refuse a change that would leave the workspace without an owner (``LAST_OWNER``).

    The caller took the workspace's ``owners`` lock (:func:`_locked_member`) before reading the
    member, so two owners demoting or removing each other at once cannot both pass.
    """
    others = (
        await s.execute(
            select(func.count())
            .select_from(Member)
            .where(
                col(Member.workspace_id) == workspace_id,
                col(Member.role) == "owner",
                col(Member.removed_at).is_(None),
                col(Member.id) != leaving,
            )
        )
    ).scalar_one()
    if not others:
        raise LastOwner("this is the workspace's only owner; make another member owner first", field="memberId")


async def list_members(s: AsyncSession, *, workspace_id: str) -> list[Member]:
    """Live members of the workspace, by creation time then id."""
    rows = await s.execute(
        select(Member)
        .where(col(Member.workspace_id) == workspace_id, col(Member.removed_at).is_(None))
        .order_by(col(Member.created_at), col(Member.id))
    )
    return list(rows.scalars())


async def remove_member(s: AsyncSession, *, workspace_id: str, member_id: str, by_member_id: str) -> Member:
    """Remove a member; their agent credentials fail with ``AGENT_CREDENTIAL_AUTHORITY_LOST``.

    Raises:
        NotFound: no such live member. Conflict: removing yourself (use another owner).
    """
    validate_identifier(member_id, "memberId")
    m = await _locked_member(s, workspace_id, member_id)
    if m.id == by_member_id:
        raise Conflict("you cannot remove yourself; ask another owner", field="memberId")
    if m.role == "owner":
        await _keep_an_owner(s, workspace_id, leaving=m.id)
    m.removed_at = utcnow()
    s.add(m)
    await s.flush()
    return m
