"""Each workspace's corpus generation (issue 18: passage rows kept across packs).

``corpus_generation`` counts the committed transactions that changed a workspace's documents
(a new version, a deletion); a process keeps passage rows read for packs only while the
number is the one they were read at. No row means generation 0, so nothing is back-filled:
rows cached by a process that started before this revision do not exist (the cache is in
memory).

Revision ID: 0013_corpus_generation
Revises: 0012_change_log
Create Date: 2026-12-01 15:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0013_corpus_generation"
down_revision = "0012_change_log"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "corpus_generation",
        sa.Column("workspace_id", sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
        sa.Column("generation", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["workspace_id"], ["workspace.id"]),
        sa.PrimaryKeyConstraint("workspace_id"),
    )


def downgrade() -> None:
    op.drop_table("corpus_generation")
