"""What an agent credential can do now: its status, and which of its scopes its creator lost.

A credential acts with its creator's *current* role (SPEC §1), so its standing is derived on
every read, never stored:

- ``REVOKED`` — revoked (wins over everything else);
- ``EXPIRED`` — past ``expires_at``;
- ``AUTHORITY_LOST`` — its creator was removed from the workspace, or no longer holds the
  permissions of *any* of its scopes (every call would fail with
  ``AGENT_CREDENTIAL_AUTHORITY_LOST``);
- ``ACTIVE`` — otherwise. Some scopes may still be lost (``lost_scopes``): a creator demoted
  from editor to viewer keeps ``context:read`` working and loses ``queries:run``.

Only ``ACTIVE`` credentials count toward the 50-per-workspace cap. A creator promoted back
makes an ``AUTHORITY_LOST`` credential active again, so a workspace may then hold more than
50 active ones until some are revoked; new ones are refused while it does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from cairn.app.core.ids import as_utc, utcnow
from cairn.app.core.models import AgentCredential, Member
from cairn.app.governance import ROLE_PERMISSIONS, SCOPE_PERMISSIONS

ACTIVE, REVOKED, EXPIRED, AUTHORITY_LOST = "ACTIVE", "REVOKED", "EXPIRED", "AUTHORITY_LOST"


@dataclass(frozen=True)
class CredentialState:
    """``status`` (module doc) and ``lost_scopes``: the credential's scopes whose permissions
    its creator no longer holds (every scope when the creator was removed), sorted."""

    status: str
    lost_scopes: tuple[str, ...]

    @property
    def active(self) -> bool:
        """True for ``ACTIVE``."""
        return self.status == ACTIVE


def credential_state(cred: AgentCredential, creator: Member | None, now: datetime | None = None) -> CredentialState:
    """The state of one credential given its creator's row (None: the row is missing)."""
    now = now or utcnow()
    gone = creator is None or creator.removed_at is not None
    held = frozenset() if gone else ROLE_PERMISSIONS.get(creator.role, frozenset())  # type: ignore[union-attr]
    lost = tuple(sorted(sc for sc in cred.scopes if not SCOPE_PERMISSIONS.get(sc, frozenset()) <= held))
    if cred.revoked_at is not None:
        status = REVOKED
    elif as_utc(cred.expires_at) <= now:
        status = EXPIRED
    elif gone or (lost and len(lost) == len(cred.scopes)):
        status = AUTHORITY_LOST
    else:
        status = ACTIVE
    return CredentialState(status, lost)


async def credential_states(s: AsyncSession, creds: Sequence[AgentCredential]) -> dict[str, CredentialState]:
    """``{credential id: state}`` for ``creds``, reading their creators in one query."""
    ids = sorted({c.creator_id for c in creds})
    creators = (
        {m.id: m for m in (await s.execute(select(Member).where(col(Member.id).in_(ids)))).scalars()} if ids else {}
    )
    now = utcnow()
    return {c.id: credential_state(c, creators.get(c.creator_id), now) for c in creds}


async def count_active(s: AsyncSession, workspace_id: str) -> int:
    """How many of the workspace's credentials are ``ACTIVE`` (the cap counts these)."""
    now = utcnow()
    rows = (
        await s.execute(
            select(AgentCredential, Member)
            .outerjoin(Member, col(Member.id) == col(AgentCredential.creator_id))
            .where(
                col(AgentCredential.workspace_id) == workspace_id,
                col(AgentCredential.revoked_at).is_(None),
                col(AgentCredential.expires_at) > now,
            )
        )
    ).all()
    return sum(credential_state(cred, creator, now).active for cred, creator in rows)
