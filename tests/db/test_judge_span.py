"""The decision judge's work is a trace span (tracing on), with the judge's name and outcome."""

from __future__ import annotations

import socket

import pytest
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from cairn.app.decisions.judges import OpenAIJudge
from cairn.app.decisions.request import validate_request
from cairn.app.decisions.service import DecisionRunner
from cairn.app.observability import install, span
from tests import factories

REQ = {
    "state": {"message": "resolved"},
    "questions": [{"type": "CHOICE", "instructions": "Resolved?", "choices": [{"value": True}, {"value": False}]}],
}


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def db_url(sqlite_db_url):
    """SQLite only (tests/db/conftest.py): the span is made around the judge call, whatever the
    engine that stores the decision (the decision's rows are tested on both engines by
    tests/db/test_decision_runner.py)."""
    return sqlite_db_url


async def test_the_judge_runs_in_a_span_that_records_its_failure(db):
    exporter = InMemorySpanExporter()
    install(SimpleSpanProcessor(exporter))
    async with db.session() as s:
        ws = await factories.workspace(s)
        m, _token = await factories.member(s, workspace_id=ws.id, role="editor")
    judge = OpenAIJudge(f"http://127.0.0.1:{_closed_port()}/v1", "m", timeout=5)
    runner = DecisionRunner(db, lambda: judge, timeout_seconds=10)
    with span("caller"):
        out = await runner.create(
            factories.member_principal(m), prepare=lambda: validate_request(REQ), sha="c" * 64, key="k", source="api"
        )
    assert out.error.code == "decision_upstream_unavailable"
    spans = exporter.get_finished_spans()
    caller = next(s for s in spans if s.name == "caller")
    judged = [s for s in spans if s.name == "decision.judge"]
    assert len(judged) == 1
    assert judged[0].parent.span_id == caller.context.span_id
    assert judged[0].attributes["cairn.judge"] == judge.name
    assert judged[0].attributes["cairn.decision_id"] == out.error.extra["decisionId"]
    assert judged[0].status.status_code is StatusCode.ERROR  # the judge's exception passed through it
