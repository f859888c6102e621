"""compose.yaml (several workers, docs/operations.md "Running several workers") has the shape it promises.

No Docker on the machines that run these tests, so the file is never brought up here: this
checks what can be checked without it — valid YAML, PostgreSQL + Qdrant + at least two
workers, each worker with its own data volume on the one database, ready-gated, and a
balancer whose upstream names every worker.
"""

from __future__ import annotations

import re

import yaml

from tests.conftest import ROOT


def test_compose_runs_postgres_qdrant_and_workers_with_their_own_data_dirs():
    spec = yaml.safe_load((ROOT / "compose.yaml").read_text(encoding="utf-8"))
    services = spec["services"]
    workers = sorted(name for name in services if name.startswith("cairn-"))
    assert len(workers) >= 2 and {"postgres", "qdrant", "balancer"} <= set(services)
    volumes = set()
    for name in workers:
        svc = services[name]
        env = svc["environment"]
        assert (
            env["CAIRN_DATABASE_URL"].startswith("postgresql+asyncpg://")
            and "@postgres:5432/" in env["CAIRN_DATABASE_URL"]
        )
        assert env["CAIRN_QDRANT_URL"] == "http://qdrant:6333"
        assert svc["command"][-2:] == ["--data-dir", "/data"]
        (volume,) = [v.split(":")[0] for v in svc["volumes"] if v.endswith(":/data")]
        volumes.add(volume)
        assert "/readyz" in " ".join(svc["healthcheck"]["test"])
        assert svc["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert len(volumes) == len(workers) and volumes <= set(spec["volumes"])  # one data dir each
    upstream = re.findall(r"server (cairn-\d+):8000", spec["configs"]["nginx"]["content"])
    assert sorted(upstream) == workers
    assert set(services["balancer"]["depends_on"]) == set(workers)
