"""Agent credentials remember when they were last used (the console's Agent access list; issue 17).

Revision ID: 0010_credential_last_used
Revises: 0005
Create Date: 2026-12-01 04:15:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0010_credential_last_used"
down_revision = "0009_query_templates"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("agentcredential", schema=None) as batch_op:
        batch_op.add_column(sa.Column("last_used_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("agentcredential", schema=None) as batch_op:
        batch_op.drop_column("last_used_at")
