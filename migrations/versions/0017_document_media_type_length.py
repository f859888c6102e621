"""A document's media type holds up to 255 characters (was 64).

The .docx media type that ingest writes,
``application/vnd.openxmlformats-officedocument.wordprocessingml.document``, has 71 characters:
PostgreSQL refused every .docx document (``value too long for type character varying(64)``;
SQLite does not enforce the length). 255 covers RFC 6838's limits (type and subtype up to 127
characters each); ``upsertDocument`` checks ``mediaType`` against the same limit.

Revision ID: 0017_document_media_type_length
Revises: 0016_decision_lease
Create Date: 2026-12-03 21:00:00.000000
"""

from __future__ import annotations

import sqlmodel
from alembic import op

revision = "0017_document_media_type_length"
down_revision = "0016_decision_lease"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("document", schema=None) as batch_op:
        batch_op.alter_column(
            "media_type",
            existing_type=sqlmodel.sql.sqltypes.AutoString(length=64),
            type_=sqlmodel.sql.sqltypes.AutoString(length=255),
            existing_nullable=False,
        )


def downgrade() -> None:
    # a media type past 64 characters would not fit back: cut, as the old column cannot hold it
    op.execute("UPDATE document SET media_type = substr(media_type, 1, 64) WHERE length(media_type) > 64")
    with op.batch_alter_table("document", schema=None) as batch_op:
        batch_op.alter_column(
            "media_type",
            existing_type=sqlmodel.sql.sqltypes.AutoString(length=255),
            type_=sqlmodel.sql.sqltypes.AutoString(length=64),
            existing_nullable=False,
        )
