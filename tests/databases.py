"""Database fixtures: every store test runs on SQLite and on a real PostgreSQL server.

PostgreSQL is ``DST_JUDGE_TEST_PG`` (default ``postgresql://postgres@127.0.0.1:5432/test``);
each test gets a fresh database made there.  With ``CI=true`` a missing server fails
the run; elsewhere those tests skip with the reason.

Each test's database is a copy of one migrated once per test session (issue 39: running every
migration for each of ~330 tests cost more than the tests): SQLite's through the backup API (a file
copy that holds with WAL), PostgreSQL's by ``CREATE DATABASE … TEMPLATE``.  A copy of a migrated
database is the same as a database migrated afresh; the migrations themselves are tested on empty
databases of their own (``tests/store/test_migrations*.py``).

PostgreSQL's copies are made ahead and dropped behind, in one thread beside the tests
(:class:`PgDatabases`): a ``DROP DATABASE`` waits for a checkpoint (0.3-1.1 s on this machine kind, against
0.1-0.3 s for the copy), and ~250 tests each waited for one.  A test still gets a database nobody has used,
made from the template; the ones it leaves are gone before the session ends.
"""

from __future__ import annotations

import os
import queue
import sqlite3
import threading
import uuid
from contextlib import closing

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


def create_pg_database(template: str | None = None) -> str:
    import psycopg

    name = f"dstjudge_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else ""))
    return PG_ADMIN_URL.rsplit("/", 1)[0] + "/" + name


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory):
    """A migrated SQLite database, made once per test session (copied by :func:`copy_sqlite`)."""
    path = tmp_path_factory.mktemp("template") / "judge.sqlite"
    engine = make_engine(f"sqlite:///{path}")
    upgrade(engine)
    engine.dispose()
    return path


def copy_sqlite(template, path) -> str:
    """A copy of the migrated ``template`` at ``path`` (the backup API: whole, whatever its journal mode)."""
    with closing(sqlite3.connect(template)) as source, closing(sqlite3.connect(path)) as target:
        source.backup(target)
    return f"sqlite:///{path}"


class PgDatabases:
    """Copies of the migrated template, made ahead and dropped behind by one thread of its own: ``take`` a
    fresh one (made before it was asked for, unless the thread is behind), ``give_back`` one to be dropped.
    Dropping comes first, so at most ``AHEAD`` unused copies and the drops not yet done exist at a time.
    ``close`` drops what is left and waits for it."""

    AHEAD = 2

    def __init__(self, template: str):
        self.template = template
        self.ready: queue.Queue = queue.Queue(maxsize=self.AHEAD)
        self.dropping: queue.Queue = queue.Queue()
        self.stopping = threading.Event()
        self.failed: list[tuple[str, BaseException]] = []  # drops that failed: tried again in close
        self.thread = threading.Thread(target=self._work, name="pg-databases", daemon=True)
        self.thread.start()

    def _work(self) -> None:
        while True:
            try:
                url = self.dropping.get(timeout=0.05)
            except queue.Empty:
                pass
            else:
                try:
                    drop_pg_database(url)
                except Exception as err:  # noqa: BLE001  tried again in close, which says so if it fails again
                    self.failed.append((url, err))
                continue
            if self.stopping.is_set():
                return
            if not self.ready.full():
                try:
                    made: str | BaseException = create_pg_database(self.template)
                except Exception as err:  # noqa: BLE001  handed to the test that takes it
                    made = err
                self.ready.put(made)

    def take(self) -> str:
        made = self.ready.get(timeout=300)
        if isinstance(made, BaseException):
            raise made
        return made

    def give_back(self, url: str) -> None:
        self.dropping.put(url)

    def close(self) -> None:
        """Stop the thread (it finishes the drops queued), then drop what is left: the unused copies and the
        drops that failed; a drop that fails again is raised (a database left behind is said, not hidden)."""
        self.stopping.set()
        while self.thread.is_alive():  # it stops once its queue is empty; a copy it is making lands in ready
            self.thread.join(timeout=5)
        left = [made for made in iter(lambda: None if self.ready.empty() else self.ready.get(), None) if isinstance(made, str)]
        left += [self.dropping.get() for _ in range(self.dropping.qsize())] + [url for url, _ in self.failed]
        errors = []
        for url in left:
            try:
                drop_pg_database(url)
            except Exception as err:  # noqa: BLE001  each one tried, then all said
                errors.append(f"{url}: {err}")
        if errors:
            raise RuntimeError("test databases left behind: " + "; ".join(errors))


@pytest.fixture(scope="session")
def pg_template():
    """A migrated PostgreSQL database, made once per test session (None: no server); each test's own
    database is made from it by ``CREATE DATABASE … TEMPLATE`` (no connection to it stays open), ahead of
    the test, and dropped behind it (:class:`PgDatabases`)."""
    if pg_available():
        yield None
        return
    url = create_pg_database()
    engine = make_engine(url)
    upgrade(engine)
    engine.dispose()
    databases = PgDatabases(url.rsplit("/", 1)[1])
    try:
        yield databases
    finally:
        try:
            databases.close()
        finally:
            drop_pg_database(url)


def drop_pg_database(url: str) -> None:
    import psycopg

    name = url.rsplit("/", 1)[1]
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request, tmp_path, sqlite_template, pg_template):
    """A fresh, migrated database URL of each backend (a copy of the session's migrated template)."""
    if request.param == "sqlite":
        yield copy_sqlite(sqlite_template, tmp_path / "judge.sqlite")
        return
    require_pg()
    if pg_template is None:  # the server answers now but did not when the session began: migrate here
        url = create_pg_database()
        engine = make_engine(url)
        upgrade(engine)
        engine.dispose()
        try:
            yield url
        finally:
            drop_pg_database(url)
        return
    url = pg_template.take()
    try:
        yield url
    finally:
        pg_template.give_back(url)


@pytest.fixture
def engine(db_url):
    engine = make_engine(db_url, pool_size=20)
    yield engine
    engine.dispose()
