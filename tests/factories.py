"""Plain factory functions for tests: principals, workspaces, members, agent credentials.

Tests build identities through these instead of by hand, so a new required field of
:class:`~app.governance.auth.Principal` or a new argument of the identity service changes one
place. Rows are written through the real identity service (:mod:`app.identity.service`), in
the caller's session; nothing is mocked.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.ext.asyncio import AsyncSession

from cairn.app.context import Services, bootstrap
from cairn.app.core.config import Settings
from cairn.app.core.db import Database
from cairn.app.core.models import AgentCredential, Member, Workspace
from cairn.app.corpus import SearchIndexes, open_indexes
from cairn.app.governance.auth import DEFAULT_SCOPES, ROLE_PERMISSIONS, Principal
from cairn.app.governance.registry import capabilities_for_scopes
from cairn.app.identity import service as identity


def unique_name(prefix: str = "ws") -> str:
    """``prefix-<8 hex>``: a name no other test uses (workspace names are unique)."""
    return f"{prefix}-{secrets.token_hex(4)}"


def member_principal(member: Member, *, role: str | None = None) -> Principal:
    """The principal of a member acting for themself, with their role's permissions.

    Args:
        member: A member row.
        role: Overrides ``member.role`` (e.g. to act with a role the row no longer has).
    """
    r = role or member.role
    return Principal(
        kind="member",
        id=member.id,
        workspace_id=member.workspace_id,
        permissions=ROLE_PERMISSIONS[r],
        member_id=member.id,
        role=r,
    )


def principal(
    *,
    workspace_id: str,
    member_id: str = "m",
    role: str = "viewer",
    kind: str = "member",
    id: str | None = None,
    scopes: Iterable[str] = (),
    **extra,
) -> Principal:
    """A principal that needs no rows (pure functions, packs over a given workspace).

    Args:
        kind: ``member`` or ``agent``; an agent's ``id`` defaults to a fresh 16-character id.
        scopes: Agent scopes (ignored for members, whose scope set is empty).
        extra: Other :class:`Principal` fields (``context_set_id``, ``profile``, ``expires_at``).
    """
    if kind == "agent":
        pid = id or secrets.token_hex(8)
        sc = frozenset(scopes)
    else:
        pid = id or member_id
        sc = frozenset()
    return Principal(
        kind=kind,
        id=pid,
        workspace_id=workspace_id,
        permissions=ROLE_PERMISSIONS[role],
        member_id=member_id,
        role=role,
        scopes=sc,
        **extra,
    )


def agent_principal(creator: Principal, *, scopes: Iterable[str], id: str | None = None, **extra) -> Principal:
    """An agent credential's principal acting for ``creator`` (no credential row is written)."""
    return principal(
        workspace_id=creator.workspace_id,
        member_id=creator.member_id,
        role=creator.role,
        kind="agent",
        id=id,
        scopes=scopes,
        **extra,
    )


async def workspace(
    s: AsyncSession, *, name: str | None = None, retaining: bool = True, memory_enabled: bool | None = None
) -> Workspace:
    """Create a workspace (a unique name unless given)."""
    ws = await identity.create_workspace(s, name=name or unique_name(), retaining=retaining)
    if memory_enabled is not None:
        ws.memory_enabled = memory_enabled
        s.add(ws)
    return ws


async def member(
    s: AsyncSession, *, workspace_id: str, role: str = "editor", name: str | None = None
) -> tuple[Member, str]:
    """Create a member; returns ``(row, member token)``."""
    m, issued = await identity.create_member(s, workspace_id=workspace_id, name=name or unique_name(role), role=role)
    return m, issued.token


async def credential(
    s: AsyncSession, *, creator: Principal, scopes: Iterable[str] | None = None, days: int = 5, name: str | None = None
) -> tuple[AgentCredential, str]:
    """Create an agent credential for ``creator`` (owner/admin) with the capabilities its scopes
    open; returns ``(row, ck_ token)``. ``scopes=None`` means the default scopes."""
    sc = list(scopes) if scopes is not None else None
    cred, issued = await identity.create_credential(
        s,
        creator=creator,
        name=name or unique_name("agent"),
        scopes=sc,
        expires_in_days=days,
        default_capabilities=capabilities_for_scopes(set(sc or DEFAULT_SCOPES)),
    )
    return cred, issued.token


@dataclass(frozen=True)
class WorkspaceServices(Services):
    """The process services plus the id of one test workspace (``ws_id``)."""

    ws_id: str = ""


async def workspace_services(db: Database, db_url: str, data_dir: Path) -> tuple[WorkspaceServices, SearchIndexes]:
    """Services over ``db`` with no embedder (LEXICAL packs, 40-token passages) and a new workspace.

    Returns ``(services, indexes)``; the caller closes ``indexes``.
    """
    settings = Settings(data_dir=data_dir, database_url=db_url, embedder="none", chunk_max_tokens=40)
    indexes = open_indexes(settings)
    services = bootstrap(settings, db=db, indexes=indexes)
    async with db.session() as s:
        ws = await identity.create_workspace(s, name=unique_name("ws"))
    return WorkspaceServices(**vars(services), ws_id=ws.id), indexes
