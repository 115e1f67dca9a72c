"""Vote imports that do not stall annotators (issue 23), on SQLite and PostgreSQL.

A 90,000-row ``votes import`` used to hold the write lock (SQLite) or its items' row locks
(PostgreSQL) for its whole run (~100 s): annotators voting meanwhile waited that long or got
"database is locked".  Now the rows are checked first, staged in a temporary table of the import's
own connection, and swapped in by one short transaction; still all or nothing, also when the
importing process is killed.
"""

from __future__ import annotations

import csv
import io
import signal
import subprocess
import sys
import time
from datetime import timedelta

import pytest
from sqlalchemy import func, select, text, update

from annotate.judging.votes import cast_vote, import_votes_file, vote_rows
from annotate.people.auth import add_annotator
from annotate.store.db import is_sqlite, read_session, write_session
from annotate.store.models import Annotator, Assignment, Item, Study, VoteEvent, utcnow
from annotate.studies import create_study, question_spec
from annotate.studies.assignment import skip_item
from formats import ReaderError
from tests.conftest import REPO
from tests.store_helpers import next_item

RATERS = 520  # x 173 questions of the 36 DSTC2 fixture turns = 89,960 rows


def answer(spec: dict, i: int) -> str:
    if spec["type"] == "binary":
        return "01"[i % 2]
    if spec["type"] == "choice":
        return spec["values"][i % len(spec["values"])]
    return f"heard {i}"


def slu_votes_csv(engine, study_id: int, raters: int, prefix: str = "rater") -> tuple[str, int]:
    """Every rater answers every question of every item of the study (real fixture items)."""
    with read_session(engine) as session:
        study = session.get(Study, study_id)
        items = session.execute(select(Item.key, Item.questions).where(Item.study_id == study_id).order_by(Item.id)).all()
        specs = {q: question_spec(study, q) for _, questions in items for q in questions}
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["item", "annotator", "question", "value", "seconds"])
    rows = 0
    for r in range(raters):
        for key, questions in items:
            for question in questions:
                writer.writerow([key, f"{prefix}-{r:04d}", question, answer(specs[question], r), "2.5"])
                rows += 1
    return out.getvalue(), rows


def cli_import(db_url: str, study: str, path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "annotate", "--db", db_url, "votes", "import", study, str(path)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def counts(engine) -> dict:
    with read_session(engine) as session:
        return {
            "events": session.scalar(select(func.count()).select_from(VoteEvent)),
            "annotators": session.scalar(select(func.count()).select_from(Annotator)),
            "places": sorted(session.execute(select(Assignment.item_id, Assignment.annotator_id, Assignment.status)).all()),
            "holders": sorted(session.execute(select(Item.id, Item.holders)).all()),
        }


def test_a_large_import_does_not_stall_annotators(engine, db_url, fixtures, tmp_path):
    """90,000 rows imported by the CLI while annotators keep voting on the same items: no vote fails,
    none waits long (5 s: a functional bound, far above the measured figures in bench/bench_import.py)."""
    with write_session(engine) as session:
        study = create_study(session, "big", "slu", [fixtures / "dstc2"], overlap=10_000)
        live = [add_annotator(session, f"live-{i:02d}") for i in range(40)]
    votes, rows = slu_votes_csv(engine, study.id, RATERS)
    assert rows == 89_960
    path = tmp_path / "votes.csv"
    path.write_text(votes)
    with read_session(engine) as session:
        item_ids = session.scalars(select(Item.id).where(Item.study_id == study.id).order_by(Item.id)).all()

    waits, failures, during = [], [], []
    process = cli_import(db_url, "big", path)
    n = 0
    stop_after = None
    while stop_after is None or n < stop_after:
        running = process.poll() is None
        if not running and stop_after is None:
            stop_after = n + 5  # a few more votes after the import ended
        person, item_id = live[n % len(live)], item_ids[(n // len(live)) % len(item_ids)]
        started = time.monotonic()
        try:
            with write_session(engine) as session:  # a new place on an item the import fills, and a vote
                cast_vote(session, person, item_id, "transcription", f"live {n}")
        except Exception as err:  # noqa: BLE001 - every failure is reported below
            failures.append(repr(err))
        waits.append(time.monotonic() - started)
        if running:
            during.append(n)
        n += 1
        time.sleep(0.02)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert f"imported {rows} votes" in out
    assert len(during) >= 5, "the votes did not overlap the import"
    assert failures == []
    assert max(waits) < 5.0, f"a vote waited {max(waits):.1f} s"
    with read_session(engine) as session:
        assert session.scalar(select(func.count()).select_from(VoteEvent).where(VoteEvent.source == "import")) == rows
        assert session.scalar(select(func.count()).select_from(VoteEvent).where(VoteEvent.source == "human")) == n
        # every rater's place is done, on every item: 520 places + the live ones
        assert session.scalar(select(func.count()).select_from(Assignment).where(Assignment.status == "done")) == RATERS * 36
        assert session.scalar(select(func.sum(Item.holders))) == session.scalar(
            select(func.count()).select_from(Assignment).where(Assignment.status.in_(("done", "active")))
        )


def test_a_bad_row_at_the_end_of_a_large_file_leaves_nothing(engine, fixtures):
    with write_session(engine) as session:
        study = create_study(session, "big", "slu", [fixtures / "dstc2"], overlap=3)
    votes, rows = slu_votes_csv(engine, study.id, 120)
    key = votes.splitlines()[1].split(",")[0]
    votes += f"{key},rater-last,transcription_status,maybe\n"
    before = counts(engine)
    with pytest.raises(ReaderError, match=rf"votes.csv:line {rows + 2}: .*transcription_status"):
        import_votes_file(engine, study.id, "votes.csv", votes)
    assert counts(engine) == before


KILLED = """
import os, sys, time
from annotate.store.db import make_engine
from annotate.judging.votes import import_votes_file
engine = make_engine(sys.argv[1])
def progress(step):
    if step == sys.argv[2]:
        print("ready", flush=True)
        time.sleep(60)
text = open(sys.argv[4]).read()
import_votes_file(engine, int(sys.argv[3]), "votes.csv", text, progress=progress)
"""


@pytest.mark.parametrize("step", ["staged", "swapping"])
def test_a_killed_import_leaves_nothing_half_imported(engine, db_url, fixtures, tmp_path, step):
    """kill -9 after staging, and inside the swapping transaction before its COMMIT (mirrors the kill test
    of tests/store/test_store_concurrency.py)."""
    with write_session(engine) as session:
        study = create_study(session, "big", "slu", [fixtures / "dstc2"], overlap=3)
        add_annotator(session, "rater-0003")  # an existing annotator among the file's
    votes, rows = slu_votes_csv(engine, study.id, 60)
    path = tmp_path / "votes.csv"
    path.write_text(votes)
    before = counts(engine)
    process = subprocess.Popen(
        [sys.executable, "-c", KILLED, db_url, step, str(study.id), str(path)], cwd=REPO, stdout=subprocess.PIPE, text=True
    )
    assert process.stdout.readline().strip() == "ready"
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    time.sleep(0.5)  # PostgreSQL ends the dead client's backend (its transaction and temporary tables)
    assert counts(engine) == before
    if is_sqlite(engine):
        with read_session(engine) as session:
            assert session.execute(text("PRAGMA integrity_check")).scalar() == "ok"
    # The killed import's locks are gone: the same import goes through now, whole.
    assert import_votes_file(engine, study.id, "votes.csv", votes) == rows
    assert counts(engine)["events"] == rows


def test_the_swap_stores_what_casting_each_row_would(engine, fixtures):
    """The set-based swap gives the same places, holders and current votes as ``cast_vote`` with source
    ``import`` row by row: a held place is kept, an expired one (and others' expired places on that
    item) go back first, a skipped one is taken again, a new annotator is made, a changed vote's last
    event wins."""
    states = {}
    for name in ("rowwise", "swapped"):
        with write_session(engine) as session:
            study = create_study(session, name, "satisfaction", [fixtures / "fga_human_eval"], overlap=2)
            people = {
                p: session.scalar(select(Annotator).where(Annotator.name == p)) or add_annotator(session, p)
                for p in ("holder", "late", "skipper", "other")
            }
        with write_session(engine) as session:
            held = next_item(session, study.id, people["holder"])
            late = next_item(session, study.id, people["late"])
            skipped = next_item(session, study.id, people["skipper"])
            skip_item(session, people["skipper"], skipped.id)
            other = next_item(session, study.id, people["other"])
        with write_session(engine) as session:  # late's place expired
            session.execute(
                update(Assignment)
                .where(Assignment.item_id == late.id, Assignment.annotator_id == people["late"].id)
                .values(assigned_at=utcnow() - timedelta(hours=2))
            )
        keys = {i.id: i.key for i in (held, late, skipped, other)}
        new = f"new-{name}"  # made by the import (a name of its own in each study)
        rows = [
            (held, "holder", "1"),
            (late, "late", "0"),
            (late, new, "1"),
            (skipped, "skipper", "1"),
            (other, new, "0"),
            (other, new, "1"),
            (held, "other", "0"),
        ]
        if name == "rowwise":
            with write_session(engine) as session:
                for item, who, value in rows:
                    person = session.scalar(select(Annotator).where(Annotator.name == who)) or add_annotator(session, who)
                    cast_vote(session, person, item.id, "satisfied", value, source="import")
        else:
            body = "".join(f"{item.key},{who},satisfied,{value}\n" for item, who, value in rows)
            assert import_votes_file(engine, study.id, "v.csv", "item,annotator,question,value\n" + body) == len(rows)
        with read_session(engine) as session:
            assert session.scalar(select(Annotator.password_hash).where(Annotator.name == new)) is None
            places = session.execute(
                select(
                    Item.key, func.replace(Annotator.name, new, "new"), Assignment.status, Assignment.completed_at.is_not(None)
                )
                .join(Item, Item.id == Assignment.item_id)
                .join(Annotator, Annotator.id == Assignment.annotator_id)
                .where(Item.study_id == study.id)
            ).all()
            holders = session.execute(select(Item.key, Item.holders).where(Item.study_id == study.id)).all()
            current = [(r["item"], r["annotator"].replace(new, "new"), r["value"]) for r in vote_rows(session, study.id)]
            history = [
                (r["item"], r["annotator"].replace(new, "new"), r["value"]) for r in vote_rows(session, study.id, history=True)
            ]
        states[name] = (sorted(places), sorted(holders), sorted(current), history, sorted(keys.values()))
    assert states["swapped"] == states["rowwise"]
    places, holders, current, history, _ = states["swapped"]
    status = {(key, who): (state, completed) for key, who, state, completed in places}
    voted = {(item.key, "new" if who == new else who) for item, who, _ in rows}
    assert all(status[place] == ("done", True) for place in voted)
    assert sum(h for _, h in holders) == sum(1 for state, _ in status.values() if state in ("done", "active"))
    assert len(history) == 7 and len(current) == 6  # the new annotator changed one vote
