"""Authentication: a bearer token → :class:`~app.governance.Principal` (credential state,
context-set binding, last use to the minute), and the names behind a principal.

Split from :mod:`app.identity.service` (the identity rows' writes) by noun.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from cairn.app.core.errors import (
    AgentCredentialAuthorityLost,
    ContextSetInactive,
    NotFound,
    Unauthenticated,
)
from cairn.app.core.ids import as_utc, utcnow
from cairn.app.core.models import AgentCredential, ContextSet, Document, Member, Workspace
from cairn.app.governance import (
    ROLE_PERMISSIONS,
    ContextScope,
    Principal,
    parse_token,
    secret_matches,
)
from cairn.app.identity.errors import AgentCredentialExpired, AgentCredentialRevoked

LAST_USED_RESOLUTION = timedelta(minutes=1)
"""How often ``last_used_at`` is written: at most once a minute per credential."""


async def authenticate(s: AsyncSession, token: str) -> Principal:
    """Resolve a bearer token to a :class:`Principal` with *current* permissions.

    Raises:
        Unauthenticated: malformed, unknown or wrong secret (one message for all three, so
            ids cannot be probed); ``AGENT_CREDENTIAL_EXPIRED`` / ``AGENT_CREDENTIAL_REVOKED``.
        Forbidden: ``AGENT_CREDENTIAL_AUTHORITY_LOST`` when the creator was removed.
    """
    kind, token_id, secret = parse_token(token)
    now = utcnow()
    if kind == "cm":
        m = (await s.execute(select(Member).where(col(Member.token_id) == token_id))).scalar_one_or_none()
        if m is None or not secret_matches(secret, m.token_sha256) or m.removed_at is not None:
            raise Unauthenticated("unknown or invalid member token")
        return Principal(
            kind="member",
            id=m.id,
            workspace_id=m.workspace_id,
            permissions=ROLE_PERMISSIONS[m.role],
            member_id=m.id,
            role=m.role,
        )
    cred = await s.get(AgentCredential, token_id)
    if cred is None or not secret_matches(secret, cred.secret_sha256):
        raise Unauthenticated("unknown or invalid agent credential")
    if cred.revoked_at is not None:
        raise AgentCredentialRevoked("this agent credential was revoked")
    if as_utc(cred.expires_at) <= now:
        raise AgentCredentialExpired(
            f"this agent credential expired at {as_utc(cred.expires_at).isoformat()}; create a new one",
        )
    creator = await s.get(Member, cred.creator_id)
    if creator is None or creator.removed_at is not None:
        raise AgentCredentialAuthorityLost(
            "the member who created this credential is no longer in the workspace",
        )
    scope = None
    if cred.context_set_id is not None:
        cs = await s.get(ContextSet, cred.context_set_id)
        if cs is None or not cs.active:
            raise ContextSetInactive(
                f"this credential is bound to context set {cred.context_set_id}, which is "
                f"{'deactivated' if cs is not None else 'gone'}; its reads are refused (a binding never widens): "
                "an editor can reactivate the set, or create a new credential",
            )
        doc_colls = set()
        if cs.document_ids:
            doc_colls = set(
                (
                    await s.execute(
                        select(col(Document.collection_id)).where(
                            col(Document.id).in_(list(cs.document_ids)), col(Document.workspace_id) == cs.workspace_id
                        )
                    )
                ).scalars()
            )
        colls = frozenset(cs.collection_ids or ())
        scope = ContextScope(colls, frozenset(cs.document_ids or ()), colls | frozenset(doc_colls))
    await _touch(s, cred, now)
    return Principal(
        kind="agent",
        id=cred.id,
        workspace_id=cred.workspace_id,
        permissions=ROLE_PERMISSIONS[creator.role],
        member_id=creator.id,
        role=creator.role,
        scopes=frozenset(cred.scopes),
        context_set_id=cred.context_set_id,
        profile=dict(cred.profile),
        expires_at=as_utc(cred.expires_at),
        context_scope=scope,
    )


async def _touch(s: AsyncSession, cred: AgentCredential, now: datetime) -> None:
    """Record that ``cred`` authenticated a call at ``now`` (at most once per
    :data:`LAST_USED_RESOLUTION`; the conditional UPDATE never moves the time backwards)."""
    last = cred.last_used_at
    if last is not None and now - as_utc(last) < LAST_USED_RESOLUTION:
        return
    stale = col(AgentCredential.last_used_at).is_(None) | (
        col(AgentCredential.last_used_at) < now - LAST_USED_RESOLUTION
    )
    await s.execute(update(AgentCredential).where(col(AgentCredential.id) == cred.id, stale).values(last_used_at=now))


async def describe_principal(s: AsyncSession, principal: Principal) -> tuple[str, str]:
    """``(workspace name, display name)`` of a principal: the member's name, or the credential's.

    Raises:
        NotFound: the workspace, member or credential row is gone (a race with removal).
    """
    ws = await s.get(Workspace, principal.workspace_id)
    row: Member | AgentCredential | None
    row = await s.get(AgentCredential, principal.id) if principal.is_agent else await s.get(Member, principal.id)
    if ws is None or row is None:
        raise NotFound("the caller's workspace or identity no longer exists")
    return ws.name, row.name
