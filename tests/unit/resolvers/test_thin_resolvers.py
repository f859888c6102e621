"""Resolvers convert GraphQL input, call one service and convert its result (issue 12 step 4):
no session, no SQL, no database handle in ``resolvers/``. The import side (no sqlalchemy,
sqlmodel, ``app.core.models``, ``app.core.db``) is an import-linter contract in pyproject.toml."""

from __future__ import annotations

import re
from pathlib import Path

RESOLVERS = Path(__file__).resolve().parents[3] / "resolvers"
FORBIDDEN = {
    "opens a DB session": re.compile(r"\.session\(\)"),
    "builds SQL": re.compile(r"(?<![\w.])(select|update|delete|insert)\("),
    "runs SQL": re.compile(r"(?<=\w)\.execute\("),  # s.execute(…), not super().execute(…)
    "reaches the database or a store": re.compile(r"services\.(db|ontology|decisions|indexes)\b"),
}


def offences(text: str) -> list[str]:
    """``line: what`` for every forbidden pattern in a resolver module's source."""
    found = []
    for n, line in enumerate(text.splitlines(), 1):
        for what, pattern in FORBIDDEN.items():
            if pattern.search(line):
                found.append(f"{n}: {what}: {line.strip()}")
    return found


def test_the_patterns_catch_what_resolvers_used_to_do():
    before = """
        async with info.context.services.db.session() as s:
            rows = await s.execute(select(Member))
        page = await query_instances(services.ontology, services.db, q=q)
    """
    assert len(offences(before)) == 5
    assert offences("return await super().execute(query)\nextensions.update(more)") == []


def test_no_resolver_opens_a_session_or_runs_sql():
    report = {p.name: offences(p.read_text(encoding="utf-8")) for p in sorted(RESOLVERS.glob("*.py"))}
    assert {name: found for name, found in report.items() if found} == {}
