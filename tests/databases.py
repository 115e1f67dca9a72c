"""Database fixtures: every store test runs on SQLite and on a real PostgreSQL server.

PostgreSQL is ``DST_JUDGE_TEST_PG`` (default ``postgresql://postgres@127.0.0.1:5432/test``);
each test gets a fresh database made there.  With ``CI=true`` a missing server fails
the run; elsewhere those tests skip with the reason.
"""

from __future__ import annotations

import os
import uuid

import pytest

from annotate.store.db import make_engine, upgrade
from formats.settings import settings

PG_ADMIN_URL = settings().test_pg or "postgresql://postgres@127.0.0.1:5432/test"


def pg_available() -> str | None:
    """None if the server answers, else the reason."""
    try:
        import psycopg

        with psycopg.connect(PG_ADMIN_URL, connect_timeout=5):
            return None
    except Exception as err:  # any failure to connect is a reason to skip (or fail in CI)
        return f"PostgreSQL at {PG_ADMIN_URL} unavailable: {err}"


def require_pg() -> None:
    """Skip the test when the server does not answer (fail it with ``CI=true``)."""
    reason = pg_available()
    if reason:
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)


def create_pg_database() -> str:
    import psycopg

    name = f"dstjudge_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return PG_ADMIN_URL.rsplit("/", 1)[0] + "/" + name


def drop_pg_database(url: str) -> None:
    import psycopg

    name = url.rsplit("/", 1)[1]
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request, tmp_path):
    """A fresh, migrated database URL of each backend."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'judge.sqlite'}"
        upgrade(make_engine(url))
        yield url
        return
    require_pg()
    url = create_pg_database()
    engine = make_engine(url)
    upgrade(engine)
    engine.dispose()
    try:
        yield url
    finally:
        drop_pg_database(url)


@pytest.fixture
def engine(db_url):
    engine = make_engine(db_url, pool_size=20)
    yield engine
    engine.dispose()
