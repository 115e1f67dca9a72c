"""the allocation design per item: judged or not, and with what probability

Revision ID: 0009
Revises: 0008

``included`` (false: an adaptive study's draw left the item out: it is never offered) and ``pi``
(its inclusion probability; NULL: the uniform design, every item judged).  The open-items index
has ``included`` after the condition so that next-item choice reads only items that are judged, and
``ix_items_capacity`` answers an annotator's progress line (items and extra places) from the index.
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # plain ADD COLUMN (no table copy: on SQLite a copy drops the old items table, and with foreign keys
    # on that would cascade to the assignments and votes)
    op.add_column("items", sa.Column("included", sa.Boolean(), nullable=False, server_default=sa.true()))
    op.add_column("items", sa.Column("pi", sa.Float(), nullable=True))
    op.drop_index("ix_items_open", table_name="items")
    op.create_index("ix_items_open", "items", ["study_id", "condition", "included", "holders", "position"])
    # an annotator's progress line (items to judge, their extra places) without reading the items' rows
    op.create_index("ix_items_capacity", "items", ["study_id", "included", "extra_capacity"])


def downgrade() -> None:
    op.drop_index("ix_items_capacity", table_name="items")
    op.drop_index("ix_items_open", table_name="items")
    op.create_index("ix_items_open", "items", ["study_id", "condition", "holders", "position"])
    with op.batch_alter_table("items") as batch:
        batch.drop_column("pi")
        batch.drop_column("included")
