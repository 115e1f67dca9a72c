"""Issue 38, item 3, in the store: where a new tab or a new login starts (``service.last_study``), and the
CoCo rule (an original and its counterfactual never judged one after the other) across places given back."""

from __future__ import annotations

from annotate import service
from annotate.people.auth import add_annotator
from annotate.store.db import write_session
from annotate.studies import create_study


def _studies(engine, fixtures):
    with write_session(engine) as session:
        warm_up = create_study(session, "warm-up", "satisfaction", [fixtures / "fga_human_eval"], overlap=5, sample=3)
        # two turns, each as the original and as its counterfactual: four items
        coco = create_study(session, "coco", "coco", [fixtures / "coco"], condition="coco", overlap=5, sample=2)
        person = add_annotator(session, "rater", "rater-password")
    return warm_up.id, coco.id, person


def _judge(engine, person, item) -> None:
    service.submit(engine, person, item.id, {"human_like": "1", "correct": "0"})


def test_a_logout_does_not_let_the_counterfactual_follow_its_original(engine, fixtures):
    _warm_up, coco, person = _studies(engine, fixtures)
    first = service.next_item(engine, person, coco)
    _judge(engine, person, first)
    second = service.next_item(engine, person, coco)  # held: the other turn
    assert second.key != first.key
    service.release_places(engine, person)  # a logout gives it back
    judged = [first.key]
    while (item := service.next_item(engine, person, coco)) is not None:
        _judge(engine, person, item)
        judged.append(item.key)
    assert len(judged) == 4
    assert all(a != b for a, b in zip(judged, judged[1:], strict=False)), judged


def test_a_new_tab_starts_where_the_person_was(engine, fixtures):
    warm_up, coco, person = _studies(engine, fixtures)
    both = [warm_up, coco]
    assert service.last_study(engine, person, both) is None  # never worked: the page takes the first
    service.next_item(engine, person, coco)
    assert service.last_study(engine, person, both) == coco  # the held item's study
    service.release_places(engine, person)
    assert service.last_study(engine, person, both) == coco  # given back (a logout): still the latest place
    assert service.last_study(engine, person, [warm_up]) is None  # only the studies open to them count
