"""analyses shared by the app servers of one database: ``analysis_results`` (issue 39, item 2)

Revision ID: 0015
Revises: 0014

One row per (study, analysis settings, condition): the newest analysis computed (a compressed pickle of
plain values, loaded with no class or function allowed) and the lease of the server computing the next
one (``annotate.analysis.analysis_cache``).  Only a cache: a row deleted costs a recomputation.
"""

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "analysis_results",
        sa.Column("slot", sa.String(length=64), primary_key=True),
        sa.Column("study_id", sa.Integer(), sa.ForeignKey("studies.id", ondelete="CASCADE"), nullable=False),
        sa.Column("digest", sa.String(length=64), nullable=True),
        sa.Column("payload", sa.LargeBinary(), nullable=True),
        sa.Column("votes", sa.Integer(), nullable=True),
        sa.Column("computed_at", sa.Float(), nullable=True),
        sa.Column("running_digest", sa.String(length=64), nullable=True),
        sa.Column("running_until", sa.Float(), nullable=True),
        sa.Column("running_by", sa.String(length=200), nullable=False, server_default=""),
    )
    op.create_index("ix_analysis_results_study_id", "analysis_results", ["study_id"])


def downgrade() -> None:
    op.drop_index("ix_analysis_results_study_id", table_name="analysis_results")
    op.drop_table("analysis_results")
