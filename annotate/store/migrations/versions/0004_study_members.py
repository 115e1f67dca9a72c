"""study membership, archiving, and the log of changes to a study

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("studies", schema=None) as batch_op:
        batch_op.add_column(sa.Column("archived", sa.Boolean(), nullable=False, server_default=sa.false()))
    op.create_table(
        "study_members",
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("annotator_id", sa.Integer(), nullable=False),
        sa.Column("added_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["study_id"], ["studies.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["annotator_id"], ["annotators.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("study_id", "annotator_id"),
    )
    op.create_index("ix_study_members_annotator_id", "study_members", ["annotator_id"])
    op.create_table(
        "study_changes",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("by", sa.String(length=100), nullable=False),
        sa.Column("what", sa.String(length=40), nullable=False),
        sa.Column("old", sa.Text(), nullable=False),
        sa.Column("new", sa.Text(), nullable=False),
        sa.Column("at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["study_id"], ["studies.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_study_changes_study_id", "study_changes", ["study_id"])


def downgrade() -> None:
    op.drop_table("study_changes")
    op.drop_table("study_members")
    with op.batch_alter_table("studies", schema=None) as batch_op:
        batch_op.drop_column("archived")
