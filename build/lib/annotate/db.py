"""Engines and transactions: an embedded SQLite file by default, PostgreSQL by URL.

The URL comes from ``--db``, else ``DST_JUDGE_DB``, else ``sqlite:///data/dst_judge.sqlite``
(created on first use).  A plain ``postgresql://`` URL is accepted (psycopg 3 is used).

SQLite runs in WAL mode with a busy timeout and foreign keys on.  pysqlite's own
transaction handling is switched off so that we emit ``BEGIN`` ourselves: write
transactions (:func:`write_session`) start with ``BEGIN IMMEDIATE``, because a
deferred transaction that reads and then writes fails with "database is locked" under
concurrent writers even in WAL mode.  On PostgreSQL, writers lock the rows they
read-then-write (``SELECT ... FOR UPDATE``).
"""

from __future__ import annotations

import collections
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session

REPO = Path(__file__).resolve().parent.parent
DEFAULT_SQLITE = REPO / "data" / "dst_judge.sqlite"
BUSY_TIMEOUT_MS = 30_000


def database_url(url: str | None = None) -> str:
    url = url or os.environ.get("DST_JUDGE_DB") or f"sqlite:///{DEFAULT_SQLITE}"
    if url.startswith("postgres://"):
        url = "postgresql://" + url[len("postgres://") :]
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url[len("postgresql://") :]
    return url


def is_sqlite(engine: Engine) -> bool:
    return engine.dialect.name == "sqlite"


def make_engine(url: str | None = None, *, pool_size: int = 10) -> Engine:
    """An engine for the URL; a SQLite file and its folder are created on first use."""
    url = database_url(url)
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(
            url, pool_size=pool_size, max_overflow=pool_size * 4, pool_timeout=120, connect_args={"check_same_thread": False}
        )
        _configure_sqlite(engine)
        return engine
    return create_engine(url, pool_size=pool_size, max_overflow=pool_size * 4, pool_timeout=120, pool_pre_ping=True)


def _configure_sqlite(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def on_connect(dbapi_connection, _record):
        dbapi_connection.isolation_level = None  # we emit BEGIN ourselves (see module docstring)
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA journal_mode = WAL")
        cursor.execute("PRAGMA foreign_keys = ON")
        cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def on_begin(connection):
        immediate = connection.get_execution_options().get("sqlite_immediate", False)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


@contextmanager
def read_session(engine: Engine) -> Iterator[Session]:
    with Session(engine, expire_on_commit=False) as session:
        yield session


class FairLock:
    """A first-come, first-served lock: ownership passes straight to the oldest waiter."""

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._locked = False
        self._waiters: collections.deque[threading.Event] = collections.deque()

    def __enter__(self) -> FairLock:
        with self._mutex:
            if not self._locked:
                self._locked = True
                return self
            turn = threading.Event()
            self._waiters.append(turn)
        turn.wait()
        return self

    def __exit__(self, *exc) -> None:
        with self._mutex:
            if self._waiters:
                self._waiters.popleft().set()
            else:
                self._locked = False


_SQLITE_WRITE_LOCKS: dict[int, FairLock] = {}


@contextmanager
def write_session(engine: Engine) -> Iterator[Session]:
    """One write transaction: committed on success, rolled back on any error.

    On SQLite, threads of one process also queue, first come first served, before
    ``BEGIN IMMEDIATE``: SQLite's busy handler polls with growing sleeps, which starves
    some writers (a p99 of seconds with 50 threads); the queue hands the database over
    as soon as it is free.
    Other processes still wait through the busy timeout.
    """
    if not is_sqlite(engine):
        with Session(engine, expire_on_commit=False) as session, session.begin():
            yield session
        return
    lock = _SQLITE_WRITE_LOCKS.setdefault(id(engine.pool), FairLock())
    with lock, Session(engine.execution_options(sqlite_immediate=True), expire_on_commit=False) as session, session.begin():
        yield session


def upgrade(engine: Engine) -> None:
    """Create or migrate the schema to the newest Alembic revision."""
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(Path(__file__).parent / "migrations"))
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "head")


_ENGINES: dict[str, Engine] = {}


def get_engine(url: str | None = None) -> Engine:
    """A process-wide engine per URL, migrated on first use."""
    resolved = database_url(url)
    if resolved not in _ENGINES:
        engine = make_engine(resolved)
        upgrade(engine)
        _ENGINES[resolved] = engine
    return _ENGINES[resolved]
