"""Context gaps keep their resolution (issue 36): status OPEN | RESOLVED | DISMISSED, the
resolution (the entry it became, or the reason it was dismissed), who resolved it and when, and
for RESOLVED the context set and entry it became. Existing gaps are OPEN (server default).

Revision ID: 0018_context_gap_resolution
Revises: 0017_document_media_type_length
Create Date: 2026-12-03 20:40:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0018_context_gap_resolution"
down_revision = "0017_document_media_type_length"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("context_gap", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("status", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False, server_default="OPEN")
        )
        batch_op.add_column(sa.Column("resolution", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("resolved_by", sqlmodel.sql.sqltypes.AutoString(length=40), nullable=True))
        batch_op.add_column(sa.Column("resolved_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True))
        batch_op.add_column(
            sa.Column("resolved_context_set_id", sqlmodel.sql.sqltypes.AutoString(length=40), nullable=True)
        )
        batch_op.add_column(sa.Column("resolved_entry_id", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("context_gap", schema=None) as batch_op:
        for name in (
            "resolved_entry_id",
            "resolved_context_set_id",
            "resolved_at",
            "resolved_by",
            "resolution",
            "status",
        ):
            batch_op.drop_column(name)
