"""a crowd worker's browser binding: ``crowd_workers.device_key`` (issue 37, item 2)

Revision ID: 0014
Revises: 0013

The key (random, 32 bytes URL-safe) of the browser tokens that bind a worker id to the browser of its
first join (``annotate.studies.crowd``): a join link claiming a worker who joined already signs in only a
browser that shows a token made with this key (or, on Prolific, the link's SESSION_ID of the first
join).  The workers who joined before have none (empty): their live logins go on, but no browser can
show a token for them, so only Prolific's SESSION_ID brings them back by the link.
"""

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # a plain ADD COLUMN (no table copy on SQLite: see 0013)
    op.add_column("crowd_workers", sa.Column("device_key", sa.String(length=64), nullable=False, server_default=""))


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":  # a plain DROP COLUMN (SQLite 3.35+), never a batch copy
        op.execute("ALTER TABLE crowd_workers DROP COLUMN device_key")
    else:
        op.drop_column("crowd_workers", "device_key")
