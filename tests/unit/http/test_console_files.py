"""The console's files: every module import resolves to a shipped file, nothing points outside
the server, and the vendored graphql-ws is byte-identical to what VERSIONS.txt records."""

from __future__ import annotations

import hashlib
import re

import pytest

from cairn.app.http.console import CONSOLE_CSP, CONSOLE_DIR

EXTERNAL = re.compile(r"https?://|\bcdn\b|\bunpkg\b|\bjsdelivr\b", re.IGNORECASE)
IMPORT = re.compile(r"""(?:^|\n)\s*(?:import|export)\s[^;]*?from\s+["']([^"']+)["']""")
OWN = sorted(p for p in CONSOLE_DIR.rglob("*") if p.suffix in {".html", ".css", ".js"} and "vendor" not in p.parts)


@pytest.mark.parametrize("path", OWN, ids=lambda p: str(p.relative_to(CONSOLE_DIR)))
def test_own_files_reference_nothing_outside_the_server(path) -> None:
    text = path.read_text(encoding="utf-8")
    assert not EXTERNAL.search(text), EXTERNAL.search(text)


def test_every_module_import_resolves_to_a_shipped_file() -> None:
    modules = list(CONSOLE_DIR.rglob("*.js"))
    assert modules
    for module in modules:
        for spec in IMPORT.findall(module.read_text(encoding="utf-8")):
            assert spec.startswith("./") or spec.startswith("../"), (module, spec)
            assert (module.parent / spec).resolve().is_file(), (module, spec)


def test_vendored_graphql_ws_matches_versions_txt() -> None:
    vendor = CONSOLE_DIR / "vendor" / "graphql-ws"
    lines = (vendor / "VERSIONS.txt").read_text(encoding="utf-8").splitlines()
    assert "graphql-ws@6.4.2" in lines[0]
    recorded = dict(re.findall(r"^(\S+)\s+sha256 ([0-9a-f]{64})", "\n".join(lines), re.MULTILINE))
    assert set(recorded) == {"client.js", "common-CGW11Fyb.js"}
    for name, digest in recorded.items():
        assert hashlib.sha256((vendor / name).read_bytes()).hexdigest() == digest, name
    assert "MIT" in (vendor / "LICENSE.md").read_text(encoding="utf-8")


def test_the_page_policy_allows_only_its_own_origin() -> None:
    assert "script-src 'self'" in CONSOLE_CSP and "connect-src 'self'" in CONSOLE_CSP
    assert "unsafe" not in CONSOLE_CSP
