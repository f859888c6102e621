"""Context gaps (issue 16): an agent (scope ``gaps:report``) or a member reports what context
was missing for a task; editors and above list the reports, newest first, paged.

Public surface: other packages import only the names below (import-linter contract in
pyproject.toml).
"""

from cairn.app.gaps.errors import (
    ContextGapCursorInvalid,
    ContextGapPageSizeOutOfRange,
    ContextGapResolved,
    ContextGapTextTooLong,
)
from cairn.app.gaps.operations import (
    GAP_LIST_DEFAULT,
    GAP_LIST_MAX,
    MISSING_MAX,
    REASON_MAX,
    STATUSES,
    TASK_MAX,
    GapDismissal,
    GapListRequest,
    GapPage,
    GapReport,
    GapResolution,
    GapView,
    dismiss_gap,
    list_gaps,
    report_gap,
    resolve_gap,
    validate_list,
    validate_report,
)

__all__ = [
    "GAP_LIST_DEFAULT",
    "GAP_LIST_MAX",
    "MISSING_MAX",
    "REASON_MAX",
    "STATUSES",
    "TASK_MAX",
    "ContextGapCursorInvalid",
    "ContextGapPageSizeOutOfRange",
    "ContextGapResolved",
    "ContextGapTextTooLong",
    "GapDismissal",
    "GapListRequest",
    "GapPage",
    "GapReport",
    "GapResolution",
    "GapView",
    "dismiss_gap",
    "list_gaps",
    "report_gap",
    "resolve_gap",
    "validate_list",
    "validate_report",
]
