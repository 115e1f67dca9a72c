"""The annotator's loop in one read and one write (issue 25, item 1): sessions and statements per click
at the 1st and the 50th vote on a 20,000-item study, on SQLite and PostgreSQL.

A click is what the page does on an answer key: the button's callback stores the answer
(``annotate.screen.vote``: one write that also claims the next item and returns its screen), then the
item fragment runs once and shows that screen (``annotate.screen.current``: no read).  A run with the
item already on the screen (typing a comment, opening the go-back list's box) reads once.  Sessions are
connection checkouts; statements are what reaches the database (SQLite: every statement its trace
callback sees, the driver-level prepared ones included, minus BEGIN / SAVEPOINT / RELEASE / COMMIT;
PostgreSQL: every cursor execute, minus the same).  docs/architecture.md (*The store*) states the bound.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass

import pytest
from sqlalchemy import event, insert, select

from annotate import screen
from annotate.judging.loop import Judgement
from annotate.people.auth import add_annotator
from annotate.people.sessions import open_session
from annotate.store.db import is_sqlite, write_session
from annotate.store.models import Item
from annotate.studies import create_study

STUDY_ITEMS = 20_000
CONTROL = ("BEGIN", "SAVEPOINT", "RELEASE", "COMMIT", "ROLLBACK")


@dataclass
class Count:
    sessions: int = 0
    statements: int = 0
    texts: list | None = None


class Counter:
    """Connection checkouts and statements of an engine, counted while ``measure`` is open."""

    def __init__(self, engine):
        self.current: Count | None = None
        event.listen(engine.pool, "checkout", self._checkout)
        if is_sqlite(engine):
            event.listen(engine, "connect", lambda dbapi, _record: dbapi.set_trace_callback(self._statement))
            engine.dispose()  # connections made from now on carry the trace callback
        else:
            event.listen(engine, "before_cursor_execute", lambda *args: self._statement(args[2]))

    def _checkout(self, *_args):
        if self.current is not None:
            self.current.sessions += 1

    def _statement(self, text: str):
        if self.current is not None and not text.lstrip().upper().startswith(CONTROL):
            self.current.statements += 1
            self.current.texts.append(" ".join(text.split())[:90])

    @contextmanager
    def measure(self):
        self.current = Count(texts=[])
        try:
            yield self.current
        finally:
            self.current = None


def big_study(engine, fixtures):
    """The fixture study's 10 dialogues, then real item rows up to 20,000 (copies under new keys)."""
    with write_session(engine) as session:
        study = create_study(session, "big", "satisfaction", [fixtures / "fga_human_eval"], overlap=3)
        person = add_annotator(session, "rater", "a-long-enough-password")
        token = open_session(session, person)
        first = session.scalars(select(Item).where(Item.study_id == study.id).order_by(Item.id)).first()
        rows = [
            {
                "study_id": study.id,
                "key": f"X{n:05d}.json",
                "condition": first.condition,
                "position": 100 + n,
                "questions": first.questions,
                "payload": first.payload,
                "meta": {},
            }
            for n in range(STUDY_ITEMS - 10)
        ]
        session.execute(insert(Item), rows)
        study_id = study.id
    with write_session(engine) as session:
        assert session.scalar(select(Item.id).where(Item.study_id == study_id).order_by(Item.id.desc())) is not None
    return study_id, token


@pytest.mark.slow
def test_one_write_per_vote_and_one_read_per_screen_at_the_1st_and_50th_vote(engine, fixtures):
    study_id, token = big_study(engine, fixtures)
    counter = Counter(engine)
    state: dict = {}
    now = screen.current(engine, None, study_id, state, token=token)  # the first visit claims (a write)
    clicks, reruns = {}, {}
    for vote in range(1, 51):
        shown = now.item
        with counter.measure() as click:
            outcome = screen.vote(engine, None, study_id, state, Judgement(shown.id, {"satisfied": "1"}, done=True), token=token)
            now = screen.current(engine, None, study_id, state, token=token)  # the run after the callback
        assert outcome.stored and now.item is not None and now.item.id != shown.id
        assert now.progress.mine == vote
        with counter.measure() as rerun:  # a run with the item on the screen
            again = screen.current(engine, None, study_id, state, token=token)
        assert again.item.id == now.item.id and again.progress.mine == vote
        clicks[vote], reruns[vote] = click, rerun
    first, fiftieth = clicks[1], clicks[50]
    print(f"\n{engine.dialect.name}: click {first.sessions} session(s), {first.statements} statements: {first.texts}")
    print(
        f"{engine.dialect.name}: screen read {reruns[1].sessions} session(s), {reruns[1].statements} statements: {reruns[1].texts}"
    )
    assert (first.sessions, fiftieth.sessions) == (1, 1)  # one write transaction per vote, no read after it
    assert first.statements == fiftieth.statements <= 16
    assert (reruns[1].sessions, reruns[50].sessions) == (1, 1)  # one read per screen
    assert reruns[1].statements == reruns[50].statements <= 6


def test_a_vote_builds_no_statement_of_its_own(engine, fixtures):
    """Issue 38, item 2: the write's statements are built once (module-level, ``bindparam``), not per
    vote: building a statement and SQLAlchemy's cache key of a new one were a fifth of a vote's time in
    the serving process.  From the second vote on, every statement the page's write executes (login,
    access, the vote, the next screen; the claim runs as prepared statements on the driver's cursor, unseen here) is an object an earlier vote executed too."""
    with write_session(engine) as session:
        study = create_study(session, "built-once", "satisfaction", [fixtures / "fga_human_eval"], overlap=1)
        person = add_annotator(session, "rater", "a-long-enough-password")
        token = open_session(session, person)
        study_id = study.id
    executed: list = []  # the statement objects themselves: held, so no id is reused
    event.listen(engine, "before_execute", lambda _conn, statement, *_rest: executed.append(statement))
    state: dict = {}
    now = screen.current(engine, None, study_id, state, token=token)
    seen: set[int] = set()
    kept: list = []  # every vote's statements stay alive, so a statement built anew never takes an old id
    new_per_vote = []
    for vote in range(1, 8):
        executed.clear()
        outcome = screen.vote(engine, None, study_id, state, Judgement(now.item.id, {"satisfied": "1"}, done=True), token=token)
        assert outcome.stored
        now = screen.current(engine, None, study_id, state, token=token)
        ids = {id(statement) for statement in executed}
        new_per_vote.append(sorted(str(s).split("\n")[0][:60] for s in executed if id(s) not in seen))
        seen |= ids
        kept.extend(executed)
        assert now.progress.mine == vote
    assert all(not new for new in new_per_vote[1:]), new_per_vote
