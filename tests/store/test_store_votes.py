"""Assignment and the vote store, on SQLite and PostgreSQL."""

from __future__ import annotations

import hashlib
from datetime import timedelta

import pytest
from sqlalchemy import func, select

from annotate.analysis.reports import progress
from annotate.judging.votes import CapacityError, Reassigned, cast_vote, import_votes, rows_to_csv, vote_rows
from annotate.store.db import read_session, write_session
from annotate.store.models import Assignment, Item, VoteEvent, utcnow
from annotate.studies import StudyError, create_study
from annotate.studies.assignment import reopen_item, skip_item
from formats import ReaderError
from tests.store_helpers import make_study, next_item


def judge_all(engine, study, annotator, value="1") -> list[str]:
    keys = []
    while True:
        with write_session(engine) as session:
            item = next_item(session, study.id, annotator)
            if item is None:
                return keys
            keys.append(item.key)
            cast_vote(session, annotator, item.id, "satisfied", value)


def test_each_item_gets_k_distinct_annotators(engine, fixtures):
    study, people = make_study(engine, fixtures, overlap=3, annotators=5)
    for person in people:
        judge_all(engine, study, person)
    with read_session(engine) as session:
        report = progress(session, study.id)
        per_item = session.execute(
            select(Assignment.item_id, func.count(func.distinct(Assignment.annotator_id)))
            .where(Assignment.study_id == study.id, Assignment.status == "done")
            .group_by(Assignment.item_id)
        ).all()
    assert sorted(n for _, n in per_item) == [3] * 10
    assert report.judgements_done == 30 and report.items_complete == 10
    assert sum(c.done for c in report.annotators.values()) == 30


def test_least_annotated_first_and_resume(engine, fixtures):
    study, (a, b, c) = make_study(engine, fixtures, overlap=2, annotators=3)
    first = judge_all(engine, study, a)
    assert len(first) == 10
    with write_session(engine) as session:
        item_b = next_item(session, study.id, b)
    with write_session(engine) as session:
        assert next_item(session, study.id, b).id == item_b.id  # an unfinished item comes back
    # Every item has one judgement, so b's next items are all at count 1: any order, but no repeats.
    assert len(set(judge_all(engine, study, b))) == 10
    assert judge_all(engine, study, c) == []  # all items have k = 2


def test_order_is_seeded_and_reproducible(engine, fixtures):
    study, (a, b) = make_study(engine, fixtures, overlap=2, annotators=2, name="one", seed=5)
    order_a = judge_all(engine, study, a)
    order_b = judge_all(engine, study, b)
    assert order_a != order_b  # each annotator has an own shuffled order

    # The same seed and annotator name give the same order in another study with the same items.
    def shuffle_rank(study, annotator, item_key, condition):  # the formula of assignment._ranks
        seed = study.settings.get("seed", 0)
        return hashlib.sha256(f"{seed}\x1f{annotator.name}\x1f{item_key}\x1f{condition}".encode()).hexdigest()

    with read_session(engine) as session:
        items = session.scalars(select(Item).where(Item.study_id == study.id)).all()
        ranks = sorted(items, key=lambda i: shuffle_rank(study, a, i.key, i.condition))
    assert [i.key for i in ranks] == order_a


def test_conditions_are_balanced(engine, fixtures):
    study, (a,) = make_study(engine, fixtures, kind="coco", overlap=1, annotators=1)
    conditions = []
    while True:
        with write_session(engine) as session:
            item = next_item(session, study.id, a)
            if item is None:
                break
            conditions.append(item.condition)
            cast_vote(session, a, item.id, "human_like", "1")
            cast_vote(session, a, item.id, "correct", "0")
    assert len(conditions) == 12
    for n in range(1, 13):
        prefix = conditions[:n]
        assert abs(prefix.count("original") - prefix.count("coco")) <= 1


def test_abandoned_items_are_reclaimed(engine, fixtures):
    study, (a, b) = make_study(engine, fixtures, overlap=1, annotators=2, timeout=10)
    with write_session(engine) as session:
        held = next_item(session, study.id, a)
    later = utcnow() + timedelta(minutes=11)
    taken = []
    while True:
        with write_session(engine) as session:
            item = next_item(session, study.id, b, now=later)
            if item is None:
                break
            taken.append(item.key)
            cast_vote(session, b, item.id, "satisfied", "1", now=later)
    assert held.key in taken and len(taken) == 10
    # the first holder's place timed out and the item went to b: refused, saying so (issue 23, item 1)
    with (
        pytest.raises(Reassigned, match=r"went to another annotator \(your place on it timed out after 10 minutes\)"),
        write_session(engine) as session,
    ):
        cast_vote(session, a, held.id, "satisfied", "0", now=later)


def test_never_more_than_k_unless_reopened(engine, fixtures):
    study, people = make_study(engine, fixtures, overlap=2, annotators=3)
    with read_session(engine) as session:
        item_id = session.scalar(select(Item.id).where(Item.study_id == study.id, Item.key == "PMUL4648.json"))
    for person in people[:2]:
        with write_session(engine) as session:
            cast_vote(session, person, item_id, "satisfied", "1")
    with pytest.raises(CapacityError), write_session(engine) as session:
        cast_vote(session, people[2], item_id, "satisfied", "1")
    with write_session(engine) as session:
        reopen_item(session, item_id)
    with write_session(engine) as session:
        cast_vote(session, people[2], item_id, "satisfied", "0")
    with read_session(engine) as session:
        assert len(vote_rows(session, study.id)) == 3


def test_skip_frees_the_place(engine, fixtures):
    study, (a, b) = make_study(engine, fixtures, overlap=1, annotators=2)
    with write_session(engine) as session:
        skipped = next_item(session, study.id, a)
        skip_item(session, a, skipped.id)
    with write_session(engine) as session:
        following = next_item(session, study.id, a)
    assert following.key != skipped.key  # the next item differs
    assert skipped.key in judge_all(engine, study, b)  # the freed place goes to someone else


def test_changing_a_vote_appends_an_event(engine, fixtures):
    study, (a,) = make_study(engine, fixtures, overlap=1, annotators=1)
    with write_session(engine) as session:
        item = next_item(session, study.id, a)
        cast_vote(session, a, item.id, "satisfied", "1", comment="fine", seconds=12.5)
    with write_session(engine) as session:
        cast_vote(session, a, item.id, "satisfied", "0", comment="on second thought")
    with read_session(engine) as session:
        current = vote_rows(session, study.id)
        history = vote_rows(session, study.id, history=True)
    assert [(r["value"], r["comment"]) for r in current] == [("0", "on second thought")]
    assert [(r["value"], r["seconds"]) for r in history] == [("1", 12.5), ("0", None)]


def test_values_are_checked(engine, fixtures):
    study, (a,) = make_study(engine, fixtures, kind="slu", overlap=1, annotators=1)
    with write_session(engine) as session:
        item = next_item(session, study.id, a)
    for question, value, message in [
        ("satisfied", "1", "has no question"),
        (item.questions[0], "yes", "takes 1 or 0"),
        ("transcription_status", "great", "takes one of"),
    ]:
        with pytest.raises(StudyError, match=message), write_session(engine) as session:
            cast_vote(session, a, item.id, question, value)
    with write_session(engine) as session:
        cast_vote(session, a, item.id, "transcription", "  i want canapes food  ")
        cast_vote(session, a, item.id, "transcription_status", "transcribed")
        for question in item.questions[:-2]:
            cast_vote(session, a, item.id, question, "1")
    with read_session(engine) as session:
        rows = {r["question"]: r["value"] for r in vote_rows(session, study.id)}
        status = session.scalar(select(Assignment.status).where(Assignment.item_id == item.id))
    assert rows["transcription"] == "  i want canapes food  " and status == "done"


def test_export_import_round_trip(engine, fixtures):
    study, people = make_study(engine, fixtures, overlap=2, annotators=3, name="source")
    for i, person in enumerate(people):
        judge_all(engine, study, person, value=str(i % 2))
    with write_session(engine) as session:
        item_id = session.scalar(select(Item.id).where(Item.study_id == study.id, Item.key == "MUL0144.json"))
        holder = session.scalars(select(Assignment.annotator_id).where(Assignment.item_id == item_id)).first()
        person = next(p for p in people if p.id == holder)
        cast_vote(session, person, item_id, "satisfied", "1", comment="=cmd|' /C calc'!A0")
    with read_session(engine) as session:
        exported = vote_rows(session, study.id)
    text = rows_to_csv(exported)
    assert "'=cmd" in text  # neutralised for spreadsheets
    with write_session(engine) as session:
        target = create_study(session, "target", "satisfaction", [fixtures / "fga_human_eval"], overlap=2)
        assert import_votes(session, target, "votes.csv", text) == 20
    with read_session(engine) as session:
        imported = vote_rows(session, target.id)
    strip = lambda rows: sorted((r["item"], r["annotator"], r["question"], r["value"], r["comment"]) for r in rows)  # noqa: E731
    assert strip(imported) == strip(exported)


def test_bad_vote_import_changes_nothing(engine, fixtures):
    study, _ = make_study(engine, fixtures, overlap=3, annotators=0)
    text = "item,annotator,question,value\nPMUL4648.json,new-person,satisfied,1\nPMUL4648.json,other,satisfied,maybe\n"
    with pytest.raises(ReaderError, match="votes.csv:line 3"), write_session(engine) as session:
        import_votes(session, study, "votes.csv", text)
    with read_session(engine) as session:
        assert session.scalar(select(func.count()).select_from(VoteEvent)) == 0
        from annotate.people.auth import find_annotator

        assert find_annotator(session, "new-person") is None
