"""Issue 38, items 4 and 5, in the store (SQLite and PostgreSQL): two tabs of one person told apart
(``annotate.screen``, ``loop.AnsweredElsewhere``) and "N of M for you" (``loop.Progress``).

Two tab states drive the page's own functions, as ``tests/store/test_screen_properties.py`` does."""

from __future__ import annotations

from sqlalchemy import select

from annotate import screen, service
from annotate.judging import loop
from annotate.judging.loop import Judgement
from annotate.people.auth import add_annotator
from annotate.store.db import read_session, write_session
from annotate.store.models import VoteEvent
from annotate.studies import create_study


def _study(engine, fixtures, overlap=2, sample=3):
    with write_session(engine) as session:
        study = create_study(session, "tabs", "satisfaction", [fixtures / "fga_human_eval"], overlap=overlap, sample=sample)
        people = [add_annotator(session, name, f"{name}-password") for name in ("ada", "bo", "cy")]
    return study.id, people


def _values(engine, person, item_id):
    with read_session(engine) as session:
        return list(
            session.scalars(
                select(VoteEvent.value)
                .where(VoteEvent.annotator_id == person.id, VoteEvent.item_id == item_id)
                .order_by(VoteEvent.id)
            )
        )


def _draw(engine, person, study_id, tab):
    """One run of the page in a tab: the screen, drawn (what the page does before its buttons)."""
    now = screen.current(engine, person, study_id, tab)
    return now, screen.drawn(tab, now.item.id, now.answers) if now.item is not None else None


def test_a_key_in_the_tab_left_behind_stores_nothing_until_it_has_shown_the_answer(engine, fixtures):
    study_id, (ada, *_rest) = _study(engine, fixtures)
    first, second = {}, {}
    now_a, _ = _draw(engine, ada, study_id, first)
    now_b, elsewhere = _draw(engine, ada, study_id, second)
    item = now_a.item.id
    assert now_b.item.id == item and elsewhere is None  # both tabs show the held item
    assert screen.press(engine, ada, study_id, first, Judgement(item, {"satisfied": "1"}, done=True)).stored
    # the second tab's key, pressed with the old screen: refused, nothing stored
    refused = screen.press(engine, ada, study_id, second, Judgement(item, {"satisfied": "0"}, done=True))
    assert not refused.stored and refused.message == screen.ELSEWHERE
    assert _values(engine, ada, item) == ["1"]
    # its next run shows the answer given in the other tab, and says so
    now_b, elsewhere = _draw(engine, ada, study_id, second)
    assert now_b.item.id == item and elsewhere == {"satisfied": "1"}
    # a key now is an explicit change: stored, a new event
    assert screen.press(engine, ada, study_id, second, Judgement(item, {"satisfied": "0"}, done=True)).stored
    assert _values(engine, ada, item) == ["1", "0"]


def test_a_tabs_own_answers_are_never_taken_for_another_tabs(engine, fixtures):
    """CoCo's two questions in one tab: the first answer keeps the item, and the second key is not refused."""
    with write_session(engine) as session:
        study = create_study(session, "coco", "coco", [fixtures / "coco"], condition="coco", overlap=2, sample=2)
        person = add_annotator(session, "dee", "dee-password")
    tab = {}
    now, _ = _draw(engine, person, study.id, tab)
    item = now.item.id
    assert screen.press(engine, person, study.id, tab, Judgement(item, {"human_like": "1"}, done=False)).stored
    # a quick second key, before the run that shows the first answer
    assert screen.press(engine, person, study.id, tab, Judgement(item, {"correct": "0"}, done=True)).stored
    assert sorted(_values(engine, person, item)) == ["0", "1"]


def test_n_of_m_for_you_counts_what_is_still_open_to_this_person(engine, fixtures):
    study_id, (ada, bo, cy) = _study(engine, fixtures, overlap=2, sample=3)

    def progress_of(person):
        with read_session(engine) as session:
            return loop.progress_of(session, person, study_id)

    assert (progress_of(ada).mine, progress_of(ada).for_you) == (0, 3)
    assert progress_of(ada).bar()[1] == "You have judged 0 of 3 for you · study 0% complete"
    # bo and cy judge two items each: one item's two places are filled, the other two have one free place
    for person in (bo, cy):
        for _ in range(2):
            item = service.next_item(engine, person, study_id)
            service.submit(engine, person, item.id, {"satisfied": "1"})
    assert progress_of(ada).for_you == 2
    assert progress_of(bo).for_you == 3  # the two bo judged, and the one bo never had (cy left a place on it)
    held = service.next_item(engine, ada, study_id)
    assert progress_of(ada).for_you == 2  # the item she holds is still hers to judge
    after = service.answer(engine, ada, study_id, held.id, {"satisfied": "0"}, done=True).progress
    assert (after.mine, after.open) == (1, None)  # the write path does not read every item (the page keeps M)
    assert after.bar() == (5 / 6, "You have judged 1 · study 83% complete")
    again = progress_of(ada)
    assert (again.mine, again.for_you) == (1, 2)
    assert again.bar() == (0.5, "You have judged 1 of 2 for you · study 83% complete")


def test_a_change_back_after_another_tabs_answer_is_not_taken_for_a_repeated_key(engine, fixtures):
    """CoCo in two tabs: A answers one question, B changes it, A changes it back with the key it pressed
    first.  That key is a change of B's answer (stored), not a repeat of A's own last key (dropped)."""
    with write_session(engine) as session:
        study = create_study(session, "coco", "coco", [fixtures / "coco"], condition="coco", overlap=2, sample=2)
        person = add_annotator(session, "eve", "eve-password")
    a, b = {}, {}
    now, _ = _draw(engine, person, study.id, a)
    _draw(engine, person, study.id, b)
    item = now.item.id
    assert screen.press(engine, person, study.id, a, Judgement(item, {"human_like": "1"}, done=False)).stored
    _draw(engine, person, study.id, a)  # the run after A's key (the screen its write returned)
    _draw(engine, person, study.id, b)  # B's next run shows A's answer ...
    assert screen.press(
        engine, person, study.id, b, Judgement(item, {"human_like": "0"}, done=False)
    ).stored  # ... and changes it
    _, elsewhere = _draw(engine, person, study.id, a)
    assert elsewhere == {"human_like": "0"}
    assert screen.press(engine, person, study.id, a, Judgement(item, {"human_like": "1"}, done=False)).stored
    assert _values(engine, person, item) == ["1", "0", "1"]
