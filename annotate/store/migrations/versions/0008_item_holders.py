"""places held per item, kept as a counter: next-item choice without a study scan

Revision ID: 0008
Revises: 0007

Carries an existing database forward: ``holders`` is filled from the assignments (done or active).
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("items") as batch:
        batch.add_column(sa.Column("holders", sa.Integer(), nullable=False, server_default="0"))
    op.execute(
        "UPDATE items SET holders = (SELECT count(*) FROM assignments "
        "WHERE assignments.item_id = items.id AND assignments.status IN ('done', 'active'))"
    )
    op.create_index("ix_items_open", "items", ["study_id", "condition", "holders", "position"])
    op.create_index("ix_assignment_study_status_at", "assignments", ["study_id", "status", "assigned_at"])


def downgrade() -> None:
    op.drop_index("ix_assignment_study_status_at", table_name="assignments")
    op.drop_index("ix_items_open", table_name="items")
    with op.batch_alter_table("items") as batch:
        batch.drop_column("holders")
