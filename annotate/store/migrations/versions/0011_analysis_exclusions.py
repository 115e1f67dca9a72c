"""annotators left out of a study's analysis, recorded and reversible

Revision ID: 0011
Revises: 0010

``analysis_exclusions``: append-only events (study, annotator, excluded or included again, by whom,
why, when); the latest event of a (study, annotator) is its state.  The votes themselves stay.
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "analysis_exclusions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("annotator_id", sa.Integer(), nullable=False),
        sa.Column("excluded", sa.Boolean(), nullable=False),
        sa.Column("by", sa.String(length=100), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["study_id"], ["studies.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["annotator_id"], ["annotators.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_analysis_exclusions_study_annotator", "analysis_exclusions", ["study_id", "annotator_id"])


def downgrade() -> None:
    op.drop_table("analysis_exclusions")
