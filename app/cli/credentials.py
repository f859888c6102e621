from __future__ import annotations

import json
from pathlib import Path

import typer

from cairn.app.cli.common import DataDir, WorkspaceOpt, _admin, _typer

credentials_cli = _typer("Agent credentials (ck_… tokens).")


@credentials_cli.command("create")
def credentials_create(
    creator: str = typer.Option(..., "--creator", help="Member id of the creator (owner or admin)."),
    scope: list[str] = typer.Option(None, "--scope", help="Repeatable; default context:read queries:run replay:run."),
    days: int = typer.Option(30, "--days", help="Expiry, 1–365 days."),
    name: str = typer.Option("agent", "--name"),
    data_dir: Path | None = DataDir,
) -> None:
    """Create an agent credential and print its token (shown once)."""
    cred, issued = _admin(data_dir, lambda s, _: _create_credential(s, creator, scope or None, days, name))
    typer.echo(
        json.dumps(
            {
                "credentialId": cred.id,
                "scopes": cred.scopes,
                "expiresAt": cred.expires_at.isoformat(),
                "token": issued.token,
            }
        )
    )


@credentials_cli.command("revoke")
def credentials_revoke(credential_id: str, workspace: str = WorkspaceOpt, data_dir: Path | None = DataDir) -> None:
    """Revoke an agent credential now."""
    from cairn.app import identity

    cred = _admin(
        data_dir,
        lambda s, ws: identity.revoke_credential(s, workspace_id=ws.id, credential_id=credential_id),
        workspace=workspace,
    )
    typer.echo(json.dumps({"credentialId": cred.id, "revokedAt": cred.revoked_at.isoformat()}))


@credentials_cli.command("list")
def credentials_list(workspace: str = WorkspaceOpt, data_dir: Path | None = DataDir) -> None:
    """List agent credentials (never their secrets), each with its status: ACTIVE, REVOKED,
    EXPIRED or AUTHORITY_LOST (:mod:`app.identity.credential_state`) and the scopes its
    creator no longer holds."""
    from cairn.app import identity
    from cairn.app.identity import credential_states

    async def listed(s, ws):
        creds = await identity.list_credentials(s, workspace_id=ws.id)
        return creds, await credential_states(s, creds)

    creds, states = _admin(data_dir, listed, workspace=workspace)
    for c in creds:
        typer.echo(
            json.dumps(
                {
                    "credentialId": c.id,
                    "name": c.name,
                    "scopes": c.scopes,
                    "status": states[c.id].status,
                    "lostScopes": list(states[c.id].lost_scopes),
                    "expiresAt": c.expires_at.isoformat(),
                    "revokedAt": c.revoked_at.isoformat() if c.revoked_at else None,
                }
            )
        )


async def _create_credential(s, creator_id, scopes, days, name):
    from cairn.app import identity
    from cairn.app.core.errors import Forbidden, NotFound
    from cairn.app.core.models import Member
    from cairn.app.governance import DEFAULT_SCOPES, ROLE_PERMISSIONS, Principal, capabilities_for_scopes

    m = await s.get(Member, creator_id)
    if m is None or m.removed_at is not None:
        raise NotFound(f"no member {creator_id!r}")
    principal = Principal(
        kind="member",
        id=m.id,
        workspace_id=m.workspace_id,
        permissions=ROLE_PERMISSIONS[m.role],
        member_id=m.id,
        role=m.role,
    )
    if "agent_credential:manage" not in principal.permissions:
        raise Forbidden(f"member {m.id} is {m.role}; creating credentials needs admin or owner")
    return await identity.create_credential(
        s,
        creator=principal,
        name=name,
        scopes=scopes,
        expires_in_days=days,
        default_capabilities=capabilities_for_scopes(set(scopes or DEFAULT_SCOPES)),
    )
