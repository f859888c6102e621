"""``GET /metrics``: the process's Prometheus metrics (:mod:`app.observability.metrics`).

Off by default: without ``CAIRN_METRICS=true`` the route answers exactly as an unknown route
does (enveloped 404 ``NOT_FOUND``), so a default server exposes nothing. On, it serves the text
exposition format. With ``CAIRN_METRICS_TOKEN`` (required when ``CAIRN_ENV=prod``) a scrape must
send ``Authorization: Bearer <token>`` (constant-time comparison); anything else gets an
enveloped 401 ``UNAUTHENTICATED`` with ``WWW-Authenticate``. The metrics name operations and
count calls by result: no tenant, credential, task or document appears in any label.

Scrapes are not themselves counted (like the health probes) so ``cairn_calls_total`` counts
only governed calls. Under ``cairn serve --workers N`` any process answers a scrape with the sum
over all the run's processes (:mod:`app.observability.metrics`), so the port is one target.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable

from prometheus_client import CONTENT_TYPE_LATEST
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from cairn.app.context import services_of
from cairn.app.core.errors import Unauthenticated
from cairn.app.governance import CallRecord, bearer_from_headers, get_operation
from cairn.app.http.edges import enveloped_json


def make_metrics_route() -> Callable[[Request], Awaitable[Response]]:
    """The ``GET /metrics`` endpoint (module doc).

    Raises:
        HTTPException: 404 when metrics are off (the app's enveloped 404 handler answers).
    """
    op = get_operation("GET /metrics")

    async def metrics(request: Request) -> Response:
        telemetry = services_of(request.scope).telemetry
        if telemetry.metrics is None:
            raise HTTPException(status_code=404)
        headers = {k.lower(): v for k, v in request.headers.items()}
        if telemetry.metrics_token is not None:
            try:
                sent = bearer_from_headers(headers) or ""
            except Unauthenticated:  # not "Bearer <token>": as wrong as a wrong token
                sent = ""
            if not hmac.compare_digest(sent.encode(), telemetry.metrics_token.encode()):
                return enveloped_json(
                    headers,
                    Unauthenticated("GET /metrics needs 'Authorization: Bearer <CAIRN_METRICS_TOKEN>'"),
                    401,
                    record=CallRecord(op.name, op.coordinate, op.capability),
                    extra_headers={"www-authenticate": 'Bearer realm="cairn-metrics"'},
                )
        return Response(telemetry.metrics.exposition(), media_type=CONTENT_TYPE_LATEST)

    return metrics
