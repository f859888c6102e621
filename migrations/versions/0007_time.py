"""Compact replay records (binary payload, expiry index) and the temporal statement index (issue 14).

Revision ID: 0007_time
Revises: 0005
Create Date: 2026-12-01 04:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0007_time"
down_revision = "0006_context_sets"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("replayrecord", schema=None) as batch_op:
        batch_op.add_column(sa.Column("payload", sa.LargeBinary(), nullable=True))
        batch_op.create_index(batch_op.f("ix_replayrecord_expires_at"), ["expires_at"], unique=False)
    op.create_table(
        "temporal_statement",
        sa.Column("id", sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
        sa.Column("workspace_id", sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
        sa.Column("document_id", sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
        sa.Column("version_id", sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
        sa.Column("passage_id", sqlmodel.sql.sqltypes.AutoString(length=40), nullable=True),
        sa.Column("subject", sa.Text(), nullable=False),
        sa.Column("subject_key", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("subject_base", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("relation", sqlmodel.sql.sqltypes.AutoString(length=80), nullable=False),
        sa.Column("holder", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("start", sa.Integer(), nullable=False),
        sa.Column("end", sa.Integer(), nullable=False),
        sa.Column("sha256", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("valid_from", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.Column("valid_to", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.Column("precision", sqlmodel.sql.sqltypes.AutoString(length=8), nullable=False),
        sa.Column("time_source", sqlmodel.sql.sqltypes.AutoString(length=8), nullable=False),
        sa.ForeignKeyConstraint(["document_id"], ["document.id"]),
        sa.ForeignKeyConstraint(["version_id"], ["documentversion.id"]),
        sa.ForeignKeyConstraint(["workspace_id"], ["workspace.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("temporal_statement", schema=None) as batch_op:
        batch_op.create_index("ix_temporal_statement_ws_subject", ["workspace_id", "subject_key"], unique=False)
        batch_op.create_index("ix_temporal_statement_ws_subject_base", ["workspace_id", "subject_base"], unique=False)
        batch_op.create_index(batch_op.f("ix_temporal_statement_document_id"), ["document_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_temporal_statement_version_id"), ["version_id"], unique=False)
    op.create_table(
        "temporal_indexed_version",
        sa.Column("version_id", sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
        sa.Column("workspace_id", sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
        sa.Column("statements", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["version_id"], ["documentversion.id"]),
        sa.ForeignKeyConstraint(["workspace_id"], ["workspace.id"]),
        sa.PrimaryKeyConstraint("version_id"),
    )
    with op.batch_alter_table("temporal_indexed_version", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_temporal_indexed_version_workspace_id"), ["workspace_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("temporal_indexed_version", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_temporal_indexed_version_workspace_id"))
    op.drop_table("temporal_indexed_version")
    with op.batch_alter_table("temporal_statement", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_temporal_statement_version_id"))
        batch_op.drop_index(batch_op.f("ix_temporal_statement_document_id"))
        batch_op.drop_index("ix_temporal_statement_ws_subject_base")
        batch_op.drop_index("ix_temporal_statement_ws_subject")
    op.drop_table("temporal_statement")
    with op.batch_alter_table("replayrecord", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_replayrecord_expires_at"))
        batch_op.drop_column("payload")
