"""bootstrap(settings) builds every member of Services once (issue 12 step 4), typed, and
without loading the judge's model: the local judge loads Gemma on its first decision."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from cairn.app.context import Services, bootstrap
from cairn.app.core.config import Settings
from cairn.app.decisions import DecisionRunner, LocalJudge, OpenAIJudge
from cairn.app.governance import RateLimiter
from cairn.app.ontology import OntologyStore


@pytest.fixture
def services(tmp_path):
    svc = bootstrap(Settings(data_dir=tmp_path, embedder="none"))
    yield svc
    svc.indexes.close()
    asyncio.run(svc.db.dispose())


def test_every_member_is_built_up_front(services):
    assert isinstance(services.ontology, OntologyStore)
    assert isinstance(services.judge, LocalJudge)
    assert isinstance(services.decisions, DecisionRunner)
    assert services.decisions.get_judge() is services.judge
    assert isinstance(services.rate_limiter, RateLimiter)
    with pytest.raises(dataclasses.FrozenInstanceError):  # nothing is set on first use
        services.ontology = None  # type: ignore[misc]


def test_start_up_does_not_load_the_judge_model(services):
    assert isinstance(services.judge, LocalJudge) and services.judge._server is None


def test_the_judge_follows_settings(tmp_path):
    svc = bootstrap(Settings(data_dir=tmp_path, embedder="none", judge="openai", judge_url="http://127.0.0.1:9/v1"))
    try:
        assert isinstance(svc.judge, OpenAIJudge) and svc.judge.url == "http://127.0.0.1:9/v1"
    finally:
        svc.indexes.close()
        asyncio.run(svc.db.dispose())


def test_services_fields_are_typed_without_any():
    hints = {f.name: str(f.type) for f in dataclasses.fields(Services)}
    assert not [name for name, hint in hints.items() if "Any" in hint], hints
