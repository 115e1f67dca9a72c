"""the HTTP API: bearer tokens, idempotency keys, and automatic judges as annotators

Revision ID: 0012
Revises: 0011

``annotators.kind``: ``human`` (every existing row) or ``judge``.  ``api_tokens``: the SHA-256 of
each token, never the token.  ``api_requests``: per annotator and ``Idempotency-Key``, the request's
fingerprint and the response sent (a retried POST is answered from it).
"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # plain ADD COLUMN (no table copy: on SQLite a copy drops the old table, cascading to the votes)
    op.add_column("annotators", sa.Column("kind", sa.String(length=20), nullable=False, server_default="human"))
    op.create_table(
        "api_tokens",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("annotator_id", sa.Integer(), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("prefix", sa.String(length=16), nullable=False),
        sa.Column("label", sa.String(length=200), nullable=False),
        sa.Column("created_by", sa.String(length=100), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("revoked_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(["annotator_id"], ["annotators.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("token_hash"),
    )
    op.create_index("ix_api_tokens_annotator_id", "api_tokens", ["annotator_id"])
    op.create_table(
        "api_requests",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("annotator_id", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(length=200), nullable=False),
        sa.Column("fingerprint", sa.String(length=64), nullable=False),
        sa.Column("status", sa.Integer(), nullable=False),
        sa.Column("response", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["annotator_id"], ["annotators.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("annotator_id", "key", name="uq_api_request_key"),
    )


def downgrade() -> None:
    op.drop_table("api_requests")
    op.drop_table("api_tokens")
    # a plain DROP COLUMN (SQLite 3.35+): batch mode would copy the table, and dropping the old one with
    # foreign keys on cascades to every vote, place and session of its annotators
    if op.get_bind().dialect.name == "sqlite":
        op.execute("ALTER TABLE annotators DROP COLUMN kind")
    else:
        op.drop_column("annotators", "kind")
