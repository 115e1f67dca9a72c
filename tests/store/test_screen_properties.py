"""Issue 23, item 1: for any interleaving of claims, timeouts and answers from several tabs, every stored
vote names an item that was on the screen of the tab that gave it (SQLite and PostgreSQL).

Each tab is driven exactly as the annotator's page drives it (``annotate.screen``): a run shows
``screen.shown(...)``; a key press is seen by the run it starts, and fires the answer button only if
that run draws a button of the same key — the item id is in the key (``ItemContext.key``), which is
Streamlit's rule for widgets, not ours; the answer goes to ``screen.vote`` with the item drawn.  The
browser tests (``tests/browser/test_browser_integrity.py``) show the same two cases in Chromium.
"""

from __future__ import annotations

import itertools
from datetime import timedelta

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select, update

from annotate import screen, service
from annotate.judging.loop import Judgement
from annotate.judging.votes import Reassigned
from annotate.store.db import read_session, write_session
from annotate.store.models import Assignment, Item, VoteEvent, utcnow
from tests.store_helpers import make_study

TABS = [(0, "a"), (0, "b"), (1, "a")]  # (annotator, tab): annotator 0 works in two tabs
# run: a rerun (a widget, a click elsewhere); press: the answer key; reload: a new session, the tab's state
# gone; timeout: an annotator's places time out; other: someone without a tab here judges their next item
ACTIONS = ["run", "press", "press", "press", "skip", "reload", "timeout", "timeout", "other", "other", "other"]
STEP = st.tuples(st.sampled_from(ACTIONS), st.integers(0, len(TABS) - 1))
_names = itertools.count()


def small_study(engine, fixtures, overlap: int):
    """Three dialogues, five annotators: few enough that a freed place is soon taken by someone else."""
    from annotate.people.auth import add_annotator
    from annotate.studies import create_study

    name = f"screen-{next(_names)}"
    files = [fixtures / "fga_human_eval" / f for f in ("MUL0144.json.txt", "PMUL2000.json.txt", "SNG0095.json.txt")]
    with write_session(engine) as session:
        study = create_study(session, name, "satisfaction", files, overlap=overlap)
        people = [add_annotator(session, f"{name}-a{i}") for i in range(5)]
    return study, people


class Tab:
    """One browser tab: its own session state and what its last run drew."""

    def __init__(self, engine, study_id, user):
        self.engine, self.study_id, self.user = engine, study_id, user
        self.state: dict = {}
        self.drawn: int | None = None  # the item whose buttons are on this tab's screen

    def run(self, pressed_on: int | None = None):
        """One run of the page; ``pressed_on``: the item whose button was pressed (drawn by the last run)."""
        item = screen.shown(self.engine, self.user, self.study_id, self.state)
        outcome = None
        if item is not None and pressed_on == item.id:  # the pressed key is drawn again: the button fires
            outcome = screen.vote(
                self.engine, self.user, self.study_id, self.state, Judgement(item.id, {"satisfied": "1"}, done=True)
            )
            item = screen.shown(self.engine, self.user, self.study_id, self.state)  # the rerun after the answer
        self.drawn = None if item is None else item.id
        return outcome


def events_of(engine, annotator_id: int) -> list[tuple[int, int]]:
    with read_session(engine) as session:
        return [
            tuple(r)
            for r in session.execute(
                select(VoteEvent.id, VoteEvent.item_id).where(VoteEvent.annotator_id == annotator_id).order_by(VoteEvent.id)
            )
        ]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(overlap=st.integers(1, 2), steps=st.lists(STEP, min_size=6, max_size=30))
def test_every_stored_vote_names_an_item_its_tab_showed(engine, fixtures, overlap, steps):
    study, people = small_study(engine, fixtures, overlap)
    tabs = [Tab(engine, study.id, people[person]) for person, _ in TABS]
    others = people[2:]
    acknowledged = {p.id: 0 for p in people}
    for tab in tabs:
        tab.run()
    for action, which in steps:
        if action == "timeout":
            with write_session(engine) as session:
                session.execute(
                    update(Assignment)
                    .where(Assignment.annotator_id == people[which % 2].id, Assignment.status == "active")
                    .values(assigned_at=utcnow() - timedelta(days=1))
                )
            continue
        if action == "other":
            item = service.next_item(engine, others[which], study.id)
            if item is not None:
                service.submit(engine, others[which], item.id, {"satisfied": "0"})
                acknowledged[others[which].id] += 1
            continue
        tab = tabs[which]
        if action == "reload":
            tab.state = {}
            tab.run()
        elif action == "skip" and tab.drawn is not None:
            screen.skip(engine, tab.user, study.id, tab.state, tab.drawn)
            tab.run()
        elif action == "press":
            on_screen = tab.drawn
            before = events_of(engine, tab.user.id)
            outcome = tab.run(pressed_on=on_screen)
            new = [item_id for event_id, item_id in events_of(engine, tab.user.id) if (event_id, item_id) not in before]
            # the one promise: stored on the item that was on this tab's screen, or refused and nothing stored
            assert new == ([on_screen] if outcome is not None and outcome.stored else [])
            if outcome is not None and outcome.stored:
                acknowledged[tab.user.id] += 1
            event("press: " + ("no button" if outcome is None else "stored" if outcome.stored else "refused"))
            if outcome is not None and not outcome.stored:
                assert outcome.message == screen.REASSIGNED and tab.drawn != on_screen
        else:
            tab.run()
    with read_session(engine) as session:
        stored = {p.id: session.scalar(select(func.count()).where(VoteEvent.annotator_id == p.id)) for p in people}
        full = session.execute(select(Item.id, Item.holders).where(Item.study_id == study.id)).all()
    assert stored == acknowledged  # nothing stored that was not acknowledged, nothing acknowledged lost
    assert all(holders <= overlap for _, holders in full)


def test_a_refused_answer_names_the_item_and_why(engine, fixtures):
    """The store's refusal, on both databases: a place that timed out on an item now full."""
    study, people = make_study(engine, fixtures, overlap=1, annotators=2, name="refusal")
    state: dict = {}
    item = screen.shown(engine, people[0], study.id, state)
    with write_session(engine) as session:
        session.execute(
            update(Assignment).where(Assignment.annotator_id == people[0].id).values(assigned_at=utcnow() - timedelta(days=1))
        )
    # the other annotator is given the freed item and judges it
    with write_session(engine) as session:
        from annotate.judging.votes import cast_vote

        cast_vote(session, people[1], item.id, "satisfied", "0")
    try:
        service.submit(engine, people[0], item.id, {"satisfied": "1"})
        raise AssertionError("the vote was stored")
    except Reassigned as err:
        assert f"Item {item.key} went to another annotator (your place on it timed out after 30 minutes)" in str(err)
    outcome = screen.vote(engine, people[0], study.id, state, Judgement(item.id, {"satisfied": "1"}, done=True))
    assert not outcome.stored and outcome.message == screen.REASSIGNED
    assert screen.shown(engine, people[0], study.id, state).id != item.id  # the next one
    assert events_of(engine, people[0].id) == []
