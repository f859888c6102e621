"""The search-index change log and shared values (issue 19: several workers on one database).

``index_change`` is the monotonic log every worker's embedded indexes follow (see
:mod:`app.corpus.changes`); existing passages are back-filled in id order with ``txid`` 0, so a
data dir made before this revision catches up by checking presence (nothing re-embedded).
``shared_value`` holds values all workers share (the database id, the ontology cursor key).

Revision ID: 0012_change_log
Revises: 0011_context_gaps
Create Date: 2026-12-01 07:40:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0012_change_log"
down_revision = "0011_context_gaps"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "index_change",
        sa.Column("seq", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False),
        sa.Column("txid", sa.BigInteger(), nullable=False),
        sa.Column("passage_id", sa.Text(), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(["passage_id"], ["passage.id"]),
        sa.PrimaryKeyConstraint("seq"),
        sqlite_autoincrement=True,
    )
    with op.batch_alter_table("index_change", schema=None) as batch_op:
        batch_op.create_index("ix_index_change_txid_seq", ["txid", "seq"], unique=False)
    op.create_table(
        "shared_value",
        sa.Column("name", sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
        sa.Column("value", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )
    op.execute(
        "INSERT INTO index_change (txid, passage_id, title) "
        "SELECT 0, p.id, d.title FROM passage p JOIN document d ON d.id = p.document_id ORDER BY p.id"
    )


def downgrade() -> None:
    op.drop_table("shared_value")
    with op.batch_alter_table("index_change", schema=None) as batch_op:
        batch_op.drop_index("ix_index_change_txid_seq")
    op.drop_table("index_change")
