"""Deleting a study (issue 14, item 4): refused while votes exist unless the admin exported the
votes first and confirms with the study's name; the CLI manages members, archive and guideline."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from annotate import service
from annotate.people.auth import PermissionDenied, add_annotator
from annotate.people.sessions import log_in
from annotate.store.db import read_session, write_session
from annotate.store.models import Item, Study, VoteEvent
from annotate.studies import StudyError
from tests.conftest import REPO
from tests.store_helpers import make_study


def boss(engine):
    with write_session(engine) as session:
        add_annotator(session, "boss", "boss-password", "admin")
    return log_in(engine, "boss", "boss-password")[0]


def vote(engine, person, study_id):
    item = service.next_item(engine, person, study_id)
    service.submit(engine, person, item.id, {"satisfied": "1"})


def test_a_study_without_votes_is_deleted_after_confirmation(engine, fixtures):
    study, people = make_study(engine, fixtures, annotators=1)
    admin = boss(engine)
    service.next_item(engine, people[0], study.id)  # a place held, no vote
    with pytest.raises(StudyError, match="type the study's name"):
        service.delete_study(engine, admin, study.id, "wrong name")
    with pytest.raises(PermissionDenied):
        service.delete_study(engine, people[0], study.id, study.name)
    service.delete_study(engine, admin, study.id, study.name)
    with read_session(engine) as session:
        assert session.get(Study, study.id) is None
        assert session.query(Item).filter(Item.study_id == study.id).count() == 0


def test_votes_block_a_delete_until_they_are_exported_and_new_votes_block_it_again(engine, fixtures):
    study, people = make_study(engine, fixtures, annotators=2)
    admin = boss(engine)
    vote(engine, people[0], study.id)
    with pytest.raises(StudyError, match="export the votes first"):
        service.delete_study(engine, admin, study.id, study.name)
    text, through = service.votes_download(engine, admin, study.id)
    assert "satisfied" in text
    vote(engine, people[1], study.id)  # arrives after the download was made
    service.record_export(engine, admin, study.id, "votes csv", through)
    with pytest.raises(StudyError, match="1 vote event since"):
        service.delete_study(engine, admin, study.id, study.name)
    text, through = service.votes_download(engine, admin, study.id, history=True)
    service.record_export(engine, admin, study.id, "vote events csv", through)
    assert [c.what for c in service.study_changes(engine, admin, study.id)] == ["export", "export"]
    service.delete_study(engine, admin, study.id, study.name)
    with read_session(engine) as session:
        assert session.query(VoteEvent).count() == 0 and session.get(Study, study.id) is None


def cli(db_url, *args, check=True):
    done = subprocess.run([sys.executable, "-m", "annotate", "--db", db_url, *args], capture_output=True, text=True, cwd=REPO)
    if check:
        assert done.returncode == 0, done.stderr
    return done


def test_the_cli_manages_members_archive_guideline_and_delete(engine, db_url, fixtures, tmp_path):
    study, people = make_study(engine, fixtures, annotators=3)
    names = [p.name for p in people]
    assert cli(db_url, "study", "members", study.name).stdout.strip() == "(everybody)"
    cli(db_url, "study", "members", study.name, "--set", names[0], names[1])
    cli(db_url, "study", "members", study.name, "--remove", names[1])
    cli(db_url, "study", "members", study.name, "--add", names[2])
    assert cli(db_url, "study", "members", study.name).stdout.split() == [names[0], names[2]]
    refused = cli(db_url, "study", "members", study.name, "--add", "nobody", check=False)
    assert refused.returncode == 2 and "nobody" in refused.stderr
    guideline = tmp_path / "guide.txt"
    guideline.write_text("Judge the whole dialogue.\n", encoding="utf-8")
    cli(db_url, "study", "guideline", study.name, str(guideline))
    cli(db_url, "study", "overlap", study.name, "4")
    cli(db_url, "study", "archive", study.name)
    with read_session(engine) as session:
        row = session.get(Study, study.id)
        assert (row.guideline, row.overlap, row.archived) == ("Judge the whole dialogue.\n", 4, True)
    cli(db_url, "study", "unarchive", study.name)
    vote(engine, people[0], study.id)
    refused = cli(db_url, "study", "delete", study.name, "--confirm", study.name, check=False)
    assert refused.returncode == 2 and "export the votes first" in refused.stderr
    exported = cli(db_url, "votes", "export", study.name, "--out", str(tmp_path / "votes.csv"))
    assert exported.returncode == 0
    changes = json.loads(cli(db_url, "study", "changes", study.name, "--json").stdout)
    assert [c["what"] for c in changes] == [
        "members",
        "members",
        "members",
        "guideline",
        "overlap",
        "archived",
        "archived",
        "export",
    ]
    assert all(c["by"] == "cli" for c in changes)
    cli(db_url, "study", "delete", study.name, "--confirm", study.name)
    with read_session(engine) as session:
        assert session.get(Study, study.id) is None
