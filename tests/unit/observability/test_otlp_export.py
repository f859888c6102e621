"""The standard OTEL environment alone exports a request's spans over OTLP/HTTP (protobuf).

A fresh Python process (the tracer provider is process-wide) builds the app with only
``OTEL_EXPORTER_OTLP_ENDPOINT`` and ``OTEL_SERVICE_NAME`` set, answers ``GET /healthz`` with a
``traceparent``, and exits (the SDK flushes at exit); a loopback HTTP server here plays the
collector and decodes what arrives with the OTLP protobuf types.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

ROOT = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.slow  # a fresh Python process builds the app (~10 s)
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
SCRIPT = f"""
import asyncio, sys, httpx
from cairn.app.core.config import Settings
from cairn.app.main import create_app

async def main():
    app = create_app(Settings(data_dir=sys.argv[1]))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://cairn") as c:
        r = await c.get("/healthz", headers={{"traceparent": "00-{TRACE_ID}-00f067aa0ba902b7-01"}})
    print(r.json()["extensions"]["envelope"]["traceId"])

asyncio.run(main())
"""


def test_otel_environment_exports_spans_over_otlp_http(tmp_path):
    received: list[tuple[str, bytes]] = []

    class Collector(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append((self.path, body))
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.end_headers()

        def log_message(self, *args) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Collector)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
        env.update(
            OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{server.server_port}",
            OTEL_SERVICE_NAME="cairn-under-test",
            PYTHONPATH=str(ROOT),
        )
        out = subprocess.run(
            [sys.executable, "-c", SCRIPT, str(tmp_path)],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"trace_{TRACE_ID}"
    assert [path for path, _ in received] == ["/v1/traces"]
    request = ExportTraceServiceRequest.FromString(received[0][1])
    resource = request.resource_spans[0].resource
    assert {a.key: a.value.string_value for a in resource.attributes}["service.name"] == "cairn-under-test"
    spans = [s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]
    assert [s.name for s in spans] == ["GET /healthz"]
    assert spans[0].trace_id.hex() == TRACE_ID and spans[0].parent_span_id.hex() == "00f067aa0ba902b7"
