"""Alembic environment: runs on the connection handed over by annotate.store.db.upgrade."""

from alembic import context

from annotate.store.models import Base

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations through annotate.store.db.upgrade(engine)")
context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
