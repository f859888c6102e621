"""The self-hosted GraphiQL page loads nothing from outside the server.

Checks ``app/http/static/graphiql/index.html`` (what ``GET /graphql`` returns) and the
assets it references: no external URL anywhere, every ``/static/graphiql/...`` file
present and non-empty, and each ``integrity`` attribute matching its vendored file.
"""

from __future__ import annotations

import base64
import hashlib
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from cairn.app.http.graphiql import STATIC_DIR, graphiql_html

PREFIX = "/static/graphiql/"
EXTERNAL = re.compile(r"https?://|(?<![:\w])//[\w.-]*cdn|\bunpkg\b|\bjsdelivr\b", re.IGNORECASE)


class _Refs(HTMLParser):
    """Collects every ``src``/``href`` (with its ``integrity``) in a page."""

    def __init__(self) -> None:
        super().__init__()
        self.refs: list[tuple[str, str, str | None]] = []  # (tag, url, integrity)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        for name in ("src", "href"):
            url = values.get(name)
            if url is not None:
                self.refs.append((tag, url, values.get("integrity")))


def _refs() -> list[tuple[str, str, str | None]]:
    parser = _Refs()
    parser.feed(graphiql_html())
    parser.close()
    return parser.refs


def _asset(url: str) -> Path:
    assert url.startswith(PREFIX), url
    path = (STATIC_DIR / url[len(PREFIX) :]).resolve()
    assert path.is_relative_to(STATIC_DIR.resolve()), url
    return path


def test_static_dir_holds_the_page() -> None:
    assert STATIC_DIR.is_dir()
    assert graphiql_html() == (STATIC_DIR / "index.html").read_text(encoding="utf-8")
    assert graphiql_html() is graphiql_html()  # read once, cached


@pytest.mark.parametrize("name", ["index.html", "cairn-graphiql.js", "cairn-graphiql.css"])
def test_no_external_url(name: str) -> None:
    text = (STATIC_DIR / name).read_text(encoding="utf-8")
    assert EXTERNAL.search(text) is None, EXTERNAL.search(text)


def test_every_reference_is_a_local_non_empty_asset() -> None:
    refs = _refs()
    urls = [url for _tag, url, _sri in refs]
    assert sum(tag == "script" for tag, _url, _sri in refs) >= 5
    for url in urls:
        if url.startswith("data:"):
            continue
        path = _asset(url)
        assert path.is_file(), f"{url} is missing from {STATIC_DIR}"
        assert path.stat().st_size > 0, f"{url} is empty"
    for needed in (
        "react.production.min.js",
        "react-dom.production.min.js",
        "graphiql.min.js",
        "graphiql.min.css",
        "plugin-explorer.umd.js",
        "plugin-explorer.css",
    ):
        assert PREFIX + needed in urls, needed


def test_integrity_attributes_match_the_vendored_files() -> None:
    checked = 0
    for _tag, url, sri in _refs():
        if sri is None:
            continue
        algo, _, expected = sri.partition("-")
        assert algo == "sha384", sri
        digest = base64.b64encode(hashlib.sha384(_asset(url).read_bytes()).digest()).decode()
        assert digest == expected, f"{url}: integrity {sri} != sha384-{digest} (re-vendored?)"
        checked += 1
    assert checked == 6


def test_page_keeps_subscriptions_and_shows_how_to_authenticate() -> None:
    html = graphiql_html()
    script = (STATIC_DIR / "cairn-graphiql.js").read_text(encoding="utf-8")
    assert '"Authorization": "Bearer cm_..."' in html
    assert "subscriptionUrl" in script and '"wss:"' in script and '"ws:"' in script
    assert "# Paste a query here. Set the Authorization header in" in script
    assert "Headers tab" in script
    assert "{{" not in html  # no Strawberry template placeholders


def test_versions_file_records_each_vendored_file() -> None:
    versions = (STATIC_DIR / "VERSIONS.txt").read_text(encoding="utf-8")
    for pkg in ("react@18.2.0", "react-dom@18.2.0", "graphiql@3.8.3", "@graphiql/plugin-explorer@1.0.2"):
        assert pkg in versions
    for _tag, url, sri in _refs():
        if url.startswith(PREFIX) and sri is not None:
            path = _asset(url)
            line = next(ln for ln in versions.splitlines() if ln.startswith(path.name + " "))
            assert "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest() in line
