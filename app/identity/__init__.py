"""Workspaces, members, agent credentials and token authentication.

Public surface: other packages import only the names below (import-linter contract in
pyproject.toml).
"""

from cairn.app.identity.authentication import authenticate, describe_principal
from cairn.app.identity.credential_state import CredentialState, credential_states
from cairn.app.identity.operations import (
    CredentialRequest,
    CredentialView,
    MemberInfo,
    NewCredential,
    NewMemberInfo,
    add_member,
    change_member_role,
    issue_credential,
    remove_workspace_member,
    revoke_agent_credential,
    set_agent_profile,
    viewer_names,
    workspace_credentials,
    workspace_members,
)
from cairn.app.identity.service import (
    create_credential,
    create_member,
    create_workspace,
    get_workspace_by_name,
    list_credentials,
    list_members,
    remove_member,
    revoke_credential,
    set_credential_profile,
    set_member_role,
)

__all__ = [
    "CredentialRequest",
    "CredentialState",
    "CredentialView",
    "MemberInfo",
    "NewCredential",
    "NewMemberInfo",
    "add_member",
    "authenticate",
    "change_member_role",
    "create_credential",
    "create_member",
    "create_workspace",
    "credential_states",
    "describe_principal",
    "get_workspace_by_name",
    "issue_credential",
    "list_credentials",
    "list_members",
    "remove_member",
    "remove_workspace_member",
    "revoke_agent_credential",
    "revoke_credential",
    "set_agent_profile",
    "set_credential_profile",
    "set_member_role",
    "viewer_names",
    "workspace_credentials",
    "workspace_members",
]
