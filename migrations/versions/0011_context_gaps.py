"""Context gaps (issue 16): context_gap (task, what was missing, reporter, optional pack/trace id).

Revision ID: 0011_context_gaps
Revises: 0010_credential_last_used
Create Date: 2026-12-01 07:50:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0011_context_gaps"
down_revision = "0010_credential_last_used"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "context_gap",
        sa.Column("id", sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
        sa.Column("workspace_id", sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
        sa.Column("task", sa.Text(), nullable=False),
        sa.Column("missing", sa.Text(), nullable=False),
        sa.Column("reporter_kind", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column("credential_id", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=True),
        sa.Column("member_id", sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
        sa.Column("pack_id", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
        sa.Column("trace_id", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["workspace_id"], ["workspace.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("context_gap", schema=None) as batch_op:
        batch_op.create_index("ix_context_gap_workspace_created", ["workspace_id", "created_at", "id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("context_gap", schema=None) as batch_op:
        batch_op.drop_index("ix_context_gap_workspace_created")
    op.drop_table("context_gap")
