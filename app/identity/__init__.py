"""Workspaces, members, agent credentials and token authentication.

Public surface: other packages import only the names below (import-linter contract in
pyproject.toml).
"""

from app.identity.credential_state import CredentialState, credential_states
from app.identity.service import (
    authenticate,
    create_credential,
    create_member,
    create_workspace,
    describe_principal,
    get_workspace_by_name,
    list_credentials,
    list_members,
    remove_member,
    revoke_credential,
    set_credential_profile,
    set_member_role,
)

__all__ = [
    "CredentialState",
    "authenticate",
    "create_credential",
    "create_member",
    "create_workspace",
    "credential_states",
    "describe_principal",
    "get_workspace_by_name",
    "list_credentials",
    "list_members",
    "remove_member",
    "revoke_credential",
    "set_credential_profile",
    "set_member_role",
]
