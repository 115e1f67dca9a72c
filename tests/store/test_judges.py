"""Issue 15, item 7 in the app: a judge's labels uploaded for a study are compared with the study's
human majority and never stored as votes."""

from __future__ import annotations

import pytest

from annotate import service
from annotate.analysis.study_data import judge_study
from annotate.people.auth import PermissionDenied, add_annotator
from annotate.people.sessions import log_in
from annotate.store.db import read_session, write_session
from annotate.store.models import VoteEvent
from tests.store_helpers import make_study


def test_a_judge_upload_is_compared_with_the_human_majority(engine, fixtures):
    study, people = make_study(engine, fixtures, annotators=3)
    with write_session(engine) as session:
        add_annotator(session, "boss", "boss-password", "admin")
    boss = log_in(engine, "boss", "boss-password")[0]
    answers = {}
    for person in people:  # every item gets 3 votes; the majority is "1" on even positions
        while (item := service.next_item(engine, person, study.id)) is not None:
            value = "1" if item.position % 2 == 0 else "0"
            answers[item.key] = value
            service.submit(engine, person, item.id, {"satisfied": value})
    labels = "item,annotator,question,value\n" + "".join(f"{k},gpt-judge,satisfied,{v}\n" for k, v in answers.items())
    labels += "".join(f"{k},always-yes,satisfied,1\n" for k in answers)
    with read_session(engine) as session:
        before = session.query(VoteEvent).count()
    report = judge_study(engine, boss, study.id, "labels.csv", labels.encode())
    rows = {j["judge"]: j for j in report["judges"]}
    assert rows["gpt-judge"]["accuracy"] == 1.0 and rows["gpt-judge"]["n"] == len(answers)
    share_yes = sum(v == "1" for v in answers.values()) / len(answers)
    assert rows["always-yes"]["accuracy"] == pytest.approx(share_yes)
    with read_session(engine) as session:
        assert session.query(VoteEvent).count() == before  # the judges are not votes
    with pytest.raises(PermissionDenied):
        judge_study(engine, people[0], study.id, "labels.csv", labels.encode())
    with pytest.raises(ValueError, match="labels.csv"):
        judge_study(engine, boss, study.id, "labels.csv", b"item,value\nx,1\n")
