"""Issue 37, item 5: a frozen PostgreSQL server (SIGSTOP) gets an answer within the client's deadline.

Before: a request on a pooled connection waited as long as the server stayed stopped (60 s measured),
then answered 200.  The timeouts of issue 23 could not fire: the server's host still accepts
connections and acknowledges data (no TCP timeout), and ``statement_timeout`` is enforced by the
server, which is stopped.  Now the client gives up by itself (``annotate.store.deadline``): a
statement, commit or rollback that has no answer after ``DST_JUDGE_DB_CLIENT_TIMEOUT`` closes its
connection, a pooled connection's check before use (pre-ping) gives up after the connect timeout, and
a new connection after the connect timeout (libpq's, kept by psycopg on the client).  The server is
a real one of the test's own (``tests/pg_server.OwnPostgres.freeze``: SIGSTOP to each of its
processes); after SIGCONT the same engine and the same API process carry on, and every acknowledged
vote is stored.
"""

from __future__ import annotations

import threading
import time

import httpx
import pytest
from sqlalchemy import exc, func, select, text

from annotate import screen
from annotate.judging import loop
from annotate.judging.loop import Judgement
from annotate.store.db import make_engine, reachable, read_session, unreachable, upgrade, write_session
from annotate.store.models import VoteEvent
from tests.api_harness import LiveApi, api_study, bearer
from tests.pg_server import OwnPostgres
from tests.store_helpers import make_study

pytestmark = pytest.mark.slow

STATEMENT, CLIENT, CONNECT = 2, 4, 2  # seconds: the server's timeout, the client's deadline, a new connection
SLACK = 5  # a loaded 2-core machine


@pytest.fixture
def pg(monkeypatch):
    monkeypatch.setenv("DST_JUDGE_DB_STATEMENT_TIMEOUT", str(STATEMENT))
    monkeypatch.setenv("DST_JUDGE_DB_CLIENT_TIMEOUT", str(CLIENT))
    monkeypatch.setenv("DST_JUDGE_DB_CONNECT_TIMEOUT", str(CONNECT))
    server = OwnPostgres()
    try:
        yield server
    finally:
        server.close()  # thaws it first


def timed(action):
    start = time.monotonic()
    try:
        action()
        return None, time.monotonic() - start
    except exc.SQLAlchemyError as err:
        return err, time.monotonic() - start


def back(engine, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not reachable(engine):
        assert time.monotonic() < deadline, "the database did not come back"
        time.sleep(0.3)


def stored_votes(engine) -> dict[tuple[int, int], list[str]]:
    with read_session(engine) as session:
        rows = session.execute(select(VoteEvent.annotator_id, VoteEvent.item_id, VoteEvent.value).order_by(VoteEvent.id))
        found: dict[tuple[int, int], list[str]] = {}
        for annotator, item, value in rows:
            found.setdefault((annotator, item), []).append(value)
        return found


def test_a_frozen_server_answers_within_the_client_deadline_and_nothing_acknowledged_is_lost(pg, fixtures):
    engine = make_engine(pg.url)
    upgrade(engine)
    study, people = make_study(engine, fixtures, overlap=1, annotators=3, name="frozen")
    tabs = {p.id: {} for p in people}
    acknowledged: dict[tuple[int, int], list[str]] = {}
    for person in people:  # votes acknowledged before the freeze; each tab then shows its next item
        item = screen.shown(engine, person, study.id, tabs[person.id])
        assert screen.vote(engine, person, study.id, tabs[person.id], Judgement(item.id, {"satisfied": "1"}, done=True)).stored
        acknowledged[person.id, item.id] = ["1"]
    writer, voter = people[0], people[1]
    held = screen.shown(engine, writer, study.id, tabs[writer.id])
    shown = screen.shown(engine, voter, study.id, tabs[voter.id])

    # A vote in flight on a pooled connection when the server stops: its transaction has written and
    # waits for the server's answer (a statement that sleeps pins the moment).
    in_flight: dict = {}

    def vote_in_flight() -> None:
        start = time.monotonic()
        try:
            with write_session(engine) as session:
                loop.answer(session, writer, study.id, loop.Judgement(held.id, {"satisfied": "0"}, done=False))
                session.execute(text("SELECT pg_sleep(1)"))
        except exc.SQLAlchemyError as err:
            in_flight["error"] = err
        in_flight["seconds"] = time.monotonic() - start

    thread = threading.Thread(target=vote_in_flight)
    thread.start()
    time.sleep(0.5)
    pg.freeze()
    try:
        thread.join(CLIENT + SLACK)
        assert not thread.is_alive(), f"a statement in flight still waits on the frozen server after {CLIENT + SLACK} s"
        assert unreachable(in_flight["error"]), in_flight
        assert in_flight["seconds"] < 0.5 + CLIENT + SLACK, in_flight

        # A new answer through the page's path, on a pooled connection: the check before use gives up
        # after the connect timeout, the new connection after another.
        state = tabs[voter.id]
        error, seconds = timed(
            lambda: screen.vote(engine, voter, study.id, state, Judgement(shown.id, {"satisfied": "0"}, done=True))
        )
        assert error is not None and unreachable(error), error
        assert seconds < 2 * CONNECT + SLACK, seconds
        assert screen.last_answer(state) == "pending"  # the page: "not confirmed; checked when the database is back"
        screen.note_outage(state)
        _, probe = timed(lambda: reachable(engine))
        assert not reachable(engine) and probe < 2 * CONNECT + SLACK, probe
    finally:
        pg.thaw()

    back(engine)
    settled = screen.settle(engine, voter, state)
    assert not settled.stored and "not saved" in settled.message  # true: it never reached the server
    assert screen.vote(engine, voter, study.id, state, Judgement(shown.id, {"satisfied": "0"}, done=True)).stored
    acknowledged[voter.id, shown.id] = ["0"]
    # the write cut off by the deadline was rolled back by the server when it woke: not stored
    assert stored_votes(engine) == acknowledged
    engine.dispose()
    print(
        f"\nfrozen server: a statement in flight gave up after {in_flight['seconds']:.1f} s, a new answer after {seconds:.1f} s"
    )


def test_an_api_request_to_a_frozen_server_gets_503_in_time_and_its_retry_is_stored(pg, fixtures, tmp_path):
    engine = make_engine(pg.url)
    upgrade(engine)
    made = api_study(engine, fixtures, overlap=1, annotators=1, name="frozen-api")
    with (
        LiveApi(pg.url, log=tmp_path / "api.log") as api,
        httpx.Client(base_url=api.url, headers=bearer(made.annotators[0]), timeout=60) as http,
    ):
        study = f"/api/v1/studies/{made.study_id}"

        def vote(item: int, value: str, key: str, **options) -> httpx.Response:
            return http.post(
                f"{study}/items/{item}/votes", json={"answers": {"satisfied": value}}, headers={"Idempotency-Key": key}, **options
            )

        first = http.get(f"{study}/next").json()["item"]["id"]
        assert vote(first, "1", "k1").status_code == 200
        second = http.get(f"{study}/next").json()["item"]["id"]
        pg.freeze()
        try:
            start = time.monotonic()
            answer = vote(second, "0", "k2", timeout=2 * CONNECT + SLACK + 10)  # before: no answer while it slept
            seconds = time.monotonic() - start
            assert answer.status_code == 503, answer.text
            assert answer.headers["content-type"] == "application/problem+json"
            assert int(answer.headers["retry-after"]) >= 1
            assert seconds < 2 * CONNECT + SLACK, seconds
        finally:
            pg.thaw()
        deadline = time.monotonic() + 30
        while (retried := vote(second, "0", "k2")).status_code == 503:
            assert time.monotonic() < deadline, retried.text
            time.sleep(0.5)
        assert retried.status_code == 200 and retried.json()["replayed"] is False  # the 503 stored nothing
    with read_session(engine) as session:
        assert session.scalar(select(func.count()).select_from(VoteEvent)) == 2
    engine.dispose()
    print(f"\nfrozen server: the API answered 503 after {seconds:.1f} s")


def test_the_client_deadline_is_documented_and_read_from_the_environment(monkeypatch):
    from annotate.store.db import server_timeouts

    monkeypatch.delenv("DST_JUDGE_DB_CLIENT_TIMEOUT", raising=False)
    assert server_timeouts().client == 35  # above the statement timeout (30), which fires first on a live server
    assert server_timeouts().statement < server_timeouts().client
    monkeypatch.setenv("DST_JUDGE_DB_CLIENT_TIMEOUT", "soon")
    with pytest.raises(ValueError, match="DST_JUDGE_DB_CLIENT_TIMEOUT='soon'"):
        server_timeouts()
