"""Trace ids and the envelope object."""

from __future__ import annotations

from cairn.app.governance.envelope import CallRecord, EnvelopeState, trace_id_from_headers


def test_trace_id_sources_in_order():
    assert trace_id_from_headers({"x-cairn-trace": "trace_abc-1", "traceparent": "x"}) == "trace_abc-1"
    tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    assert trace_id_from_headers({"traceparent": tp}) == "trace_4bf92f3577b34da6a3ce929d0e0e4736"
    for bad in (
        {"traceparent": "00-" + "0" * 32 + "-00f067aa0ba902b7-01"},
        {"x-cairn-trace": "nope"},
        {"traceparent": "garbage"},
        {},
    ):
        tid = trace_id_from_headers(bad)
        assert tid.startswith("trace_") and len(tid) == 6 + 32 and tid != "trace_" + "0" * 32


def test_envelope_status_and_fields():
    state = EnvelopeState(trace_id="trace_x")
    state.calls.append(CallRecord("contextPack", "G1.U1.P1.Z1.A1", "context:pack"))
    env = state.build()
    assert env["protocol"] == "cairn.envelope.v1" and env["status"] == "OK"
    assert env["id"].startswith("env_") and env["issuedAt"].endswith("Z")
    assert (env["coordinate"], env["capability"], env["traceId"]) == ("G1.U1.P1.Z1.A1", "context:pack", "trace_x")
    state.calls.append(CallRecord("viewer", "G1.U1.P5.Z1.A1", "identity:read", status="ERROR"))
    assert state.build()["status"] == "ERROR" and len(state.build()["operations"]) == 2
    state.calls[0].status = "REJECTED"
    state.calls[0].boundary = {"decision": "BLOCKED"}
    env = state.build()
    assert env["status"] == "REJECTED" and env["boundary"] == {"decision": "BLOCKED"}
