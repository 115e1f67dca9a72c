"""Engines and transactions: an embedded SQLite file by default, PostgreSQL by URL.

The URL comes from ``--db``, else ``DST_JUDGE_DB``, else an SQLite file in the per-user data folder,
``~/.local/share/dst-judge/dst_judge.sqlite`` (``$XDG_DATA_HOME/dst-judge``; created on first use, never
inside the installed package: ``formats.settings``).  A plain ``postgresql://`` URL is accepted (psycopg 3 is used).

SQLite runs in WAL mode with a busy timeout and foreign keys on.  pysqlite's own
transaction handling is switched off so that we emit ``BEGIN`` ourselves: write
transactions (:func:`write_session`) start with ``BEGIN IMMEDIATE``, because a
deferred transaction that reads and then writes fails with "database is locked" under
concurrent writers even in WAL mode.  On PostgreSQL, writers lock the rows they
read-then-write (``SELECT ... FOR UPDATE``).
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Engine, create_engine, event, exc
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session

from formats.settings import settings

BUSY_TIMEOUT_MS = 30_000


def database_url(url: str | None = None) -> str:
    url = url or settings().database_url
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
            url,
            pool_size=pool_size,
            max_overflow=pool_size * 4,
            pool_timeout=120,
            pool_use_lifo=True,
            connect_args={"check_same_thread": False},
        )
        _configure_sqlite(engine)
        return engine
    limits = server_timeouts()
    engine = create_engine(
        url,
        pool_size=pool_size,
        max_overflow=pool_size * 4,
        pool_timeout=limits.pool,
        pool_pre_ping=True,
        connect_args=limits.connect_args(),
    )
    if parsed.get_driver_name() == "psycopg" and (limits.client or limits.connect):
        from annotate.store.deadline import bound_answers  # psycopg only where PostgreSQL is used

        bound_answers(engine, answer=limits.client or None, ping=limits.connect or limits.client or None)
    return engine


@dataclass(frozen=True)
class ServerTimeouts:
    """How long a request may wait on a database server before it gives up with an error (issue 23,
    item 4): without these a partition between app and database hangs every request as long as the
    partition lasts.  Seconds; each from its environment variable, 0 turns one off.

    - ``connect`` (``DST_JUDGE_DB_CONNECT_TIMEOUT``, 5): a new connection that gets no answer;
    - ``statement`` (``DST_JUDGE_DB_STATEMENT_TIMEOUT``, 30): a statement the server runs or waits on
      (a lock) that long is cancelled by the server;
    - ``network`` (``DST_JUDGE_DB_NETWORK_TIMEOUT``, 15): data sent that the server's host does not
      acknowledge (TCP_USER_TIMEOUT), and an idle connection's keepalive probes (first after a third
      of it, then every sixth, three lost: dead);
    - ``pool`` (``DST_JUDGE_DB_POOL_TIMEOUT``, 10): waiting for a free connection of the pool;
    - ``client`` (``DST_JUDGE_DB_CLIENT_TIMEOUT``, 35): the server's answer to one round trip (a
      statement, a commit), kept by the client: a server that hangs (SIGSTOP) acknowledges data and
      cannot enforce its own statement timeout, so the client closes the connection (issue 37,
      ``annotate.store.deadline``); a pooled connection's check before use gets ``connect`` seconds.

    A statement under way when the network goes is thus given up after ``network`` seconds, a new
    connection after ``connect``; when the server hangs, a statement under way after ``client``
    seconds and a new request after twice ``connect``.  The page says the database is unreachable
    and retries by itself (``annotate/pages/outage.py``).  SQLite has its busy timeout
    (``BUSY_TIMEOUT_MS``) and the bounded wait for its writer (``DST_JUDGE_WRITE_QUEUE_WAIT``: :class:`Busy`).
    """

    connect: float = 5
    statement: float = 30
    network: float = 15
    pool: float = 10
    client: float = 35

    def connect_args(self) -> dict:
        args: dict = {"application_name": "dst-judge"}
        if self.connect:
            args["connect_timeout"] = max(1, round(self.connect))
        if self.statement:
            args["options"] = f"-c statement_timeout={round(self.statement * 1000)}"
        if self.network:
            args.update(
                keepalives=1,
                keepalives_idle=max(1, round(self.network / 3)),
                keepalives_interval=max(1, round(self.network / 6)),
                keepalives_count=3,
                tcp_user_timeout=round(self.network * 1000),
            )
        return args


def server_timeouts() -> ServerTimeouts:
    current = settings()
    return ServerTimeouts(
        connect=current.db_connect_timeout,
        statement=current.db_statement_timeout,
        network=current.db_network_timeout,
        pool=current.db_pool_timeout or 120,
        client=current.db_client_timeout,
    )


# What "the database cannot be reached" looks like to the code: the server is down or cut off, a
# timeout above fired, the pool is exhausted, SQLite's file is locked past its busy timeout or its disk
# is full.  Pages turn these into a message and a retry, never a traceback (annotate/pages/outage.py).
UNREACHABLE = (exc.OperationalError, exc.InterfaceError, exc.TimeoutError)


class Busy(exc.TimeoutError):
    """A write refused before it began: it waited ``DST_JUDGE_WRITE_QUEUE_WAIT`` seconds for its turn at
    SQLite's writer (:class:`_GroupWriter`) and others were still ahead.  Nothing was sent, so nothing
    was stored: the page says "not saved" (``annotate.screen``), the API answers 503 with Retry-After."""

    code = None  # not SQLAlchemy's pool timeout: no link to its page


def not_sent(error: BaseException) -> BaseException:
    """Mark ``error`` as raised before anything of a write reached the database (its transaction never
    began, or its first statement failed): a page then says "not saved", never "pending", for nothing
    can have been stored (``annotate.screen.vote``).  Returns ``error``, to be raised on."""
    error.__dict__[_NOT_SENT] = True
    return error


def was_sent(error: BaseException) -> bool:
    """False when ``error`` left a write unsent: marked by :func:`not_sent`, or :class:`Busy` (refused
    before it began); True when some of it may have reached the database."""
    return not (isinstance(error, Busy) or error.__dict__.get(_NOT_SENT, False))


_NOT_SENT = "_dst_judge_not_sent"  # the mark, kept on the exception itself: it travels with it to the page


def unreachable(error: BaseException) -> bool:
    """Whether ``error`` means the database cannot be reached (or written) right now."""
    return isinstance(error, UNREACHABLE) or (isinstance(error, exc.DBAPIError) and error.connection_invalidated)


def reachable(engine: Engine) -> bool:
    """One cheap round trip: whether the database answers now."""
    try:
        with engine.connect() as connection:
            connection.exec_driver_sql("SELECT 1")
        return True
    except exc.SQLAlchemyError:
        return False


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
        _driver(connection).execute("BEGIN IMMEDIATE" if immediate else "BEGIN")

    # Every write session is a SAVEPOINT inside its group's transaction (_GroupWriter).  SQLAlchemy
    # emits one by compiling a new statement each time (its name changes), about a fifth of a
    # judgement's time with 50 writers; these constant statements go straight to the driver instead.
    # One name serves every level: SQLite's savepoints are a stack, and RELEASE / ROLLBACK TO take
    # the innermost of that name, which is the one SQLAlchemy means (it nests them properly).
    engine.dialect.do_savepoint = lambda connection, _name: _driver(connection).execute("SAVEPOINT dst_judge")
    engine.dialect.do_release_savepoint = lambda connection, _name: _driver(connection).execute("RELEASE SAVEPOINT dst_judge")
    engine.dialect.do_rollback_to_savepoint = lambda connection, _name: _driver(connection).execute(
        "ROLLBACK TO SAVEPOINT dst_judge"
    )


def _driver(connection):
    return connection.connection.driver_connection


@contextmanager
def read_session(engine: Engine) -> Iterator[Session]:
    with Session(engine, expire_on_commit=False) as session:
        yield session


def _gate() -> threading.Lock:
    """A closed gate: ``acquire`` waits until someone ``release``s it (cheaper than an Event)."""
    gate = threading.Lock()
    gate.acquire()
    return gate


class FairLock:
    """A first-come, first-served lock: ownership passes straight to the oldest waiter."""

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._locked = False
        self._waiters: collections.deque[threading.Lock] = collections.deque()

    def __enter__(self) -> FairLock:
        self.acquire()
        return self

    def acquire(self, timeout: float | None = None) -> bool:
        """Take the lock, waiting at most ``timeout`` seconds (None: as long as it takes) in line;
        False when the time ran out first (the place in line is given up)."""
        with self._mutex:
            if not self._locked:
                self._locked = True
                return True
            turn = _gate()
            self._waiters.append(turn)
        if turn.acquire(timeout=-1 if timeout is None else timeout):
            return True
        with self._mutex:
            if turn in self._waiters:
                self._waiters.remove(turn)
                return False
        turn.acquire()  # handed over while the time ran out: ours after all (its gate is open)
        return True

    def __exit__(self, *exc) -> None:
        self.release()

    def release(self) -> bool:
        """Pass the lock to the oldest waiter (True), or unlock it when nobody waits (False)."""
        with self._mutex:
            if self._waiters:
                self._waiters.popleft().release()
                return True
            self._locked = False
            return False

    def waiting(self) -> int:
        """How many threads are queued (a snapshot)."""
        return len(self._waiters)


class _Group:
    """The write sessions sharing one SQLite transaction: the gates of those waiting for its COMMIT,
    and the COMMIT's error if it failed."""

    __slots__ = ("members", "gates", "error")

    def __init__(self) -> None:
        self.members = 0
        self.gates: list[threading.Lock] = []
        self.error: BaseException | None = None


class _GroupWriter:
    """A process's writer to one SQLite database: one connection, one transaction shared by a group
    of write sessions (group commit).

    Write sessions queue on a :class:`FairLock`.  The first of a group begins ``BEGIN IMMEDIATE``;
    each session runs in its own SAVEPOINT inside it (its error rolls back its own work only); the
    session that finds nobody queued behind it (or the ``MAX_GROUP``-th) commits the group, and
    every session of the group returns only once that COMMIT succeeded, so nothing is acknowledged
    before it is durable, and a failed COMMIT fails every session of its group.  A session waits in
    line at most ``DST_JUDGE_WRITE_QUEUE_WAIT`` seconds (10 by default) and is then refused with
    :class:`Busy`, nothing sent (issue 37: under overload a page says "not saved" and the API answers
    503 rather than keeping a request 40 s in this line).  One COMMIT (the
    WAL write), one BEGIN and one connection checkout serve many judgements (issue 16); the pool
    is last-in-first-out, so that connection's page cache is usually warm.  Another process writing
    the same file waits through the busy timeout as before, at most one group long.
    """

    MAX_GROUP = 32

    def __init__(self, engine: Engine) -> None:
        self.lock = FairLock()
        self.wait = settings().write_queue_wait or None  # seconds in line at most (None: no limit)
        self.engine = engine.execution_options(sqlite_immediate=True)
        self.connection = None  # the group's, checked out of the pool for as long as the group lasts
        self.transaction = None
        self.group: _Group | None = None

    @contextmanager
    def session(self) -> Iterator[Session]:
        error, gate = None, None
        if not self.lock.acquire(self.wait):
            raise Busy(f"the database is busy: this write waited {self.wait:g} s for its turn and was not sent")
        try:
            if self.group is None:
                self.connection = self.engine.connect()
                try:
                    self.transaction = self.connection.begin()  # BEGIN IMMEDIATE: may wait for another process
                except BaseException:
                    self.connection.close()
                    self.connection = None
                    raise
                self.group = _Group()
            group = self.group
            group.members += 1
            try:
                with Session(self.connection, join_transaction_mode="create_savepoint", expire_on_commit=False) as session:
                    with session.begin():
                        yield session
            except BaseException as err:  # noqa: BLE001 - raised again below, after the group ended
                error = err
            finally:
                broken = not self.transaction.is_active or self.connection.invalidated
                if broken or group.members >= self.MAX_GROUP or not self.lock.waiting():
                    self._end_group()
                elif error is None:
                    gate = _gate()
                    group.gates.append(gate)
        finally:
            left_open = self.group is not None
            handed = self.lock.release()
        if left_open and not handed:
            self._commit_abandoned(group)
        if gate is not None:
            gate.acquire()  # opened by the session that commits the group
        if error is None:
            error = group.error
        if error is not None:
            raise error

    def _commit_abandoned(self, group: _Group) -> None:
        """The group was left open for a session in line that gave up waiting (:class:`Busy`) before its
        turn came: nobody else would commit it, so the session that left it open does, in line again."""
        self.lock.acquire()
        try:
            if self.group is group:  # not yet committed by a session that came meanwhile
                self._end_group()
        finally:
            self.lock.release()

    def _end_group(self) -> None:
        """COMMIT the group's transaction (under the lock) and open its sessions' gates."""
        group, self.group = self.group, None
        try:
            self.transaction.commit()
        except BaseException as err:  # noqa: BLE001 - every session of the group gets it
            group.error = err
            try:
                self.transaction.rollback()
            finally:
                self.connection.invalidate()
        finally:
            self.connection.close()  # back to the pool (LIFO: the next group gets it, its cache warm)
            self.transaction = self.connection = None
            for gate in group.gates:
                gate.release()


_WRITER_MADE = threading.Lock()


def _sqlite_writer(engine: Engine) -> _GroupWriter:
    """The engine's group writer, made once and kept on its pool (which every option engine of the
    engine shares), so it goes with the pool: ``dispose`` makes a new pool and a new writer."""
    writer = getattr(engine.pool, "_dst_judge_writer", None)
    if writer is None:
        with _WRITER_MADE:
            writer = getattr(engine.pool, "_dst_judge_writer", None)
            if writer is None:
                writer = engine.pool._dst_judge_writer = _GroupWriter(engine)
    return writer


@contextmanager
def write_session(engine: Engine) -> Iterator[Session]:
    """One write transaction: committed on success, rolled back on any error; when it returns, its
    work is committed.

    On SQLite, threads of one process queue, first come first served, before ``BEGIN IMMEDIATE``
    (SQLite's busy handler polls with growing sleeps, which starves some writers: a p99 of seconds
    with 50 threads), and share commits (see :class:`_GroupWriter`).  Other processes still wait
    through the busy timeout.
    """
    if not is_sqlite(engine):
        with Session(engine, expire_on_commit=False) as session, session.begin():
            yield session
        return
    with _sqlite_writer(engine).session() as session:
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
