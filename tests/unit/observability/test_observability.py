"""The OTEL environment is read as the specification says; Telemetry records only when on."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from cairn.app.observability import Metrics, Telemetry, TracingConfigError
from cairn.app.observability.tracing import exporters_from_env


def test_tracing_is_off_without_otel_environment():
    assert exporters_from_env({}) == []
    assert exporters_from_env({"OTEL_SERVICE_NAME": "cairn"}) == []  # a name alone exports nothing
    assert exporters_from_env({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}) == []
    assert exporters_from_env({"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}) == []


def test_an_exporter_or_an_endpoint_turns_tracing_on():
    assert exporters_from_env({"OTEL_TRACES_EXPORTER": "otlp,console"}) == ["otlp", "console"]
    assert exporters_from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}) == ["otlp"]
    assert exporters_from_env({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}) == ["otlp"]
    env = {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}
    assert exporters_from_env(env) == ["otlp"]


def test_what_is_not_shipped_is_refused_by_name():
    with pytest.raises(TracingConfigError, match="OTEL_TRACES_EXPORTER='zipkin' is not supported"):
        exporters_from_env({"OTEL_TRACES_EXPORTER": "zipkin"})
    with pytest.raises(TracingConfigError, match="OTEL_EXPORTER_OTLP_PROTOCOL='grpc' is not supported"):
        exporters_from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"})


def _values(m: Metrics) -> dict[tuple[str, tuple], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for f in text_string_to_metric_families(m.exposition().decode())
        for s in f.samples
    }


def test_telemetry_records_only_when_on():
    off = Telemetry()
    off.record_call(kind="query", operation="contextPack", status="OK", code="OK", seconds=0.1)  # no error, no state
    assert off.metrics is None
    on = Telemetry(Metrics())
    on.record_call(kind="mcp", operation="mcp.recall", status="REJECTED", code="AGENT_SCOPE_MISSING", seconds=0.02)
    on.record_pack(retrieval="LEXICAL", complete=False, timings={"lexicalMs": 8.0, "fusionMs": 0.5}, latency_ms=30.0)
    on.record_ingest(status="created", passages=4, seconds=0.5)
    v = _values(on.metrics)
    labels = (("channel", "mcp"), ("code", "AGENT_SCOPE_MISSING"), ("operation", "mcp.recall"), ("status", "REJECTED"))
    assert v[("cairn_calls_total", labels)] == 1
    assert v[("cairn_call_duration_seconds_sum", labels)] == pytest.approx(0.02)
    assert v[("cairn_packs_total", (("complete", "false"), ("retrieval", "LEXICAL")))] == 1
    assert v[("cairn_pack_stage_seconds_sum", (("stage", "lexical"),))] == pytest.approx(0.008)
    assert v[("cairn_pack_stage_seconds_sum", (("stage", "total"),))] == pytest.approx(0.03)
    assert v[("cairn_ingest_passages_total", ())] == 4
    assert Telemetry.from_settings(type("S", (), {"metrics": False})()).metrics is None
