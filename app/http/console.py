"""Cairn's web console: static HTML, CSS and ES modules served at ``/console``.

The console is a client like any other: the browser signs in with a *member* token (kept in
session storage), calls ``POST /graphql`` and subscribes over ``WS /graphql``
(graphql-transport-ws) with the vendored ``graphql-ws`` client. Nothing is built or fetched
at run time: every file lives in :data:`CONSOLE_DIR` (third-party files under ``vendor/``,
byte-identical to their npm package, by ``scripts/vendor-console``), so the console works
offline and needs no Node on the server or the user's machine.

``app.main`` serves :func:`console_page` at ``GET /console`` and mounts :data:`CONSOLE_DIR`
at ``/console`` for the assets.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from starlette.requests import Request
from starlette.responses import HTMLResponse

CONSOLE_DIR: Path = Path(__file__).resolve().parent / "static" / "console"
"""The folder served under ``/console/``: ``index.html``, ``console.css``, ``js/`` and ``vendor/``."""

CONSOLE_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "font-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
"""Content-Security-Policy of the console page: its own scripts and styles only, calls only to
its own origin (``'self'`` covers the same-origin WebSocket), no framing. A token in session
storage is only as safe as the page that holds it, so no inline script and no other origin."""


PAGE_HEADERS = {
    "cache-control": "no-store",
    "referrer-policy": "no-referrer",
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
}
"""The headers of every HTML page Cairn serves (the console, GraphiQL) beside its CSP: never cached,
no referrer, no MIME sniffing, never framed (``X-Frame-Options`` for browsers that predate
CSP's ``frame-ancestors``)."""


@lru_cache(maxsize=1)
def _index_html() -> str:
    return (CONSOLE_DIR / "index.html").read_text(encoding="utf-8")


async def console_page(request: Request) -> HTMLResponse:
    """``GET /console``: the console's single page, with :data:`CONSOLE_CSP` and :data:`PAGE_HEADERS`.

    Raises:
        FileNotFoundError: ``index.html`` is missing (a broken install; it ships as package data).
    """
    return HTMLResponse(
        _index_html(),
        headers={"content-security-policy": CONSOLE_CSP, **PAGE_HEADERS},
    )
