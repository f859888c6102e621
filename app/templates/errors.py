"""Query templates' errors: one class per code, each with its HTTP status."""

from __future__ import annotations

from cairn.app.core.errors import BadInput, CairnError

__all__ = [
    "QueryFailed",
    "QueryParameterInvalid",
    "QueryTemplateInvalid",
    "QueryTemplateRefused",
    "QueryTimeout",
    "TemplateNotApproved",
    "TemplatesDatabaseMissing",
    "TemplatesDatabaseUnavailable",
]


class QueryParameterInvalid(BadInput):
    """A parameter value an agent sent breaks its declaration (400 ``QUERY_PARAMETER_INVALID``).

    ``extensions``: ``field`` (``parameters.<name>`` or ``parameters.<name>[i]``),
    ``parameter``, ``reason`` (``UNKNOWN``, ``MISSING``, ``WRONG_TYPE``, ``TOO_SHORT``,
    ``TOO_LONG``, ``TOO_SMALL``, ``TOO_LARGE``, ``TOO_FEW``, ``TOO_MANY``, ``PATTERN``,
    ``NOT_ALLOWED``, ``BAD_FORMAT``) and, where one applies, ``limit``.
    """

    code = "QUERY_PARAMETER_INVALID"


class QueryTemplateInvalid(BadInput):
    """A template declaration (parameters, name, SQL text) breaks a rule (400 ``BAD_USER_INPUT``)."""


class QueryTemplateRefused(BadInput):
    """The SQL breaks an approval rule (400 ``QUERY_TEMPLATE_REFUSED``); ``violations`` lists each."""

    code = "QUERY_TEMPLATE_REFUSED"


class TemplateNotApproved(CairnError):
    """The template has no approval for its current content and dialect (409 ``QUERY_TEMPLATE_NOT_APPROVED``)."""

    code = "QUERY_TEMPLATE_NOT_APPROVED"
    http_status = 409


class QueryTimeout(CairnError):
    """The statement ran past the timeout and was stopped (504 ``QUERY_TIMEOUT``)."""

    code = "QUERY_TIMEOUT"
    http_status = 504


class QueryFailed(CairnError):
    """The business database refused the statement (500 ``QUERY_TEMPLATE_FAILED``; no SQL shown)."""

    code = "QUERY_TEMPLATE_FAILED"
    http_status = 500


class TemplatesDatabaseUnavailable(CairnError):
    """The business database cannot be opened (503 ``TEMPLATES_DATABASE_UNAVAILABLE``; details in the log)."""

    code = "TEMPLATES_DATABASE_UNAVAILABLE"
    http_status = 503


class TemplatesDatabaseMissing(CairnError):
    """No business database is configured (503 ``TEMPLATES_DATABASE_NOT_CONFIGURED``)."""

    code = "TEMPLATES_DATABASE_NOT_CONFIGURED"
    http_status = 503
