"""The errors of the HTTP transport (the GraphQL gate and the governed routes).

Each class fixes its ``extensions.code`` and HTTP status; the message names what to change.
"""

from __future__ import annotations

from cairn.app.core.errors import CairnError


class BadRequest(CairnError):
    """The request is not one well-formed operation (400 ``BAD_REQUEST``)."""

    code = "BAD_REQUEST"
    http_status = 400


class UnsupportedMediaType(CairnError):
    """The body is not sent as ``application/json`` (415 ``BAD_REQUEST``)."""

    code = "BAD_REQUEST"
    http_status = 415


class BodyTooLarge(CairnError):
    """Request body over the limit (413 ``BAD_USER_INPUT``)."""

    code = "BAD_USER_INPUT"
    http_status = 413


class RequestTimeout(CairnError):
    """The request body did not arrive in time (408 ``REQUEST_TIMEOUT``)."""

    code = "REQUEST_TIMEOUT"
    http_status = 408
