"""login failures per name and client (throttling with a growing delay)

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("login_failures", schema=None) as batch_op:
        batch_op.add_column(sa.Column("client", sa.String(length=100), nullable=False, server_default=""))
        batch_op.create_index("ix_login_failures_name_client_at", ["name", "client", "at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("login_failures", schema=None) as batch_op:
        batch_op.drop_index("ix_login_failures_name_client_at")
        batch_op.drop_column("client")
