"""Cairn's self-hosted GraphiQL page.

Strawberry's built-in GraphiQL page loads React, GraphiQL and the explorer plugin from a
public CDN, which leaves a blank page on servers without internet. Cairn instead serves
a static page whose every script and stylesheet lives in :data:`STATIC_DIR` (vendored,
byte-identical to the npm packages, by ``scripts/vendor-graphiql``; versions and hashes
in ``VERSIONS.txt`` there). ``app.main`` returns :func:`graphiql_html` for
``GET /graphql`` with :data:`GRAPHIQL_HEADERS` and mounts :data:`STATIC_DIR` at
``/static/graphiql``.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from cairn.app.http.console import PAGE_HEADERS

STATIC_DIR: Path = Path(__file__).resolve().parent / "static" / "graphiql"
"""The folder served at ``/static/graphiql``: ``index.html`` and the assets it loads."""

INDEX_HTML: Path = STATIC_DIR / "index.html"
"""The GraphiQL page returned by :func:`graphiql_html`."""

GRAPHIQL_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "font-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
"""Content-Security-Policy of the GraphiQL page: its vendored scripts and styles only (no inline
script: the bootstrap is ``cairn-graphiql.js``), fonts and icons from its stylesheet's
``data:`` URLs, calls to its own origin only (``'self'`` covers the same-origin WebSocket), no
framing. The page holds a member token in its Headers tab, as the console does."""

GRAPHIQL_HEADERS = {"content-security-policy": GRAPHIQL_CSP, **PAGE_HEADERS}
"""Every header of ``GET /graphql``'s page: :data:`GRAPHIQL_CSP` and the console's :data:`PAGE_HEADERS`."""


@lru_cache(maxsize=1)
def graphiql_html() -> str:
    """Return the GraphiQL page, read from ``index.html`` once and then cached.

    Returns:
        The page's HTML. It references only ``/static/graphiql/...`` assets, sends
        queries to ``/graphql`` on the same origin and subscriptions to
        ``ws(s)://<host>/graphql`` (graphql-transport-ws).

    Raises:
        FileNotFoundError: ``index.html`` is missing from :data:`STATIC_DIR` (a broken
            install; the file ships as package data).
    """
    return INDEX_HTML.read_text(encoding="utf-8")
