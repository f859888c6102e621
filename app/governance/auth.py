"""Identity: roles and permissions, scopes, token formats, and request authentication.

Token formats (only ids and SHA-256 of secrets are stored):
- agent credential: ``ck_<16 hex id>_<43 base64url secret>`` (SPEC §1);
- member token:     ``cm_<16 hex id>_<43 base64url secret>`` (humans: UIs, GraphiQL).

An agent credential acts with its creator's *current* permissions, checked on every call.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from cairn.app.core.errors import AgentCredentialAuthorityLost, CairnError, Forbidden, Unauthenticated
from cairn.app.governance.errors import AgentBrowserRequestRefused, AgentScopeMissing

ROLES = ("viewer", "editor", "admin", "owner")

_VIEWER = frozenset({"collection:read", "document:read", "library:read"})
_EDITOR = _VIEWER | {"agent:run", "document:write"}
_ADMIN = _EDITOR | {"agent_credential:manage", "collection:write"}
_OWNER = _ADMIN | {"ask_history:manage", "workspace:manage"}

ROLE_PERMISSIONS: dict[str, frozenset[str]] = {
    "viewer": _VIEWER,
    "editor": frozenset(_EDITOR),
    "admin": frozenset(_ADMIN),
    "owner": frozenset(_OWNER),
}
"""Role → permissions, SPEC §1."""

SCOPE_PERMISSIONS: dict[str, frozenset[str]] = {
    "context:read": frozenset({"collection:read", "document:read"}),
    "queries:run": frozenset({"document:read", "agent:run"}),
    "replay:run": frozenset({"document:read"}),
    "gaps:report": frozenset({"library:read"}),
    "memory:read": frozenset({"collection:read", "document:read"}),
    "memory:write": frozenset({"document:read", "agent:run"}),
    "decisions:run": frozenset({"agent:run"}),
}
"""Scope → permissions its creator must hold (now and at every call), SPEC §1 table."""

DEFAULT_SCOPES = ("context:read", "queries:run", "replay:run")
"""Scopes on by default at creation; gaps:report, memory:* and decisions:run default off."""

MAX_ACTIVE_CREDENTIALS = 50
MIN_EXPIRY_DAYS, MAX_EXPIRY_DAYS = 1, 365

_TOKEN_RE = re.compile(r"^(ck|cm)_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$")


def hash_secret(secret: str) -> str:
    """Hex SHA-256 of a token secret."""
    return hashlib.sha256(secret.encode("ascii")).hexdigest()


def issue_token(kind: Literal["ck", "cm"]) -> tuple[str, str, str]:
    """Make a new token.

    Returns:
        ``(token_id, secret_sha256, full_token)``; show ``full_token`` once, store the rest.
    """
    token_id = secrets.token_hex(8)
    secret = base64.urlsafe_b64encode(secrets.token_bytes(32)).decode("ascii").rstrip("=")
    return token_id, hash_secret(secret), f"{kind}_{token_id}_{secret}"


def parse_token(token: str) -> tuple[str, str, str]:
    """Split a bearer token into ``(kind, id, secret)``.

    Raises:
        Unauthenticated: the token is not ``ck_…`` or ``cm_…`` in the documented shape.
    """
    m = _TOKEN_RE.match(token)
    if not m:
        raise Unauthenticated(
            "bearer token is malformed: expected ck_<16 hex>_<43 base64url> (agents) or "
            "cm_<16 hex>_<43 base64url> (members)"
        )
    return m.group(1), m.group(2), m.group(3)


def secret_matches(secret: str, stored_sha256: str) -> bool:
    """Constant-time comparison of a presented secret with its stored SHA-256."""
    return hmac.compare_digest(hash_secret(secret), stored_sha256)


@dataclass(frozen=True)
class ContextScope:
    """What a context set covers: documents in ``collection_ids`` plus ``document_ids``.

    Both empty means nothing is in scope (a bound credential then reads no corpus content).
    """

    collection_ids: frozenset[str] = frozenset()
    document_ids: frozenset[str] = frozenset()
    visible_collection_ids: frozenset[str] = frozenset()
    """Collections listed to a bound credential: ``collection_ids`` plus those holding a scoped document."""

    def allows(self, collection_id: str | None, document_id: str | None = None) -> bool:
        """True when the document (or, without ``document_id``, the whole collection) is in scope."""
        if collection_id is not None and collection_id in self.collection_ids:
            return True
        return document_id is not None and document_id in self.document_ids


@dataclass(frozen=True)
class Principal:
    """Who is calling.

    Attributes:
        kind: ``member`` (a human) or ``agent`` (an agent credential).
        id: Member id, or the credential id.
        workspace_id: The one workspace this principal acts in.
        permissions: The permissions in force *now* (for an agent: its creator's current role
            permissions; scopes are checked separately).
        scopes: Agent scopes (empty for members).
        member_id: The human behind the call (the member, or the credential's creator).
        role: The member's (or creator's) current role.
        context_set_id: Context-set binding of an agent credential, if any.
        context_scope: The bound set's scope, loaded at authentication (None with a binding
            = nothing in scope: the binding never widens).
        profile: The responsibility envelope of an agent credential.
    """

    kind: Literal["member", "agent"]
    id: str
    workspace_id: str
    permissions: frozenset[str]
    member_id: str
    role: str
    scopes: frozenset[str] = frozenset()
    context_set_id: str | None = None
    profile: dict = field(default_factory=dict)
    expires_at: datetime | None = None
    context_scope: ContextScope | None = None

    @property
    def is_agent(self) -> bool:
        """True for an agent credential."""
        return self.kind == "agent"

    @property
    def bound(self) -> bool:
        """True for a credential bound to a context set (its reads are limited to the set's scope)."""
        return self.context_set_id is not None

    def may_read(self, collection_id: str | None, document_id: str | None = None) -> bool:
        """Context-set binding check for one document (or collection): always True when unbound."""
        if self.context_set_id is None:
            return True
        return self.context_scope is not None and self.context_scope.allows(collection_id, document_id)


def bearer_from_headers(headers: dict[str, str]) -> str | None:
    """The bearer token of an ``Authorization`` header (lower-case header names), or None.

    Raises:
        Unauthenticated: an Authorization header that is not ``Bearer <token>``.
    """
    raw = headers.get("authorization")
    if raw is None:
        return None
    scheme, _, token = raw.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthenticated("Authorization header must be 'Bearer <token>'")
    return token.strip()


def is_browser_request(headers: dict[str, str]) -> bool:
    """True when the request carries ``Origin`` or any ``Sec-Fetch-*`` header (SPEC §1)."""
    return "origin" in headers or any(h.startswith("sec-fetch-") for h in headers)


def agent_token_from_browser(token: str | None, headers: dict[str, str]) -> bool:
    """True when an agent credential (``ck_…``) comes with browser headers (:func:`is_browser_request`).

    The one rule every channel applies (SPEC §1): such a request is refused with
    :func:`browser_refused` — on HTTP when the request is authenticated, on the WebSocket at
    the handshake (credential in the ``Authorization`` header) or per operation (credential in
    ``connection_init``'s payload, judged by the handshake's headers).
    """
    return token is not None and token.startswith("ck_") and is_browser_request(headers)


def browser_refused() -> CairnError:
    """The 403 for an agent credential presented by a browser."""
    return AgentBrowserRequestRefused(
        "agent credentials are refused from browsers (the request carried Origin or Sec-Fetch-* "
        "headers); call from a server, or use a member token in the browser",
    )


def require_scope(principal: Principal, scope: str, *, field: str | None = None, what: str | None = None) -> None:
    """Check an agent holds ``scope`` and its creator still holds the scope's permissions.

    Members pass when their role holds the scope's permissions.

    Raises:
        Forbidden: ``AGENT_SCOPE_MISSING``, ``AGENT_CREDENTIAL_AUTHORITY_LOST`` or ``FORBIDDEN``.
    """
    missing = SCOPE_PERMISSIONS[scope] - principal.permissions
    if principal.is_agent:
        if scope not in principal.scopes:
            raise AgentScopeMissing(
                f"{what or 'this operation'} needs the {scope} scope; this credential has {sorted(principal.scopes)}",
                scope=scope,
                field=field,
            )
        if missing:
            raise AgentCredentialAuthorityLost(
                f"the member who created this credential no longer holds {sorted(missing)} "
                f"(current role: {principal.role})",
            )
    elif missing:
        raise Forbidden(
            f"{what or 'this operation'} needs {sorted(missing)}; your role is {principal.role}", field=field
        )
