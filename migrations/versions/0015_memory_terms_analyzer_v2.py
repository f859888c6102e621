"""Memories' stored terms re-derived with analyzer version 2 (issue 18).

``memoryterm`` holds each memory's analysed terms (:func:`app.memory.candidates.memory_terms`,
recall's candidate selection). Analyzer version 2 (:data:`retrieval.analysis.ANALYZER_VERSION`)
keeps combining marks inside words (version 1 cut Devanagari, Bengali, Tamil and Thai words at
every vowel sign) and bigrams Thai, Lao, Khmer and Myanmar runs, so queries analysed by it
would miss such memories' version-1 terms. Every memory's terms are re-derived from its stored
(masked) text, 500 memories per statement batch. Downgrade keeps the version-2 terms (the
version-1 analyzer no longer exists to re-derive them).

Revision ID: 0015_memory_terms_analyzer_v2
Revises: 0014_passage_vector
Create Date: 2026-12-02 01:20:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015_memory_terms_analyzer_v2"
down_revision = "0014_passage_vector"
branch_labels = None
depends_on = None

BATCH = 500


def upgrade() -> None:
    from cairn.app.memory import memory_terms

    bind = op.get_bind()
    memories = sa.table(
        "agentmemory", sa.column("id"), sa.column("workspace_id"), sa.column("owner_member_id"), sa.column("text")
    )
    terms = sa.table(
        "memoryterm", sa.column("memory_id"), sa.column("term"), sa.column("workspace_id"), sa.column("owner_member_id")
    )
    last = ""
    while True:
        rows = bind.execute(
            sa.select(memories.c.id, memories.c.workspace_id, memories.c.owner_member_id, memories.c.text)
            .where(memories.c.id > last)
            .order_by(memories.c.id)
            .limit(BATCH)
        ).all()
        if not rows:
            break
        ids = [row.id for row in rows]
        bind.execute(terms.delete().where(terms.c.memory_id.in_(ids)))
        values = [
            {
                "memory_id": row.id,
                "term": term,
                "workspace_id": row.workspace_id,
                "owner_member_id": row.owner_member_id,
            }
            for row in rows
            for term in memory_terms(row.text)
        ]
        if values:
            bind.execute(terms.insert(), values)
        last = ids[-1]


def downgrade() -> None:
    pass
