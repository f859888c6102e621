"""The governed HTTP routes (app/http/routes.py): one log line per request, whatever the outcome."""

from __future__ import annotations

import logging
import time

import pytest

from tests import local_http


class _Calls(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def of(self, trace: str) -> list[tuple[str, str]]:
        return [(r.operation, r.status) for r in list(self.records) if getattr(r, "trace_id", None) == trace]


@pytest.fixture
def calls():
    logger = logging.getLogger("cairn.adapter")
    handler, level = _Calls(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def _logged(calls: _Calls, trace: str, wait: float = 5.0) -> list[tuple[str, str]]:
    """The calls logged for ``trace`` once the server has logged one (a stream logs as it ends)."""
    deadline = time.monotonic() + wait
    while not calls.of(trace) and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.1)  # a second line would come right after the first
    return calls.of(trace)


STREAM = "POST /v1/context-packs/stream"


@pytest.mark.parametrize(
    "label,token,body,ctype,status,logged",
    [
        ("streamed", "agent", b'{"task":"When are invoices generated?"}', "application/json", 200, "OK"),
        ("bad input", "agent", b'{"task":"x","bogus":1}', "application/json", 400, "ERROR"),
        ("wrong content type", "agent", b'{"task":"x"}', "text/plain", 415, "ERROR"),
        ("no credential", None, b'{"task":"x"}', "application/json", 401, "REJECTED"),
    ],
)
def test_the_ndjson_route_logs_each_request_once(live, calls, label, token, body, ctype, status, logged):
    trace = f"trace_routes_{label.replace(' ', '_')}_{live.backend}"
    headers = {"content-type": ctype, "x-cairn-trace": trace}
    if token:
        headers["Authorization"] = f"Bearer {live.tokens[token]}"
    with local_http.stream(
        "POST", f"{live.url}/v1/context-packs/stream", content=body, headers=headers, timeout=60
    ) as r:
        assert r.status_code == status
        assert r.headers["x-cairn-trace"] == trace
        r.read()
    assert _logged(calls, trace) == [(STREAM, logged)]


def test_the_decision_routes_log_each_request_once(live, calls):
    auth = {"Authorization": f"Bearer {live.tokens['owner']}"}
    trace = f"trace_routes_read_missing_{live.backend}"
    r = local_http.get(f"{live.url}/api/v1/decisions/dec_missing", headers={**auth, "x-cairn-trace": trace}, timeout=30)
    assert r.status_code == 404 and r.json()["extensions"]["envelope"]["traceId"] == trace == r.json()["request_id"]
    assert _logged(calls, trace) == [("GET /api/v1/decisions/{decision_id}", "ERROR")]
    trace = f"trace_routes_create_415_{live.backend}"
    r = local_http.post(
        f"{live.url}/api/v1/decisions",
        content=b"{}",
        headers={**auth, "x-cairn-trace": trace, "content-type": "text/plain"},
        timeout=30,
    )
    assert r.status_code == 415 and r.json()["error"]["code"] == "unsupported_media_type"
    assert _logged(calls, trace) == [("POST /api/v1/decisions", "ERROR")]


def test_a_404_lists_every_route_the_app_serves(live):
    """The 404 message is generated from the app's routes: it names `POST /mcp` (the hand-written
    list it replaced did not) and exactly the routes `create_app` builds, nothing more or less."""
    from starlette.routing import Mount

    from cairn.app.main import create_app

    r = local_http.get(f"{live.url}/nope", timeout=10)
    assert r.status_code == 404
    message = r.json()["errors"][0]["message"]
    head, _, listed = message.partition("; Cairn serves ")
    assert head == "no route GET /nope"
    routes = listed.split(", ")
    assert {"POST /mcp", "GET|POST /graphql", "WS /graphql", "GET /api/v1/decisions/{decision_id}"} <= set(routes)
    served = [route.path for route in create_app(live.settings).routes if not isinstance(route, Mount)]
    assert [entry.split(" ", 1)[1] for entry in routes] == served


def test_a_switched_off_route_is_not_listed_as_served(live):
    """With metrics off, ``GET /metrics`` is an unknown route and the 404 does not claim it is served."""
    assert live.settings.metrics is False
    r = local_http.get(f"{live.url}/metrics", timeout=10)
    assert r.status_code == 404
    head, _, listed = r.json()["errors"][0]["message"].partition("; Cairn serves ")
    assert head == "no route GET /metrics"
    assert "GET|POST /graphql" in listed.split(", ") and "/metrics" not in listed


def test_head_of_the_graphiql_page_answers_like_get_without_a_body(live):
    got = local_http.get(f"{live.url}/graphql", headers={"Accept": "text/html"}, timeout=10)
    assert got.status_code == 200 and got.headers["content-type"].startswith("text/html") and got.content
    head = local_http.request("HEAD", f"{live.url}/graphql", headers={"Accept": "text/html"}, timeout=10)
    assert head.status_code == 200, head.text
    assert head.headers["content-type"] == got.headers["content-type"]
    assert head.headers["content-length"] == str(len(got.content)) and head.content == b""
