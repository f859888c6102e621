"""What observability costs: contextPack through the ASGI app with metrics/tracing off and on.

Usage: ``.venv/bin/python -m bench.observability [--docs 300] [--queries 40] [--rounds 4]``

1. Ingests the first ``--docs`` SciFact documents (``../shared/data/scifact``) into a temp
   data dir (SQLite, Whoosh, Qdrant Edge, the real MiniLM), one member.
2. Builds three ASGI apps over the same services and sends ``--queries`` SciFact queries per
   round as ``POST /graphql`` contextPack calls (httpx.ASGITransport: no sockets, so the
   difference is the server's own work):
   - ``off``: the default — no ``OTEL_*`` environment (no tracer provider), ``CAIRN_METRICS``
     unset;
   - ``metrics``: ``CAIRN_METRICS`` on (counters and histograms recorded per call, per pack);
   - ``traced``: metrics on and the OpenTelemetry SDK installed with a batch processor and an
     exporter that drops the spans (the cost of making ~25 spans per pack, incl. SQL spans,
     without the network). Tracing cannot be uninstalled in a process, so ``off`` and
     ``metrics`` alternate in rounds first, then ``traced`` and ``metrics`` alternate.
3. Prints p50/mean of the client-side call time per mode and the overhead against ``off``,
   and micro-costs of the hooks (a no-op span, a call recorded with metrics off and on).

Speed is measured here and printed, never asserted in tests.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import statistics
import tempfile
import time
import timeit
from collections.abc import Sequence
from pathlib import Path

import httpx

from bench.common import SHARED, machine, read_jsonl_gz

QUERY = "query($i: ContextPackInput!) { contextPack(input: $i) { latencyMs items { rank } } }"


class _Drop:
    """A span exporter with nowhere to send: accepts and discards (the SDK's work, no network)."""

    def export(self, spans: Sequence[object]) -> object:
        from opentelemetry.sdk.trace.export import SpanExportResult

        self.count = getattr(self, "count", 0) + len(spans)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


async def _setup(data_dir: Path, docs: int):
    from app.context import bootstrap
    from app.core.config import Settings
    from app.core.db import Database
    from app.core.migrate import upgrade_database
    from app.corpus import SourceDocument, ingest_documents
    from app.identity import service as identity

    settings = Settings(data_dir=data_dir, **{f"rate_limit_{c}_per_minute": 0 for c in ("packs", "reads", "writes")})
    await asyncio.to_thread(upgrade_database, settings.resolved_database_url)
    db = Database(settings.resolved_database_url)
    async with db.session() as s:
        ws = await identity.create_workspace(s, name="bench")
        _m, token = await identity.create_member(s, workspace_id=ws.id, name="owner", role="owner")
    await db.dispose()
    services = bootstrap(settings)
    rows = []
    for row in read_jsonl_gz(SHARED / "scifact" / "corpus.jsonl.gz"):
        rows.append(SourceDocument(row["_id"], row.get("title") or row["_id"], row["text"]))
        if len(rows) >= docs:
            break
    t = time.perf_counter()
    report = await ingest_documents(
        services.db, services.indexes, workspace_id=ws.id, collection="scifact", documents=iter(rows)
    )
    print(f"ingested {report.created} documents ({report.new_passages} passages) in {time.perf_counter() - t:.1f} s")
    return services, token.token


async def _round(client: httpx.AsyncClient, token: str, queries: list[str]) -> list[float]:
    out = []
    for q in queries:
        t = time.perf_counter()
        r = await client.post(
            "/graphql",
            json={"query": QUERY, "variables": {"i": {"task": q}}},
            headers={"Authorization": f"Bearer {token}"},
        )
        out.append((time.perf_counter() - t) * 1000)
        body = r.json()
        if body.get("errors"):
            raise RuntimeError(body["errors"])
    return out


def _client(services) -> httpx.AsyncClient:
    from app.main import create_app

    app = create_app(services.settings, services=services)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://cairn", timeout=60)


def _micro() -> dict[str, float]:
    """Nanoseconds per call of the hooks with tracing off (run before tracing is installed)."""
    from app.observability import Metrics, Telemetry, span

    n = 200_000
    off, on = Telemetry(), Telemetry(Metrics())
    kw = dict(kind="query", operation="contextPack", status="OK", code="OK", seconds=0.04)

    def noop_span() -> None:
        with span("pack.fusion"):
            pass

    return {
        "span (tracing off)": timeit.timeit(noop_span, number=n) / n * 1e9,
        "record_call (metrics off)": timeit.timeit(lambda: off.record_call(**kw), number=n) / n * 1e9,
        "record_call (metrics on)": timeit.timeit(lambda: on.record_call(**kw), number=n) / n * 1e9,
    }


async def main(docs: int, n_queries: int, rounds: int) -> None:
    from app.observability import Metrics, Telemetry, install, instrument_engine

    queries = [json.loads(line)["text"] for line in (SHARED / "scifact" / "queries.jsonl").read_text().splitlines()]
    queries = queries[:n_queries]
    micro = _micro()
    with tempfile.TemporaryDirectory() as tmp:
        services, token = await _setup(Path(tmp), docs)
        metered = dataclasses.replace(services, telemetry=Telemetry(Metrics()))
        times: dict[str, list[float]] = {"off": [], "metrics": [], "traced": []}
        async with _client(services) as off, _client(metered) as met:
            await _round(off, token, queries[:10])  # warm-up (model, caches)
            await _round(met, token, queries[:10])
            for r in range(rounds):
                order = [("off", off), ("metrics", met)] if r % 2 == 0 else [("metrics", met), ("off", off)]
                for name, c in order:
                    times[name] += await _round(c, token, queries)
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        exporter = _Drop()
        provider = install(BatchSpanProcessor(exporter))  # type: ignore[arg-type]
        instrument_engine(services.db.engine)  # what bootstrap does when tracing is on
        traced_times: list[float] = []
        metrics_again: list[float] = []
        async with _client(metered) as met:
            await _round(met, token, queries[:10])
            for r in range(rounds):
                order = [("traced", traced_times), ("metrics", metrics_again)]
                if r % 2:
                    order.reverse()
                for _name, sink in order:
                    sink += await _round(met, token, queries)
        provider.force_flush()
        times["traced"] = traced_times
        services.indexes.close()
        await services.query_database.close()
        await services.db.dispose()

    print(f"\nmachine: {machine()}")
    print(
        f"contextPack via POST /graphql (ASGI, in-process), {docs} SciFact docs, {len(queries)} queries x {rounds} rounds"
    )
    base = statistics.median(times["off"])
    base_mean = statistics.fmean(times["off"])
    print(f"{'mode':<34}{'p50 ms':>9}{'mean ms':>9}{'p50 vs off':>12}")
    rows = [
        ("off (default)", times["off"]),
        ("metrics on", times["metrics"]),
        ("metrics on (tracing phase)", metrics_again),
        ("metrics + tracing (SDK, dropped)", times["traced"]),
    ]
    for name, values in rows:
        p50 = statistics.median(values)
        print(f"{name:<34}{p50:>9.2f}{statistics.fmean(values):>9.2f}{(p50 - base) / base * 100:>+11.1f}%")
    tr, ma = statistics.median(times["traced"]), statistics.median(metrics_again)
    print(f"tracing vs metrics-only in the same phase: {(tr - ma) / ma * 100:+.1f}% p50 ({tr - ma:+.2f} ms)")
    print(f"spans exported per traced pack call: {getattr(exporter, 'count', 0) / (len(traced_times) + 10):.1f}")
    print(f"mean of off: {base_mean:.2f} ms")
    print("\nhook micro-costs (ns per call):")
    for k, v in micro.items():
        print(f"  {k:<28}{v:>8.0f}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--docs", type=int, default=300)
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=4)
    a = ap.parse_args()
    asyncio.run(main(a.docs, a.queries, a.rounds))
