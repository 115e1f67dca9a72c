"""Storage only: the tables (``models``), engines, sessions and SQLite's group commit (``db``),
prepared statements for the hot path (``prepared``), the schema's Alembic migrations
(``migrations``) and the registry of app servers sharing one SQLite file (``servers``).

Nothing here knows what a study, a vote or an assignment means; the modules above it do."""
