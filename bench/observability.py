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
    from cairn.app.context import bootstrap
    from cairn.app.core.config import Settings
    from cairn.app.core.db import Database
    from cairn.app.core.migrate import upgrade_database
    from cairn.app.corpus import SourceDocument, ingest_documents
    from cairn.app.identity import service as identity

    settings = Settings(
        data_dir=data_dir,
        log_level="WARNING",
        **{f"rate_limit_{c}_per_minute": 0 for c in ("packs", "reads", "writes")},
    )
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
    from cairn.app.main import create_app

    app = create_app(services.settings, services=services)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://cairn", timeout=60)


def _micro() -> dict[str, float]:
    """Nanoseconds per call of the hooks with tracing off (run before tracing is installed)."""
    from cairn.app.observability import Metrics, Telemetry, span

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


async def _paired(a: httpx.AsyncClient, b: httpx.AsyncClient, token: str, queries: list[str], rounds: int):
    """Per query, one call on ``a`` and one on ``b`` (order alternating): both lists of ms."""
    ta: list[float] = []
    tb: list[float] = []
    for r in range(rounds):
        for i, q in enumerate(queries):
            first_a = (r + i) % 2 == 0
            for c, sink in ((a, ta), (b, tb)) if first_a else ((b, tb), (a, ta)):
                sink += await _round(c, token, [q])
    return ta, tb


def _row(name: str, values: list[float], base: list[float]) -> str:
    p50, b50 = statistics.median(values), statistics.median(base)
    diffs = [v - w for v, w in zip(values, base)]
    return (
        f"{name:<42}{p50:>9.2f}{statistics.fmean(values):>9.2f}"
        f"{statistics.median(diffs):>+14.2f}{statistics.median(diffs) / b50 * 100:>+9.1f}%"
    )


async def main(docs: int, n_queries: int, rounds: int) -> None:
    from cairn.app.observability import Metrics, Telemetry, install, instrument_engine

    queries = [json.loads(line)["text"] for line in (SHARED / "scifact" / "queries.jsonl").read_text().splitlines()]
    queries = queries[:n_queries]
    micro = _micro()
    with tempfile.TemporaryDirectory() as tmp:
        services, token = await _setup(Path(tmp), docs)
        metered = dataclasses.replace(services, telemetry=Telemetry(Metrics()))
        async with _client(services) as off, _client(metered) as met:
            await _round(off, token, queries[:10])  # warm-up (model, caches)
            await _round(met, token, queries[:10])
            t_off, t_met = await _paired(off, met, token, queries, rounds)
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        exporter = _Drop()
        provider = install(BatchSpanProcessor(exporter))  # type: ignore[arg-type]
        instrument_engine(services.db.engine)  # what bootstrap does when tracing is on
        async with _client(metered) as met:
            await _round(met, token, queries[:10])
            traced: list[float] = []
            for _ in range(rounds):
                for q in queries:
                    traced += await _round(met, token, [q])
        provider.force_flush()
        services.indexes.close()
        await services.query_database.close()
        await services.db.dispose()

    print(f"\nmachine: {machine()}")
    print(
        f"contextPack via POST /graphql (ASGI, in-process), {docs} SciFact docs, {len(queries)} queries x {rounds} rounds"
    )
    print(f"{'mode':<42}{'p50 ms':>9}{'mean ms':>9}{'paired Δ p50':>14}{'Δ/off':>10}")
    print(_row("off (default)", t_off, t_off))
    print(_row("metrics on (calls paired with off)", t_met, t_off))
    print(_row("metrics + tracing (SDK; later, unpaired)", traced, t_off))
    print(f"spans per traced pack call: {getattr(exporter, 'count', 0) / (len(traced) + 10):.1f}")
    print("\nhook micro-costs, ns per call (what a pack pays with everything off: ~12 span() no-ops,")
    print("one record_pack and one log_call check):")
    for k, v in micro.items():
        print(f"  {k:<28}{v:>8.0f}")
    off_cost = 12 * micro["span (tracing off)"] + 2 * micro["record_call (metrics off)"]
    print(
        f"  => per pack with everything off: ~{off_cost / 1000:.1f} µs = "
        f"{off_cost / 1e6 / statistics.median(t_off) * 100:.3f} % of the p50 pack call"
    )


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--docs", type=int, default=120)
    ap.add_argument("--queries", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    asyncio.run(main(a.docs, a.queries, a.rounds))
