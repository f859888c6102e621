"""Who may call what: tokens and principals (auth), the operation registry, responsibility
boundaries, the governed-call adapter (the ``Governed`` field extension), what an operation receives
(the ``ServicesPort`` and ``RequestContextPort`` Protocols), the response
envelope and the registry/schema contract check.

Public surface: other packages import only the names below (import-linter contract in
pyproject.toml).
"""

from cairn.app.governance.adapter import (
    authorize,
    check_permissions,
    log_call,
    mark_failed,
    may_call,
    meter_document,
    normalized_arguments,
    start_call,
    status_of,
    to_graphql_error,
)
from cairn.app.governance.auth import (
    DEFAULT_SCOPES,
    MAX_ACTIVE_CREDENTIALS,
    MAX_EXPIRY_DAYS,
    MIN_EXPIRY_DAYS,
    ROLE_PERMISSIONS,
    ROLES,
    SCOPE_PERMISSIONS,
    ContextScope,
    Principal,
    agent_token_from_browser,
    bearer_from_headers,
    browser_refused,
    is_browser_request,
    issue_token,
    parse_token,
    require_scope,
    secret_matches,
)
from cairn.app.governance.envelope import CallRecord, EnvelopeState, trace_id_from_headers
from cairn.app.governance.extension import Governed
from cairn.app.governance.operation import Operation
from cairn.app.governance.ports import DatabasePort, IndexesPort, RequestContextPort, ServicesPort
from cairn.app.governance.rate_limits import RateLimited, RateLimiter
from cairn.app.governance.registry import PROFILE_LISTS, REGISTRY, capabilities_for_scopes, get_operation

__all__ = [
    "DEFAULT_SCOPES",
    "MAX_ACTIVE_CREDENTIALS",
    "MAX_EXPIRY_DAYS",
    "MIN_EXPIRY_DAYS",
    "PROFILE_LISTS",
    "REGISTRY",
    "ROLES",
    "ROLE_PERMISSIONS",
    "SCOPE_PERMISSIONS",
    "CallRecord",
    "ContextScope",
    "DatabasePort",
    "EnvelopeState",
    "Governed",
    "IndexesPort",
    "Operation",
    "Principal",
    "RateLimited",
    "RateLimiter",
    "RequestContextPort",
    "ServicesPort",
    "agent_token_from_browser",
    "authorize",
    "bearer_from_headers",
    "browser_refused",
    "capabilities_for_scopes",
    "check_permissions",
    "get_operation",
    "is_browser_request",
    "issue_token",
    "log_call",
    "mark_failed",
    "may_call",
    "meter_document",
    "normalized_arguments",
    "parse_token",
    "require_scope",
    "secret_matches",
    "start_call",
    "status_of",
    "to_graphql_error",
    "trace_id_from_headers",
]
