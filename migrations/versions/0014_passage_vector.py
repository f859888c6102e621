"""Passages' embeddings kept in SQL (issue 18: a worker catching up reads them, not the model).

``passage_vector`` holds each passage's float32 embedding per model with the SHA-256 of the
text embedded. Nothing is back-filled: passages indexed before this revision are embedded again
by the next worker that indexes them, which then stores them.

Revision ID: 0014_passage_vector
Revises: 0013_corpus_generation
Create Date: 2026-12-01 18:10:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0014_passage_vector"
down_revision = "0013_corpus_generation"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "passage_vector",
        sa.Column("passage_id", sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
        sa.Column("model", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("input_sha256", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("vector", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(["passage_id"], ["passage.id"]),
        sa.PrimaryKeyConstraint("passage_id", "model"),
    )


def downgrade() -> None:
    op.drop_table("passage_vector")
