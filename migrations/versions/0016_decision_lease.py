"""Running decisions hold a lease (issue 32, item 18).

``decision.lease_expires_at``: until when the process running a ``RUNNING`` decision vouches
for it; the process renews it while the judge works (:mod:`app.decisions.lease`). A read of a
``RUNNING`` decision whose lease has passed marks it ``FAILED`` (500
``decision_internal_error``: the process running it stopped). Nullable: finished decisions keep
their last lease, and a ``RUNNING`` row without one counts as lapsed.

Upgrade gives each ``RUNNING`` row the deadline the previous rule used to take its
Idempotency-Key over (created + the default judge timeout 60 s + 60 s), so a decision running
during the upgrade is not failed sooner than before.

Revision ID: 0016_decision_lease
Revises: 0015_memory_terms_analyzer_v2
Create Date: 2026-12-03 14:20:00.000000
"""

from __future__ import annotations

from datetime import timedelta

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0016_decision_lease"
down_revision = "0015_memory_terms_analyzer_v2"
branch_labels = None
depends_on = None

OLD_TAKEOVER = timedelta(seconds=120)


def upgrade() -> None:
    with op.batch_alter_table("decision", schema=None) as batch_op:
        batch_op.add_column(sa.Column("lease_expires_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True))
    bind = op.get_bind()
    decision = sa.table(
        "decision",
        sa.column("id"),
        sa.column("status"),
        sa.column("created_at"),
        sa.column("lease_expires_at", sqlmodel.sql.sqltypes.UTCDateTime()),
    )
    running = bind.execute(sa.select(decision.c.id, decision.c.created_at).where(decision.c.status == "RUNNING")).all()
    for row in running:  # few: only decisions in flight during the upgrade
        bind.execute(
            decision.update().where(decision.c.id == row.id).values(lease_expires_at=row.created_at + OLD_TAKEOVER)
        )


def downgrade() -> None:
    with op.batch_alter_table("decision", schema=None) as batch_op:
        batch_op.drop_column("lease_expires_at")
