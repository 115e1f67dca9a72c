"""Our own votes export read back by the votes import gives every comment back exactly, risky or not
(issue 23, item 5), on SQLite and PostgreSQL."""

from __future__ import annotations

import csv
import io

from annotate.judging.votes import cast_vote, import_votes, rows_to_csv, vote_rows
from annotate.store.db import read_session, write_session
from annotate.studies import create_study
from tests.store_helpers import make_study, next_item

COMMENTS = [" =2+5", "\t@x", "'=x", "' =HYPERLINK(1)", "=cmd", "-0.5", "'plain", "plain"]


def test_risky_comments_survive_export_and_import(engine, fixtures):
    study, (person,) = make_study(engine, fixtures, overlap=1, annotators=1, name="source")
    for comment in COMMENTS:
        with write_session(engine) as session:
            item = next_item(session, study.id, person)
            cast_vote(session, person, item.id, "satisfied", "1", comment=comment)
    with read_session(engine) as session:
        exported = vote_rows(session, study.id)
    text = rows_to_csv(exported)
    written = {row["comment"] for row in csv.DictReader(io.StringIO(text))}
    assert written == {"' =2+5", "'\t@x", "''=x", "'' =HYPERLINK(1)", "'=cmd", "-0.5", "'plain", "plain"}
    with write_session(engine) as session:
        target = create_study(session, "target", "satisfaction", [fixtures / "fga_human_eval"], overlap=1)
        assert import_votes(session, target, "votes.csv", text) == len(COMMENTS)
    with read_session(engine) as session:
        imported = vote_rows(session, target.id)
    assert sorted((r["item"], r["comment"]) for r in imported) == sorted((r["item"], r["comment"]) for r in exported)
    assert sorted(r["comment"] for r in imported) == sorted(COMMENTS)
