"""Issue 16 (item 3): on SQLite, write sessions queued behind one another share one COMMIT.

Each write session is a SAVEPOINT inside its group's transaction (``annotate.store.db._GroupWriter``):
what is queued when a session ends joins the group, and the last one commits it.  A session
returns only once its group's COMMIT succeeded (then any other connection sees its work); its own
error rolls back only its own work; a COMMIT that fails fails every session of the group, and
nothing of the group is stored.  The sessions here are queued deterministically: the first waits
inside its body until the others are queued behind it.
"""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import event, func, select, text
from sqlalchemy.exc import IntegrityError

from annotate.people.auth import add_annotator
from annotate.store.db import _sqlite_writer, make_engine, read_session, upgrade, write_session
from annotate.store.models import Annotator

QUEUED = 4


@pytest.fixture
def sqlite_engine(tmp_path):
    engine = make_engine(f"sqlite:///{tmp_path / 'group.sqlite'}")
    upgrade(engine)
    yield engine
    engine.dispose()


def _names(engine) -> set[str]:
    with read_session(engine) as session:
        return set(session.scalars(select(Annotator.name)))


def _group(engine, first_body, bodies) -> dict[str, BaseException | None]:
    """Run ``first_body`` in a write session that waits, inside, until every one of ``bodies`` is
    queued behind it; each body gets its own thread and session.  Returns each thread's error."""
    outcome: dict[str, BaseException | None] = {}
    inside = threading.Event()
    go_on = threading.Event()

    def first():
        try:
            with write_session(engine) as session:
                inside.set()
                go_on.wait(30)
                first_body(session)
            outcome["first"] = None
        except BaseException as err:  # noqa: BLE001 - the test looks at it
            outcome["first"] = err

    def later(name, body):
        try:
            with write_session(engine) as session:
                body(session)
            outcome[name] = None
        except BaseException as err:  # noqa: BLE001
            outcome[name] = err

    threads = [threading.Thread(target=first)]
    threads[0].start()
    assert inside.wait(30)
    for name, body in bodies.items():
        threads.append(threading.Thread(target=later, args=(name, body)))
        threads[-1].start()
    writer = _sqlite_writer(engine)
    for _ in range(3000):
        if writer.lock.waiting() == len(bodies):
            break
        threading.Event().wait(0.01)
    assert writer.lock.waiting() == len(bodies)
    go_on.set()
    for thread in threads:
        thread.join(60)
    return outcome


def adds(name):
    return lambda session: add_annotator(session, name)


def test_sessions_queued_behind_a_writer_share_one_commit(sqlite_engine):
    commits = []
    event.listen(sqlite_engine, "commit", lambda connection: commits.append(1))
    seen_on_return = {}

    bodies = {f"a{n}": adds(f"a{n}") for n in range(QUEUED)}
    outcome = _group(sqlite_engine, adds("first"), bodies)
    assert outcome == {"first": None, **{name: None for name in bodies}}
    assert _names(sqlite_engine) == {"first", *bodies}
    assert len(commits) == 1, f"{QUEUED + 1} queued sessions made {len(commits)} commits"

    # One by one (nobody queued), each session commits on its own and returns committed.
    for n in range(3):
        with write_session(sqlite_engine) as session:
            add_annotator(session, f"alone{n}")
        seen_on_return[n] = f"alone{n}" in _names(sqlite_engine)
    assert seen_on_return == {0: True, 1: True, 2: True}
    assert len(commits) == 4


def test_an_error_in_one_session_rolls_back_only_its_own_work(sqlite_engine):
    def fails(session):
        add_annotator(session, "doomed")
        session.flush()
        raise ValueError("this judgement is refused")

    outcome = _group(sqlite_engine, adds("first"), {"before": adds("before"), "fails": fails, "after": adds("after")})
    assert isinstance(outcome.pop("fails"), ValueError)
    assert outcome == {"first": None, "before": None, "after": None}
    assert _names(sqlite_engine) == {"first", "before", "after"}


def test_a_failed_commit_fails_every_session_of_its_group_and_stores_nothing(sqlite_engine):
    def breaks_the_commit(session):
        add_annotator(session, "first")
        # A foreign key checked at COMMIT: the group's COMMIT fails, after every session's own part succeeded.
        session.execute(text("PRAGMA defer_foreign_keys = ON"))
        session.execute(
            text(
                "INSERT INTO assignments (study_id, item_id, annotator_id, status, assigned_at)"
                " VALUES (999, 999, 999, 'done', '2026-01-01')"
            )
        )

    outcome = _group(sqlite_engine, breaks_the_commit, {"b": adds("b"), "c": adds("c")})
    assert set(outcome) == {"first", "b", "c"}
    for name, error in outcome.items():
        assert isinstance(error, IntegrityError), (name, error)
        assert "FOREIGN KEY" in str(error)
    assert _names(sqlite_engine) == set()
    with write_session(sqlite_engine) as session:  # the writer goes on with a new group
        add_annotator(session, "later")
    assert _names(sqlite_engine) == {"later"}
    with read_session(sqlite_engine) as session:
        assert session.scalar(select(func.count()).select_from(text("assignments"))) == 0
