"""Issue 16, item 6: a property test (hypothesis) with threads, on SQLite and PostgreSQL, of the
counter-based assignment: whatever annotators do at once (judge, skip, change a vote, log out), no item
gets more annotators than its capacity, every acknowledged vote is stored, and each item's holders
counter equals its assignments."""

from __future__ import annotations

import itertools
from concurrent.futures import ThreadPoolExecutor

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select

from annotate import service
from annotate.store.db import read_session
from annotate.store.models import Annotator, Item, VoteEvent
from annotate.studies import StudyError
from tests.store.test_holders import counters_match
from tests.store_helpers import make_study

OPS = st.sampled_from(["judge", "judge", "skip", "change", "release"])
SCRIPTS = st.lists(st.lists(OPS, min_size=1, max_size=6), min_size=2, max_size=6)
_names = itertools.count()


def run_script(engine, study_id: int, person: Annotator, script: list[str]) -> int:
    """One annotator's actions; returns how many votes the store acknowledged."""
    acknowledged, judged = 0, []
    for step in script:
        if step == "release":
            service.release_places(engine, person)
            continue
        if step == "change" and judged:
            try:
                service.submit(engine, person, judged[-1], {"satisfied": "0"})
                acknowledged += 1
            except StudyError:  # refused (the item filled up after a release): not acknowledged
                pass
            continue
        item = service.next_item(engine, person, study_id)
        if item is None:
            continue
        if step == "skip":
            service.skip(engine, person, item.id)
            continue
        service.submit(engine, person, item.id, {"satisfied": "1"})
        acknowledged += 1
        judged.append(item.id)
    return acknowledged


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(overlap=st.integers(1, 3), scripts=SCRIPTS)
def test_capacity_and_votes_hold_whatever_annotators_do_at_once(engine, fixtures, overlap, scripts):
    study, people = make_study(engine, fixtures, overlap=overlap, annotators=len(scripts), name=f"prop-{next(_names)}")
    with ThreadPoolExecutor(max_workers=len(scripts)) as pool:
        acknowledged = list(pool.map(lambda pair: run_script(engine, study.id, *pair), zip(people, scripts)))
    with read_session(engine) as session:
        stored = dict(
            session.execute(
                select(VoteEvent.annotator_id, func.count())
                .join(Item, Item.id == VoteEvent.item_id)
                .where(Item.study_id == study.id)
                .group_by(VoteEvent.annotator_id)
            ).all()
        )
        voters = session.execute(
            select(VoteEvent.item_id, func.count(func.distinct(VoteEvent.annotator_id)))
            .join(Item, Item.id == VoteEvent.item_id)
            .where(Item.study_id == study.id)
            .group_by(VoteEvent.item_id)
        ).all()
    assert [stored.get(p.id, 0) for p in people] == acknowledged  # every acknowledged vote, nothing else
    assert all(n <= overlap for _, n in voters)  # never more annotators on an item than its capacity
    counters_match(engine, study.id)
