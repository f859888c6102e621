"""The web console in a real browser: Debian's Chromium driven by Playwright, against a live
Cairn server on loopback (SQLite; the API under it is tested on both databases in tests/graphql).

- One server and one browser per test session; each test gets a fresh browser context (its own
  session storage) whose requests to anything but 127.0.0.1/localhost are aborted, and whose
  console errors and page errors fail the test.
- The browser is never downloaded: Playwright launches ``/usr/bin/chromium`` (``CAIRN_CHROMIUM``
  to point elsewhere), which ``scripts/install --dev`` installs with apt where it can. Without it
  (or without the ``playwright`` package) the tests skip with the reason, except where
  ``CAIRN_REQUIRE_BROWSER=1`` or ``CAIRN_REQUIRE_SHARED=1`` (CI), where they fail.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from cairn.app.core.config import Settings
from cairn.app.core.db import Database
from cairn.app.core.migrate import upgrade_database
from cairn.app.governance.operation import RATE_CLASSES
from cairn.app.identity import service as identity
from tests import local_http

CHROMIUM = os.environ.get("CAIRN_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SHOTS = os.environ.get("CAIRN_CONSOLE_SCREENSHOTS")  # a folder: tests save screenshots there

# An astral character (😀, 𠮷: two UTF-16 code units, one code point) before the cited
# paragraph shifts every JavaScript string index after it: the highlight must use code points.
ASTRAL_DOC = (
    "絵文字😀と𠮷の説明です。\n\n"
    "The 𠮷野家 gyudon chain serves beef bowls in Tokyo 😀 around the clock, 年中無休.\n\n"
    "Unrelated closing paragraph about weather."
)
CORPUS = [
    (
        "handbook",
        "packs",
        "Context packs",
        "A context pack is ranked, deduplicated, cited evidence packed into a token budget.",
    ),
    ("handbook", "gyudon", "牛丼チェーン", ASTRAL_DOC),
    (
        "handbook",
        "ja",
        "ベクトル検索",
        "ベクトル検索は文章の意味の近さで文書を探す方法です。東京のチームが開発しました。",
    ),
]


def _require(reason: str) -> None:
    if os.environ.get("CAIRN_REQUIRE_BROWSER") == "1" or os.environ.get("CAIRN_REQUIRE_SHARED") == "1":
        pytest.fail(f"browser tests are required here (CAIRN_REQUIRE_BROWSER/CAIRN_REQUIRE_SHARED) but {reason}")
    pytest.skip(reason)


@dataclass
class ConsoleServer:
    """A running server with workspace ``acme`` (owner, admin, editor, viewer members), a corpus
    and a tiny business database for query templates (tests/business.py)."""

    url: str
    tokens: dict[str, str] = field(default_factory=dict)
    ids: dict[str, str] = field(default_factory=dict)

    def gql(self, query: str, variables: dict | None = None, token: str | None = None, headers: dict | None = None):
        """POST /graphql as a non-browser client; returns the httpx response."""
        h = {"Authorization": f"Bearer {token}"} if token else {}
        # 120 s like tests/graphql's Live: httpx's default 5 s timed a remember out at load 19
        return local_http.post(
            f"{self.url}/graphql",
            json={"query": query, "variables": variables or {}},
            headers={**h, **(headers or {})},
            timeout=120,
        )

    def data(self, query: str, variables: dict | None = None, token: str | None = None) -> dict:
        """``data`` of a call that must succeed."""
        body = self.gql(query, variables, token).json()
        assert not body.get("errors"), body["errors"]
        return body["data"]


async def _bootstrap(url: str) -> tuple[dict[str, str], dict[str, str]]:
    db = Database(url)
    tokens, ids = {}, {}
    try:
        async with db.session() as s:
            ws = await identity.create_workspace(s, name="acme")
            ids["ws"] = ws.id
            for role in ("owner", "admin", "editor", "viewer"):
                m, t = await identity.create_member(s, workspace_id=ws.id, name=f"{role}-a", role=role)
                tokens[role], ids[role] = t.token, m.id
    finally:
        await db.dispose()
    return tokens, ids


@pytest.fixture(scope="session")
def chromium() -> str:
    """The Chromium binary, checked before anything starts (skip or fail with the reason)."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        _require("the playwright package is not installed (pip install -e '.[dev]')")
    if not (Path(CHROMIUM).exists() or shutil.which(CHROMIUM)):
        _require(f"no Chromium at {CHROMIUM} (scripts/install --dev installs Debian's chromium where apt can)")
    return CHROMIUM


@pytest.fixture(scope="package")
def console_server(tmp_path_factory, chromium) -> Iterator[ConsoleServer]:
    """The live server (uvicorn in a thread, like tests/graphql) with the console corpus."""
    from tests.business import business_url

    tmp = tmp_path_factory.mktemp("cairn-console")
    with business_url("sqlite", tmp) as business:
        yield from _serve(tmp, business)


def _serve(tmp: Path, business: str) -> Iterator[ConsoleServer]:
    from tests.graphql.conftest import _start

    settings = Settings(
        data_dir=tmp / "data",
        chunk_max_tokens=40,
        templates_database_url=business,
        **{f"rate_limit_{c}_per_minute": 0 for c in RATE_CLASSES},
    )
    upgrade_database(settings.resolved_database_url)
    tokens, ids = asyncio.run(_bootstrap(settings.resolved_database_url))
    server, thread, port = _start(settings)
    srv = ConsoleServer(f"http://127.0.0.1:{port}", tokens, ids)
    try:
        coll = srv.data('mutation{createCollection(name:"handbook"){id}}', token=tokens["owner"])
        ids["coll"] = coll["createCollection"]["id"]
        for _coll, ext, title, text in CORPUS:
            r = srv.data(
                "mutation($i:UpsertDocumentInput!){upsertDocument(input:$i){documentId}}",
                {"i": {"collectionId": ids["coll"], "externalId": ext, "title": title, "text": text}},
                tokens["owner"],
            )
            ids[f"doc:{ext}"] = r["upsertDocument"]["documentId"]
        yield srv
    finally:
        server.should_exit = True
        thread.join(timeout=30)


@pytest.fixture(scope="package")
def browser(chromium, console_server):
    """Debian's Chromium under Playwright, headless, once for tests/console (package scope: the loop Playwright keeps in this thread is gone before other packages run) (never a downloaded browser).

    After the server: Playwright's sync API keeps an event loop in this thread, so the server's
    set-up (``asyncio.run``) goes first, and tests run other asyncio code in a thread of its own.
    """
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


@dataclass
class Console:
    """One browser context on the console: its page, and what went wrong in it."""

    page: object
    server: ConsoleServer
    errors: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)

    def open(self, role: str, hash_: str = "#/explorer") -> None:
        """Load /console and sign in with ``role``'s member token."""
        page = self.page
        page.goto(f"{self.server.url}/console{hash_}")
        page.get_by_label("Member token").fill(self.server.tokens[role])
        page.get_by_role("button", name="Sign in").click()
        page.locator("#workspace").filter(has_text="acme").wait_for()

    def shot(self, name: str) -> None:
        """Save a full-page screenshot when CAIRN_CONSOLE_SCREENSHOTS names a folder."""
        if SHOTS:
            Path(SHOTS).mkdir(parents=True, exist_ok=True)
            self.page.screenshot(path=str(Path(SHOTS) / f"{name}.png"), full_page=True)


@pytest.fixture
def console(browser, console_server) -> Iterator[Console]:
    """A fresh context: outside network aborted, console errors collected and asserted empty."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=console_server.url)
    page = context.new_page()
    c = Console(page, console_server)

    def route(r):
        host = urlsplit(r.request.url).hostname or ""
        if host in ("127.0.0.1", "localhost", "::1") or r.request.url.startswith(("data:", "blob:")):
            r.continue_()
        else:
            c.blocked.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    page.on("console", lambda m: c.errors.append(f"console.{m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: c.errors.append(f"page error: {e}"))
    page.set_default_timeout(20_000)
    try:
        yield c
        assert c.blocked == [], f"the console tried to reach outside hosts: {c.blocked}"
        assert c.errors == [], c.errors
    finally:
        context.close()
