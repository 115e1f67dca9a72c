"""Issue 23, item 4: bounded waits on a database server, and recovery (a PostgreSQL server of the test's own).

Before: no connect timeout, statement timeout or TCP keepalive, so during a partition every request
hung as long as the partition (120 s measured).  Now (``annotate.store.db.ServerTimeouts``) a statement in
flight gives up after the network timeout, a new connection after the connect timeout, a lock wait
after the statement timeout; the error is one the pages recognise as "unreachable" (``db.unreachable``)
and the same engine works again once the network is back.  The partition is real: the server runs in a
network namespace of the test's own and every packet to it is dropped (``tests/pg_server.NetnsHost``).
"""

from __future__ import annotations

import threading
import time

import pytest
from sqlalchemy import exc, select, text

from annotate import service
from annotate.judging.loop import Judgement
from annotate.store.db import make_engine, reachable, read_session, server_timeouts, unreachable, upgrade, write_session
from annotate.store.models import Study
from tests.pg_server import NetnsHost, OwnPostgres
from tests.store_helpers import make_study

NETWORK, CONNECT = 3, 2


@pytest.fixture
def partitioned_pg(monkeypatch):
    host = NetnsHost()
    pg = None
    try:
        pg = OwnPostgres(host=host.address, port=5432, inside=host.run_inside())
        monkeypatch.setenv("DST_JUDGE_DB_NETWORK_TIMEOUT", str(NETWORK))
        monkeypatch.setenv("DST_JUDGE_DB_CONNECT_TIMEOUT", str(CONNECT))
        pg.host_link = host
        yield pg
    finally:
        if pg is not None:
            try:
                host.heal()
            except Exception:  # not partitioned
                pass
            pg.close()
        host.close()


def timed(action):
    start = time.monotonic()
    try:
        action()
        return None, time.monotonic() - start
    except exc.SQLAlchemyError as err:
        return err, time.monotonic() - start


def test_a_partition_gives_an_error_within_the_timeouts_and_the_engine_recovers(partitioned_pg, fixtures):
    engine = make_engine(partitioned_pg.url)
    upgrade(engine)
    study, people = make_study(engine, fixtures, overlap=1, annotators=1, name="partition")
    with engine.connect() as held:
        held.execute(text("SELECT 1"))
        partitioned_pg.host_link.partition()
        # a statement in flight on an open connection: the unacknowledged data times out
        error, in_flight = timed(lambda: held.execute(text("SELECT 2")))
    assert error is not None and unreachable(error), error
    assert in_flight < NETWORK + 10, in_flight  # bounded: before, it hung for as long as the partition
    # a request through the service (a new connection): the connect timeout
    error, seconds = timed(lambda: service.next_item(engine, people[0], study.id))
    assert error is not None and unreachable(error), error
    assert seconds < CONNECT * 3 + 10, seconds
    assert not reachable(engine)
    partitioned_pg.host_link.heal()
    # the same engine carries on (dead connections are replaced: pool_pre_ping)
    deadline = time.monotonic() + 30
    while not reachable(engine) and time.monotonic() < deadline:
        time.sleep(0.5)
    item = service.next_item(engine, people[0], study.id)
    service.submit(engine, people[0], item.id, {"satisfied": "1"})
    with read_session(engine) as session:
        assert session.scalar(select(Study.name).where(Study.id == study.id)) == "partition"
    print(f"partition: a statement in flight gave up after {in_flight:.1f} s, a new request after {seconds:.1f} s")
    engine.dispose()


def test_a_lock_wait_gives_up_at_the_statement_timeout(monkeypatch):
    pg = OwnPostgres()
    try:
        monkeypatch.setenv("DST_JUDGE_DB_STATEMENT_TIMEOUT", "1")
        engine = make_engine(pg.url)
        upgrade(engine)
        with write_session(engine) as session:
            session.add(Study(name="locked", kind="satisfaction", overlap=1, questions=[], settings={}))
        started, release = threading.Event(), threading.Event()

        def holder():
            with write_session(engine) as session:
                session.execute(select(Study).with_for_update()).all()
                started.set()
                release.wait(30)

        thread = threading.Thread(target=holder)
        thread.start()
        started.wait(10)
        try:
            with pytest.raises(exc.OperationalError, match="statement timeout") as caught, write_session(engine) as session:
                session.execute(select(Study).with_for_update()).all()
            assert unreachable(caught.value)
        finally:
            release.set()
            thread.join()
        engine.dispose()
    finally:
        pg.close()


def test_timeouts_come_from_the_environment_and_bad_values_are_named(monkeypatch):
    assert server_timeouts().connect_args()["connect_timeout"] == 5  # the documented defaults
    assert server_timeouts().connect_args()["options"] == "-c statement_timeout=30000"
    assert server_timeouts().connect_args()["tcp_user_timeout"] == 15000
    monkeypatch.setenv("DST_JUDGE_DB_STATEMENT_TIMEOUT", "0")
    assert "options" not in server_timeouts().connect_args()  # 0: no limit
    monkeypatch.setenv("DST_JUDGE_DB_CONNECT_TIMEOUT", "soon")
    with pytest.raises(ValueError, match="DST_JUDGE_DB_CONNECT_TIMEOUT='soon'"):
        server_timeouts()


def test_an_answer_sent_during_an_outage_is_settled_when_the_database_is_back(fixtures):
    """The tab's promise when the store cannot answer (annotate.screen): the answer is kept as pending,
    said "not confirmed" during the outage, and afterwards the vote events say whether it was stored."""
    from annotate import screen
    from annotate.store.models import utcnow

    pg = OwnPostgres()
    try:
        engine = make_engine(pg.url)
        upgrade(engine)
        study, people = make_study(engine, fixtures, overlap=1, annotators=1, name="settle")
        state: dict = {}
        item = screen.shown(engine, people[0], study.id, state)
        pg.stop()
        with pytest.raises(exc.OperationalError) as caught:
            screen.vote(engine, people[0], study.id, state, Judgement(item.id, {"satisfied": "1"}, done=True))
        assert unreachable(caught.value) and screen.last_answer(state) == "pending"
        screen.note_outage(state)  # the page showed the notice
        pg.start()
        settled = screen.settle(engine, people[0], state)
        assert not settled.stored and "not saved" in settled.message
        assert screen.shown(engine, people[0], study.id, state).id == item.id  # still on the screen
        # an answer whose commit got through although its acknowledgement was lost: said saved
        sent = utcnow()
        screen.vote(engine, people[0], study.id, state, Judgement(item.id, {"satisfied": "0"}, done=False))
        state[screen.PENDING] = screen.Pending(study.id, item.id, {"satisfied": "0"}, sent)
        screen.note_outage(state)
        settled = screen.settle(engine, people[0], state)
        assert settled.stored and settled.message == "The database is back. Your last answer was saved."
        assert screen.settle(engine, people[0], state) is None  # told once
        engine.dispose()
    finally:
        pg.close()


def test_the_default_database_is_in_the_per_user_data_folder(monkeypatch, tmp_path):
    """The embedded SQLite file the README start command uses: ``dst-judge/dst_judge.sqlite`` in the per-user
    data folder (``XDG_DATA_HOME``, else ``~/.local/share``), never inside the checkout or installed package."""
    from annotate.store.db import database_url

    monkeypatch.delenv("DST_JUDGE_DB", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert database_url() == f"sqlite:///{tmp_path / 'dst-judge' / 'dst_judge.sqlite'}"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert database_url() == f"sqlite:///{tmp_path / 'home' / '.local' / 'share' / 'dst-judge' / 'dst_judge.sqlite'}"
