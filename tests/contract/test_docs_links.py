"""Every relative link of the Markdown docs (README.md, BENCHMARKS.md, docs/) reaches a file, and
every ``#anchor`` a heading of it (GitHub's heading ids)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", ROOT / "BENCHMARKS.md", *sorted((ROOT / "docs").glob("*.md"))]
_FENCE = re.compile(r"^```.*?^```", re.S | re.M)
_LINK = re.compile(r"\]\(([^)\s]+)\)")


def heading_id(heading: str) -> str:
    """GitHub's id of a Markdown heading: lower-case, punctuation dropped (``-`` and ``_`` kept),
    spaces as ``-``."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _prose(path: Path) -> str:
    return _FENCE.sub("", path.read_text(encoding="utf-8"))


def _ids(path: Path) -> set[str]:
    return {heading_id(h) for h in re.findall(r"^#+ (.*)$", _prose(path), flags=re.M)}


def test_heading_id_follows_github():
    assert heading_id("Temporal reads and `sources: GRAPH`") == "temporal-reads-and-sources-graph"
    assert heading_id("Replay: prove what an agent was told") == "replay-prove-what-an-agent-was-told"
    assert heading_id("Health, readiness and outages") == "health-readiness-and-outages"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_reach_a_file_and_a_heading(doc: Path):
    broken = []
    for link in _LINK.findall(_prose(doc)):
        if re.match(r"[a-z]+:", link):  # http:, https:, mailto:
            continue
        path, _, anchor = link.partition("#")
        target = (doc.parent / path).resolve() if path else doc
        if not target.exists():
            broken.append(f"{link}: no file {target}")
        elif anchor and target.suffix == ".md" and anchor not in _ids(target):
            broken.append(f"{link}: no heading #{anchor} in {target.name}")
    assert not broken, f"{doc.name}: " + "; ".join(broken)
