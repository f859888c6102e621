"""HTTP transport: the GraphQL gate, GraphiQL and its static assets, the web console, WebSocket transport, the
NDJSON pack stream, document upload and decisions routes, ``/metrics``, enveloped edge errors.

Public surface: other packages import only the names below (import-linter contract in
pyproject.toml).
"""

from cairn.app.http.console import CONSOLE_DIR, console_page
from cairn.app.http.decisions import make_create_route, make_read_route
from cairn.app.http.documents import make_documents_route
from cairn.app.http.edges import EXCEPTION_HANDLERS, EnvelopedCORSMiddleware, deny_websocket, route_not_found
from cairn.app.http.gate import GraphQLGate
from cairn.app.http.graphiql import GRAPHIQL_HEADERS, STATIC_DIR, graphiql_html
from cairn.app.http.metrics import make_metrics_route
from cairn.app.http.readiness import Readiness
from cairn.app.http.replays import make_replay_route
from cairn.app.http.routes import error_response
from cairn.app.http.stream import make_stream_route
from cairn.app.http.ws import CairnTransportWS, refuse_agent_browser_handshake

__all__ = [
    "CONSOLE_DIR",
    "EXCEPTION_HANDLERS",
    "GRAPHIQL_HEADERS",
    "STATIC_DIR",
    "CairnTransportWS",
    "EnvelopedCORSMiddleware",
    "GraphQLGate",
    "Readiness",
    "console_page",
    "deny_websocket",
    "error_response",
    "graphiql_html",
    "make_create_route",
    "make_documents_route",
    "make_metrics_route",
    "make_read_route",
    "make_replay_route",
    "make_stream_route",
    "refuse_agent_browser_handshake",
    "route_not_found",
]
