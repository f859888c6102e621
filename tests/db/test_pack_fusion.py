"""Fusion in packs (issue 18): budget-independent ranks and scores, a rare exact code is kept.

A real data dir (SQLite, Whoosh, Qdrant Edge, all-MiniLM-L6-v2) with 240 word-salad notes
about billing exports (found weakly by both legs, none near-duplicates of another) and one
short note holding the rare code ``E4471-QX``.
"""

from __future__ import annotations

import asyncio
import random

import pytest

from cairn.app.context import bootstrap
from cairn.app.core.config import Settings
from cairn.app.core.db import Database
from cairn.app.core.migrate import upgrade_database
from cairn.app.corpus import open_indexes
from cairn.app.corpus.ingest import ingest_documents
from cairn.app.corpus.sources import SourceDocument
from cairn.app.governance.auth import ROLE_PERMISSIONS, Principal
from cairn.app.identity import service as identity
from cairn.app.packs.service import build_pack
from cairn.app.packs.types import PackRequest

WORDS = [
    "billing",
    "export",
    "error",
    "invoice",
    "ledger",
    "account",
    "region",
    "scheduler",
    "retry",
    "timeout",
    "customer",
    "report",
    "monthly",
    "tax",
    "refund",
    "payment",
    "queue",
    "worker",
    "batch",
    "file",
    "storage",
    "bucket",
    "archive",
    "audit",
    "finance",
    "currency",
    "rate",
    "discount",
    "contract",
    "renewal",
    "usage",
    "meter",
    "quota",
    "alert",
    "dashboard",
    "latency",
    "backlog",
    "vendor",
    "supplier",
    "purchase",
    "order",
    "receipt",
    "credit",
    "debit",
    "balance",
    "statement",
    "reconciliation",
    "journal",
    "entry",
    "period",
    "close",
    "forecast",
    "budget",
    "variance",
    "approval",
    "workflow",
    "owner",
    "team",
]
CODE_NOTE = "E4471-QX: the nightly job stopped because its lease expired; renew the lease, then rerun it."


def _notes() -> list[SourceDocument]:
    rng = random.Random(18)
    docs = [
        SourceDocument(
            external_id=f"note-{i:03d}",
            title=f"note {i}",
            text=" ".join(rng.choice(WORDS) for _ in range(rng.randint(25, 60))).capitalize() + ".",
        )
        for i in range(240)
    ]
    return [*docs, SourceDocument(external_id="code", title="lease runbook", text=CODE_NOTE)]


@pytest.fixture(scope="module")
async def packs(tmp_path_factory):
    """``(services, principal)`` over the notes; closed after the module."""
    data_dir = tmp_path_factory.mktemp("fusion")
    settings = Settings(data_dir=data_dir)
    await asyncio.to_thread(upgrade_database, settings.resolved_database_url)
    db = Database(settings.resolved_database_url)
    indexes = open_indexes(settings)
    async with db.session() as s:
        ws = await identity.create_workspace(s, name="fusion")
    await ingest_documents(db, indexes, workspace_id=ws.id, collection="notes", documents=iter(_notes()))
    who = Principal(
        kind="member", id="m", workspace_id=ws.id, permissions=ROLE_PERMISSIONS["viewer"], member_id="m", role="viewer"
    )
    yield bootstrap(settings, db=db, indexes=indexes), who
    indexes.close()
    await db.dispose()


def _key(item) -> tuple:
    return (item.citation.passage_id, item.score, item.lexical_rank, item.dense_rank)


async def test_a_passage_scores_and_ranks_the_same_at_every_budget(packs):
    services, who = packs
    task = "billing export retry timeout in the scheduler queue"
    small, large = [
        await build_pack(services, who, PackRequest(task=task, max_tokens=t, retrieval="HYBRID")) for t in (4000, 32000)
    ]
    assert 20 < len(small.items) < len(large.items)
    # both legs reach past rank 100 (where the old budget-derived depth cut the 4,000-token pack)
    assert max(i.dense_rank or 0 for i in large.items) > 100 and max(i.lexical_rank or 0 for i in large.items) > 100
    by_id = {i.citation.passage_id: _key(i) for i in large.items}
    # every passage in both packs has the same fused score and the same leg ranks ...
    assert [_key(i) for i in small.items] == [by_id[i.citation.passage_id] for i in small.items]
    # ... and the smaller pack is the larger one's ranking cut by the budget: same order
    order = [i.citation.passage_id for i in large.items]
    positions = [order.index(i.citation.passage_id) for i in small.items]
    assert positions == sorted(positions)
    assert [i.citation.passage_id for i in small.items[:20]] == order[:20]


async def test_a_top_exact_match_of_a_rare_code_is_in_the_smallest_pack(packs):
    services, who = packs
    task = "billing export error E4471-QX"
    lexical = await build_pack(services, who, PackRequest(task=task, max_tokens=4000, retrieval="LEXICAL"))
    assert lexical.items[0].text == CODE_NOTE  # BM25 ranks the code's note first
    pack = await build_pack(services, who, PackRequest(task=task, max_tokens=256, retrieval="HYBRID"))
    assert len(pack.items) >= 2  # the notes found weakly by both legs compete for the budget
    code = [i for i in pack.items if i.text == CODE_NOTE]
    assert code and code[0].lexical_rank == 1, [(i.text[:30], i.lexical_rank, i.dense_rank) for i in pack.items]
