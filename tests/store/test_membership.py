"""Per-study membership and archiving (issue 14, item 4), enforced on the server."""

from __future__ import annotations

import pytest

from annotate import service
from annotate.people.auth import PermissionDenied, add_annotator
from annotate.people.sessions import log_in
from annotate.store.db import write_session
from tests.store_helpers import make_study


def people(engine):
    with write_session(engine) as session:
        add_annotator(session, "boss", "boss-password", "admin")
        for name in ("on", "off"):
            add_annotator(session, name, f"{name}-password")
    return [log_in(engine, name, f"{name}-password")[0] for name in ("boss", "on", "off")]


def test_an_annotator_not_on_a_study_cannot_see_or_vote_in_it(engine, fixtures):
    study, _ = make_study(engine, fixtures, annotators=0)
    boss, on, off = people(engine)
    assert study.id in [s.id for s in service.list_studies(engine, off)]  # no members yet: open to everybody
    held = service.next_item(engine, off, study.id)
    service.set_members(engine, boss, study.id, ["on"])
    assert [s.id for s in service.list_studies(engine, off)] == []
    assert [s.id for s in service.list_studies(engine, on)] == [study.id]
    with pytest.raises(PermissionDenied, match="not on this study"):
        service.next_item(engine, off, study.id)
    with pytest.raises(PermissionDenied):
        service.submit(engine, off, held.id, {"satisfied": "1"})  # an item held from before is closed too
    item = service.next_item(engine, on, study.id)
    service.submit(engine, on, item.id, {"satisfied": "1"})
    with pytest.raises(PermissionDenied):
        service.set_members(engine, on, study.id, ["on", "off"])  # admins only
    log = service.study_changes(engine, boss, study.id)
    assert [(c.what, c.old, c.new, c.by) for c in log] == [("members", "(everybody)", "on", "boss")]


def test_archive_hides_a_study_and_changes_are_recorded(engine, fixtures):
    study, _ = make_study(engine, fixtures, annotators=0)
    boss, on, _off = people(engine)
    service.next_item(engine, on, study.id)
    service.set_archived(engine, boss, study.id, True)
    assert service.list_studies(engine, on) == [] and service.list_studies(engine)[0].archived
    with pytest.raises(PermissionDenied):
        service.next_item(engine, on, study.id)
    report = service.study_progress(engine, boss, study.id)
    assert report.held == {}  # the place went back
    service.set_archived(engine, boss, study.id, False)
    service.set_overlap(engine, boss, study.id, 5)
    service.set_guideline(engine, boss, study.id, "Read every turn.")
    assert service.next_item(engine, on, study.id) is not None
    log = [(c.what, c.old, c.new) for c in service.study_changes(engine, boss, study.id)]
    assert log == [
        ("archived", "False", "True"),
        ("archived", "True", "False"),
        ("overlap", "3", "5"),
        ("guideline", "", "Read every turn."),
    ]


def test_time_per_item_and_a_flag_for_implausibly_fast_judging(engine, fixtures):
    study, _ = make_study(engine, fixtures, annotators=0)
    boss, on, off = people(engine)
    for person, seconds in ((on, 40.0), (off, 1.5)):
        for _ in range(4):
            item = service.next_item(engine, person, study.id)
            service.submit(engine, person, item.id, {"satisfied": "1"}, seconds=seconds)
    report = service.study_progress(engine, boss, study.id).time_per_item
    assert report["on"].median_seconds == 40.0 and not report["on"].fast
    assert report["off"].median_seconds == 1.5 and report["off"].fast


def test_gold_answers_uploaded_in_the_app(engine, fixtures):
    from sqlalchemy import select

    from annotate.store.db import read_session
    from annotate.store.models import Item

    study, _ = make_study(engine, fixtures, annotators=0)
    boss, on, _off = people(engine)
    bad = b"item,question,value\nPMUL4648.json,satisfied,1\nNOPE.json,satisfied,0\n"
    with pytest.raises(ValueError, match="gold.csv:line 3"):
        service.set_gold(engine, boss, study.id, "gold.csv", bad)
    with pytest.raises(PermissionDenied):
        service.set_gold(engine, on, study.id, "gold.csv", bad)
    assert service.set_gold(engine, boss, study.id, "gold.csv", b"item,question,value\nPMUL4648.json,satisfied,0\n") == 1
    with read_session(engine) as session:
        gold = {i.key: i.gold for i in session.scalars(select(Item).where(Item.study_id == study.id)) if i.gold}
    assert gold == {"PMUL4648.json": {"satisfied": "0"}}  # the bad file changed nothing
    assert service.study_changes(engine, boss, study.id)[-1].new == "1 answers from gold.csv"


def test_analysis_settings_stored_with_the_study(engine, fixtures):
    from metrics.analysis import DEFAULTS, AnalysisSettings

    study, _ = make_study(engine, fixtures, annotators=0)
    boss, _on, _off = people(engine)
    assert service.study_settings(engine, boss, study.id) == DEFAULTS
    chosen = AnalysisSettings(rating="majority", grid=(0.0, 4.0, 41), resamples=50)
    service.set_study_settings(engine, boss, study.id, chosen)
    assert service.study_settings(engine, boss, study.id) == chosen
    report, _ = service.export(engine, boss, study.id, "report-md")  # no settings given: the study's own
    assert b"linspace 0\\.\\.4, 41 points" in report and b"| human rating | majority |" in report
    assert service.study_changes(engine, boss, study.id)[-1].what == "analysis settings"


def test_an_adjudicated_label_appears_in_the_majority_export(engine, fixtures):
    import csv
    import io

    study, _ = make_study(engine, fixtures, annotators=0, overlap=2)
    boss, on, off = people(engine)
    for person, value in ((on, "1"), (off, "0")):  # two annotators who disagree on everything
        while (item := service.next_item(engine, person, study.id)) is not None:
            service.submit(engine, person, item.id, {"satisfied": value}, comment=f"{person.name} says {value}")
    drill = service.item_votes(engine, boss, study.id, "PMUL4648.json", "fga_human_eval")
    assert sorted((r["annotator"], r["value"], r["comment"]) for r in drill) == [
        ("off", "0", "off says 0"),
        ("on", "1", "on says 1"),
    ]
    with pytest.raises(PermissionDenied):
        service.adjudicate(engine, on, study.id, "PMUL4648.json", "fga_human_eval", "satisfied", "1")
    with pytest.raises(ValueError, match="takes 1 or 0"):
        service.adjudicate(engine, boss, study.id, "PMUL4648.json", "fga_human_eval", "satisfied", "maybe")
    service.adjudicate(engine, boss, study.id, "PMUL4648.json", "fga_human_eval", "satisfied", "1", "the booking was right")
    content, _ = service.export(engine, boss, study.id, "majority-csv")
    rows = {r["item"]: r for r in csv.DictReader(io.StringIO(content.decode()))}
    assert rows["PMUL4648.json"]["majority"] == "" and rows["PMUL4648.json"]["tie"] == "1"
    assert (rows["PMUL4648.json"]["final"], rows["PMUL4648.json"]["final_source"]) == ("1", "adjudicated")
    assert (rows["MUL0144.json"]["final"], rows["MUL0144.json"]["final_source"]) == ("", "")  # a tie, not adjudicated
    report, _ = service.export(engine, boss, study.id, "report-md")
    assert b"Adjudicated items" in report and b"the booking was right" not in report
    votes_csv, _ = service.export(engine, boss, study.id, "votes-csv")
    assert votes_csv.decode().count("boss") == 0  # the adjudication is not a vote
