"""the client address a crowd worker joined from, for the per-client join limit and joins per minute

Revision ID: 0010
Revises: 0009

``crowd_workers.client`` (empty for the workers who joined before) with an index on (client,
joined_at): how many new workers one address brought in the last minutes, counted in the database so
the limit holds across app servers; and (study_id, joined_at) for the admin's joins per minute.
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("crowd_workers", sa.Column("client", sa.String(length=100), nullable=False, server_default=""))
    op.create_index("ix_crowd_workers_client_joined", "crowd_workers", ["client", "joined_at"])
    op.create_index("ix_crowd_workers_study_joined", "crowd_workers", ["study_id", "joined_at"])


def downgrade() -> None:
    op.drop_index("ix_crowd_workers_study_joined", table_name="crowd_workers")
    op.drop_index("ix_crowd_workers_client_joined", table_name="crowd_workers")
    with op.batch_alter_table("crowd_workers") as batch:
        batch.drop_column("client")
