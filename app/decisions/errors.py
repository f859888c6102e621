"""The Decision API's errors (SPEC §8): one class per code, each with its HTTP status.

Request refusals (400/413/415/409) come before a decision is accepted; :class:`JudgeError`
and its subclasses are failures after acceptance (the response carries ``decisionId``).
"""

from __future__ import annotations

from typing import Any

from cairn.app.core.errors import CairnError, Conflict


class DecisionInputError(CairnError):
    """The request is not a valid decision input (400 ``invalid_decision_input``)."""

    code = "invalid_decision_input"
    http_status = 400


class DecisionBodyTooLarge(CairnError):
    """The request body is over 1 MiB (413 ``request_too_large``)."""

    code = "request_too_large"
    http_status = 413


class DecisionUnsupportedMediaType(CairnError):
    """The body is not sent as ``application/json`` (415 ``unsupported_media_type``)."""

    code = "unsupported_media_type"
    http_status = 415


class DecisionMethodNotAllowed(CairnError):
    """A method the route does not serve, e.g. ``PUT /api/v1/decisions`` (405 ``method_not_allowed``;
    the response carries ``Allow``)."""

    code = "method_not_allowed"
    http_status = 405


class IdempotencyKeyReused(CairnError):
    """The Idempotency-Key was used with a different body (409 ``idempotency_key_reused``)."""

    code = "idempotency_key_reused"
    http_status = 409


class DecisionInProgress(CairnError):
    """The decision for this Idempotency-Key is still running (409 ``decision_in_progress``)."""

    code = "decision_in_progress"
    http_status = 409


class DecisionInternalError(CairnError):
    """The decision failed inside Cairn (500 ``decision_internal_error``; details in the log)."""

    code = "decision_internal_error"
    http_status = 500


class SessionFull(Conflict):
    """A session holds the most messages allowed (409 ``SESSION_FULL``, ``limit``)."""

    code = "SESSION_FULL"


class SessionConflict(Conflict):
    """The session changed while appending (409 ``SESSION_CONFLICT``); retry."""

    code = "SESSION_CONFLICT"


class SessionArchived(Conflict):
    """Messages cannot be added to an archived session (409 ``SESSION_ARCHIVED``)."""

    code = "SESSION_ARCHIVED"


class JudgeError(CairnError):
    """A failure while judging, with its SPEC §8 code and HTTP status (one subclass per code).

    ``transient`` failures (rate limits, timeouts, unavailability, cancellation) are not
    replayed for an Idempotency-Key: a retry with the same key runs again.

    Args:
        message: What failed.
        transient: Not stored for replay.
        retry_after: Seconds, as ``extensions.retryAfter`` (and ``Retry-After`` on 429).
        extra: More ``extensions`` members (a stored failure read back carries ``decisionId``).
    """

    code = "decision_upstream_error"
    http_status = 502

    def __init__(self, message: str, *, transient: bool = False, retry_after: int | None = None, **extra: Any) -> None:
        if retry_after is not None:
            extra["retryAfter"] = retry_after
        super().__init__(message, **extra)
        self.transient = transient
        self.retry_after = retry_after if retry_after is not None else self.extra.get("retryAfter")


class DecisionUpstreamError(JudgeError):
    """The judge endpoint answered with an error status (502 ``decision_upstream_error``)."""

    code = "decision_upstream_error"
    http_status = 502


class DecisionInvalidUpstreamResponse(JudgeError):
    """The judge's answer is unusable (502 ``decision_invalid_upstream_response``)."""

    code = "decision_invalid_upstream_response"
    http_status = 502


class DecisionUpstreamUnavailable(JudgeError):
    """The judge cannot be reached or loaded (503 ``decision_upstream_unavailable``)."""

    code = "decision_upstream_unavailable"
    http_status = 503


class DecisionQuotaExhausted(JudgeError):
    """The judge endpoint's quota is exhausted (402 ``decision_quota_exhausted``)."""

    code = "decision_quota_exhausted"
    http_status = 402


class DecisionRateLimited(JudgeError):
    """The judge endpoint is rate limiting (429 ``decision_rate_limited``, ``retryAfter``)."""

    code = "decision_rate_limited"
    http_status = 429


class DecisionTimeout(JudgeError):
    """The decision did not finish in time (504 ``decision_timeout``)."""

    code = "decision_timeout"
    http_status = 504


class DecisionCancelled(JudgeError):
    """The client went away while the decision ran (499 ``decision_cancelled``)."""

    code = "decision_cancelled"
    http_status = 499


class DecisionContextTooLarge(JudgeError):
    """The state or session is over the decision context budget (422 ``decision_context_too_large``)."""

    code = "decision_context_too_large"
    http_status = 422


class DecisionContextUnavailable(JudgeError):
    """The session has no messages to decide on (422 ``decision_context_unavailable``)."""

    code = "decision_context_unavailable"
    http_status = 422


class DecisionContextReadFailed(JudgeError):
    """Reading the session's messages failed (502 ``decision_context_read_failed``)."""

    code = "decision_context_read_failed"
    http_status = 502
