"""Prometheus metrics (prometheus-client), recorded only when ``CAIRN_METRICS`` is on.

:class:`Telemetry` is the one object the rest of Cairn calls (``services.telemetry``); with
metrics off its ``record_*`` methods return at once. With metrics on it owns a
:class:`Metrics` on a private ``CollectorRegistry`` (one per process's ``Services``; nothing in
prometheus-client's global registry), exposed at ``GET /metrics`` (:mod:`app.http.metrics`).

Several processes (``cairn serve --workers N``): the serving parent sets
:data:`MULTIPROCESS_DIR_ENV` for its processes (:func:`multiprocess_dir_for`) before it starts
them, so prometheus-client's multiprocess mode records every process's counters and histograms
in files there, and a scrape of any process answers with the sum over all of them — including
processes that have since died and been replaced (counters never go back), as Prometheus
expects of one target. Without it, a scrape would reach whichever process the kernel gave the
connection and count only that process's calls.

Metrics (``channel`` = ``graphql`` | ``http`` | ``mcp``; ``status`` = the envelope status
``OK`` | ``ERROR`` | ``REJECTED``; ``code`` = ``OK`` or the error's ``extensions.code``):

- ``cairn_calls_total{channel,operation,status,code}`` — governed calls (every GraphQL root
  field, HTTP route and MCP tool goes through the governance adapter, which records here once per
  call, where it logs the call);
- ``cairn_call_duration_seconds{channel,operation,status,code}`` — their latency (histogram);
- ``cairn_packs_total{retrieval,complete}`` — context packs built;
- ``cairn_pack_stage_seconds{stage}`` — the pack footer's stage timings (``lexical`` = BM25,
  ``embed`` + ``vector`` = the dense leg, ``graph``, ``legs``, ``fusion``, ``resolve``,
  ``dedupPack``, ``recheck``, ``contradiction``, ``firstEvidenceItem``, … as the pipeline
  reports them) and ``total`` (the footer's latency);
- ``cairn_ingest_documents_total{status}`` — document writes (``created`` | ``updated`` |
  ``unchanged``);
- ``cairn_ingest_passages_total`` — new passages indexed by them;
- ``cairn_ingest_seconds_total`` — time spent in those writes (incl. indexing), so
  ``rate(cairn_ingest_passages_total[5m]) / rate(cairn_ingest_seconds_total[5m])`` is the
  indexing throughput in passages/s and ``rate(cairn_ingest_passages_total[5m])`` the ingest
  rate in passages per wall-clock second.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector

from cairn.app.core.config import Settings
from cairn.app.core.datadir import WORKERS_DIR

MULTIPROCESS_DIR_ENV = "PROMETHEUS_MULTIPROC_DIR"
"""prometheus-client's switch to multiprocess mode: read when it is first imported, so it must
be in a process's environment before it starts (module doc)."""

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
"""Seconds; a pack is ~40 ms warm, a decision with the local judge seconds."""

STAGE_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)

CHANNELS = {"query": "graphql", "mutation": "graphql", "subscription": "graphql", "http": "http", "mcp": "mcp"}
"""Registry operation kind → ``channel`` label."""


def multiprocess_dir_for(data_dir: Path) -> Path:
    """``<data dir>/workers/metrics`` (made if missing) for the processes of one
    ``serve --workers N`` run; the caller holds the data dir's lock, so no other run writes
    there. prometheus-client's files (``*.db``) left by an earlier run are removed (their counts
    are not this run's); nothing else in the folder, which may be a symlink, is touched.

    Returns:
        The folder, absolute; set it as :data:`MULTIPROCESS_DIR_ENV` for the processes.

    Raises:
        OSError: The folder cannot be made (``workers`` is a file, no permission).
    """
    path = Path(data_dir) / WORKERS_DIR / "metrics"
    path.mkdir(parents=True, exist_ok=True)  # may be a symlink to a tmpfs folder: kept as it is
    for stale in path.glob("*.db"):  # prometheus-client's files only; nothing else is deleted
        stale.unlink()
    return path.resolve()


class Metrics:
    """The metric families of the module doc on one private registry.

    Attributes:
        registry: Where the families are registered.
        multiprocess_dir: prometheus-client's multiprocess folder when this process was started
            with :data:`MULTIPROCESS_DIR_ENV` (values are then kept in files there and summed
            over every process at each scrape), else None.
    """

    def __init__(self) -> None:
        folder = os.environ.get(MULTIPROCESS_DIR_ENV)
        self.multiprocess_dir = Path(folder) if folder else None
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        labels = ("channel", "operation", "status", "code")
        self.calls = Counter("cairn_calls", "Governed calls by operation and result", labels, registry=r)
        self.call_seconds = Histogram(
            "cairn_call_duration_seconds", "Latency of governed calls", labels, buckets=LATENCY_BUCKETS, registry=r
        )
        self.packs = Counter("cairn_packs", "Context packs built", ("retrieval", "complete"), registry=r)
        self.pack_stage_seconds = Histogram(
            "cairn_pack_stage_seconds", "Context pack stage timings", ("stage",), buckets=STAGE_BUCKETS, registry=r
        )
        self.ingest_documents = Counter("cairn_ingest_documents", "Document writes by outcome", ("status",), registry=r)
        self.ingest_passages = Counter("cairn_ingest_passages", "New passages written and indexed", registry=r)
        self.ingest_seconds = Counter("cairn_ingest_seconds", "Seconds spent writing and indexing", registry=r)

    def exposition(self) -> bytes:
        """The metrics in the Prometheus text format (``prometheus_client.CONTENT_TYPE_LATEST``): this
        process's registry, or with :attr:`multiprocess_dir` the sum over every process that
        wrote there (prometheus-client's ``MultiProcessCollector``)."""
        if self.multiprocess_dir is None:
            return generate_latest(self.registry)
        combined = CollectorRegistry()
        MultiProcessCollector(combined, path=str(self.multiprocess_dir))
        return generate_latest(combined)


@dataclass(frozen=True)
class Telemetry:
    """What Cairn records about itself; ``metrics`` None = off (every method returns at once).

    Attributes:
        metrics: The process's :class:`Metrics` (``CAIRN_METRICS=true``), else None.
        metrics_token: A bearer token ``GET /metrics`` requires (``CAIRN_METRICS_TOKEN``), else None.
    """

    metrics: Metrics | None = None
    metrics_token: str | None = field(default=None, repr=False)

    @classmethod
    def from_settings(cls, settings: Settings) -> Telemetry:
        """``Telemetry(Metrics())`` when ``settings.metrics`` is true, else the off one."""
        if settings.metrics:
            return cls(Metrics(), settings.metrics_token)
        return cls()

    def record_call(self, *, kind: str, operation: str, status: str, code: str, seconds: float | None) -> None:
        """Count one governed call (``kind``: the registry kind) and observe its latency."""
        m = self.metrics
        if m is None:
            return
        labels = (CHANNELS.get(kind, kind), operation, status, code)
        m.calls.labels(*labels).inc()
        if seconds is not None:
            m.call_seconds.labels(*labels).observe(seconds)

    def record_pack(self, *, retrieval: str, complete: bool, timings: Mapping[str, float], latency_ms: float) -> None:
        """Count one pack and observe its stage timings (footer milliseconds; keys ``<stage>Ms``)."""
        m = self.metrics
        if m is None:
            return
        m.packs.labels(retrieval, "true" if complete else "false").inc()
        for key, ms in timings.items():
            stage = key[:-2] if key.endswith("Ms") else key
            m.pack_stage_seconds.labels(stage).observe(ms / 1000.0)
        m.pack_stage_seconds.labels("total").observe(latency_ms / 1000.0)

    def record_ingest(self, *, status: str, passages: int, seconds: float) -> None:
        """Count one document write (``created`` | ``updated`` | ``unchanged``), its new passages and time."""
        m = self.metrics
        if m is None:
            return
        m.ingest_documents.labels(status).inc()
        m.ingest_passages.inc(passages)
        m.ingest_seconds.inc(seconds)
