"""Admin actions that say what they did and can be repeated (issue 24, items 3 and 8): archive and
unarchive as two explicit, idempotent actions; the drill-down marks each annotator's current vote;
loose FGA text files uploaded without a system name are not filed under a made-up system."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from annotate import service
from annotate.people.auth import add_annotator
from annotate.people.sessions import log_in
from annotate.store.db import read_session, write_session
from annotate.store.models import Item, Study
from tests.store_helpers import make_study, zip_bytes


def boss_and(engine, *names: str):
    with write_session(engine) as session:
        add_annotator(session, "boss", "boss-password", "admin")
        for name in names:
            add_annotator(session, name, f"{name}-password")
    return [log_in(engine, "boss", "boss-password")[0]] + [log_in(engine, n, f"{n}-password")[0] for n in names]


def test_archive_twice_is_archived_and_unarchive_twice_is_open(engine, fixtures):
    study, _ = make_study(engine, fixtures, annotators=0)
    boss, on = boss_and(engine, "on")
    assert service.set_archived(engine, boss, study.id, True) == {"archived": True, "changed": True}
    assert service.set_archived(engine, boss, study.id, True) == {"archived": True, "changed": False}  # not a toggle
    assert service.list_studies(engine)[0].archived and service.list_studies(engine, on) == []
    assert service.set_archived(engine, boss, study.id, False) == {"archived": False, "changed": True}
    assert service.set_archived(engine, boss, study.id, False) == {"archived": False, "changed": False}
    assert not service.list_studies(engine)[0].archived and [s.id for s in service.list_studies(engine, on)] == [study.id]
    log = [(c.what, c.old, c.new) for c in service.study_changes(engine, boss, study.id)]
    assert log == [("archived", "False", "True"), ("archived", "True", "False")]  # only real changes are recorded


def test_the_drill_down_marks_each_annotators_current_vote(engine, fixtures):
    study, _ = make_study(engine, fixtures, annotators=0)
    boss, ann, bea = boss_and(engine, "ann", "bea")
    judged = []
    for person in (ann, bea):
        while (item := service.next_item(engine, person, study.id)) is not None:
            service.submit(engine, person, item.id, {"satisfied": "1"}, comment=f"{person.name} first")
            judged.append(item)
    item = judged[0]  # judged by both (overlap 3, two annotators)
    service.submit(engine, ann, item.id, {"satisfied": "0"}, comment="changed my mind")  # supersedes ann's first vote
    rows = service.item_votes(engine, boss, study.id, item.key, item.condition)
    assert [(r["annotator"], r["value"], r["comment"], r["current"]) for r in rows] == [
        ("ann", "1", "ann first", False),
        ("bea", "1", "bea first", True),
        ("ann", "0", "changed my mind", True),
    ]


FGA_FILES = ("MUL0144.json.txt", "PMUL4648.json.txt")


def conditions(engine, boss, name: str) -> set[str]:
    with read_session(engine) as session:
        return set(session.scalars(select(Item.condition).join(Study).where(Study.name == name)))


def test_loose_fga_text_files_are_not_filed_under_a_made_up_system(engine, fixtures):
    (boss,) = boss_and(engine)
    data = {name: (fixtures / "fga_human_eval" / name).read_bytes() for name in FGA_FILES}
    # One loose file with no system name: the file's name (up to its first dot), as for a JSON file.
    service.create_study_from_uploads(engine, boss, "one file", "satisfaction", [("trade.sys.txt", data[FGA_FILES[0]])])
    assert conditions(engine, boss, "one file") == {"trade"}
    # Several loose files carry no system name at all: the admin is asked for it, and nothing is created.
    with pytest.raises(ValueError, match="give the system name") as refused:
        service.create_study_from_uploads(engine, boss, "two files", "satisfaction", list(data.items()))
    assert "MUL0144.json.txt" in str(refused.value)
    assert "two files" not in [s.name for s in service.list_studies(engine)]
    # Named in the form: that name.
    service.create_study_from_uploads(engine, boss, "named", "satisfaction", list(data.items()), condition="som-dst")
    assert conditions(engine, boss, "named") == {"som-dst"}
    # A zip: each file's folder names its system (the zip's name for files at its top).
    zipped = zip_bytes({f"trade/{n}": d for n, d in data.items()})
    service.create_study_from_uploads(engine, boss, "zipped", "satisfaction", [("systems.zip", zipped)])
    assert conditions(engine, boss, "zipped") == {"trade"}
