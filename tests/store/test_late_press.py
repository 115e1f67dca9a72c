"""A press replayed by Streamlit after its tab moved on stores nothing (issue 25 review; found by the
scale-out run: one vote event more than presses).  Streamlit keeps a button's press when a run is
interrupted by the next request and replays it in the following run, where the old item's callback is
still registered; ``annotate.screen.press`` is what the page's callback calls."""

from __future__ import annotations

from sqlalchemy import func, select

from annotate import screen
from annotate.judging.loop import Judgement
from annotate.store.db import read_session
from annotate.store.models import VoteEvent
from tests.store_helpers import make_study


def events(engine) -> int:
    with read_session(engine) as session:
        return session.scalar(select(func.count()).select_from(VoteEvent))


def test_a_replayed_press_after_the_tab_moved_on_stores_nothing(engine, fixtures):
    study, (person,) = make_study(engine, fixtures, annotators=1, name="late")
    state: dict = {}
    first = screen.current(engine, person, study.id, state).item
    outcome = screen.press(engine, person, study.id, state, Judgement(first.id, {"satisfied": "1"}, done=True))
    assert outcome.stored and events(engine) == 1
    assert screen.showing(state, study.id) != first.id  # the tab moved on
    assert screen.press(engine, person, study.id, state, Judgement(first.id, {"satisfied": "1"}, done=True)) is None  # the replay
    late = Judgement(first.id, {"satisfied": "0"}, done=True)
    assert screen.press(engine, person, study.id, state, late) is None  # any late press
    assert events(engine) == 1


def test_a_repeated_incomplete_answer_stores_nothing_new_and_a_new_one_is_stored(engine, fixtures):
    study, (person,) = make_study(engine, fixtures, kind="coco", annotators=1, name="coco-late")
    state: dict = {}
    item = screen.current(engine, person, study.id, state).item
    assert screen.press(engine, person, study.id, state, Judgement(item.id, {"human_like": "1"}, done=False)).stored
    assert screen.press(engine, person, study.id, state, Judgement(item.id, {"human_like": "1"}, done=False)) is None
    assert events(engine) == 1
    assert screen.press(engine, person, study.id, state, Judgement(item.id, {"correct": "0"}, done=True)).stored
    assert events(engine) == 2 and screen.showing(state, study.id) != item.id
