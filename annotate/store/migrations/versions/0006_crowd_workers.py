"""crowd workers who joined a study by its join link

Revision ID: 0006
Revises: 0005
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "crowd_workers",
        sa.Column("annotator_id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("platform", sa.String(length=20), nullable=False),
        sa.Column("worker_id", sa.String(length=64), nullable=False),
        sa.Column("platform_study", sa.String(length=64), nullable=False),
        sa.Column("platform_session", sa.String(length=64), nullable=False),
        sa.Column("joined_at", sa.DateTime(), nullable=False),
        sa.Column("completed_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(["annotator_id"], ["annotators.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["study_id"], ["studies.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("annotator_id"),
        sa.UniqueConstraint("study_id", "platform", "worker_id", name="uq_crowd_worker"),
    )
    op.create_index("ix_crowd_workers_study_id", "crowd_workers", ["study_id"])


def downgrade() -> None:
    op.drop_table("crowd_workers")
