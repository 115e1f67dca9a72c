"""the votes per item by design: ``items.k`` (issue 29)

Revision ID: 0013
Revises: 0012

``k`` (NULL: the study's overlap, as every item had before) is the places an item has by the study's
design (``annotate.studies.allocation``, policy ``designed``: k_overlap on a random overlap subset, one on the
others).  Every capacity is ``coalesce(k, overlap) + extra_capacity``.  ``ix_items_capacity`` gains
``k`` so that an annotator's progress line (the study's places) is still read from the index alone.
"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # plain ADD COLUMN (no table copy: on SQLite a copy drops the old items table, and with foreign keys
    # on that would cascade to the assignments and votes)
    op.add_column("items", sa.Column("k", sa.Integer(), nullable=True))
    op.drop_index("ix_items_capacity", table_name="items")
    op.create_index("ix_items_capacity", "items", ["study_id", "included", "extra_capacity", "k"])


def downgrade() -> None:
    op.drop_index("ix_items_capacity", table_name="items")
    op.create_index("ix_items_capacity", "items", ["study_id", "included", "extra_capacity"])
    # a plain DROP COLUMN (SQLite 3.35+): batch mode would copy the table, and dropping the old one with
    # foreign keys on cascades to every assignment and vote (the review's finding: 36 votes -> 0)
    if op.get_bind().dialect.name == "sqlite":
        op.execute("ALTER TABLE items DROP COLUMN k")
    else:
        op.drop_column("items", "k")
