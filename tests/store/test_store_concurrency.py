"""Many annotators at once, on SQLite and PostgreSQL: zero lost votes, never more than k
annotators per item, and the final state is each annotator's last write.  A process
killed in the middle of an import or a vote leaves the database consistent."""

from __future__ import annotations

import json
import multiprocessing
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

from sqlalchemy import func, select, text

from annotate.judging.votes import vote_rows
from annotate.people.auth import add_annotator
from annotate.store.db import is_sqlite, read_session, write_session
from annotate.store.models import Assignment, Item, Study, VoteEvent
from annotate.studies import create_study
from bench.corpus import build, dialogue_file
from tests.conftest import REPO
from tests.store_workers import annotate_session, process_worker

OVERLAP = 3


def big_study(engine, tmp_path, n_dialogues: int, n_annotators: int):
    path = tmp_path / "corpus.json"
    path.write_text(json.dumps(build(n_dialogues)))
    with write_session(engine) as session:
        study = create_study(session, "load", "satisfaction", [path, dialogue_file(path)], overlap=OVERLAP)
        people = [add_annotator(session, f"load-{i:02d}") for i in range(n_annotators)]
    return study, people


def check_final_state(engine, study_id: int, sent: list[tuple]) -> None:
    last = {}
    for name, item_id, value in sent:
        last[(name, item_id)] = value
    with read_session(engine) as session:
        n_events = session.scalar(select(func.count()).select_from(VoteEvent))
        keys = dict(session.execute(select(Item.key, Item.id).where(Item.study_id == study_id)).all())
        current = {(r["annotator"], keys[r["item"]]): r["value"] for r in vote_rows(session, study_id)}
        per_item = session.execute(
            select(VoteEvent.item_id, func.count(func.distinct(VoteEvent.annotator_id))).group_by(VoteEvent.item_id)
        ).all()
        done = session.execute(
            select(Assignment.item_id, func.count()).where(Assignment.status == "done").group_by(Assignment.item_id)
        ).all()
    assert n_events == len(sent), "a vote was lost (or invented)"
    assert current == last, "the current vote is not each annotator's last write"
    assert max(n for _, n in per_item) <= OVERLAP
    assert max(n for _, n in done) <= OVERLAP


def test_fifty_threads(engine, tmp_path):
    study, people = big_study(engine, tmp_path, n_dialogues=60, n_annotators=50)
    with ThreadPoolExecutor(max_workers=50) as pool:
        futures = [pool.submit(annotate_session, engine, study.id, person, 6, seed) for seed, person in enumerate(people)]
        sent = [vote for future in futures for vote in future.result()]
    assert len(sent) >= 180  # 60 items x k = 3 judgements, plus changes
    check_final_state(engine, study.id, sent)


def test_several_processes(engine, db_url, tmp_path):
    study, people = big_study(engine, tmp_path, n_dialogues=40, n_annotators=12)
    groups = [[(p.id, p.name) for p in people[i::4]] for i in range(4)]
    context = multiprocessing.get_context("spawn")
    with context.Pool(4) as pool:
        results = pool.starmap(process_worker, [(db_url, study.id, group, 12, 100 * i) for i, group in enumerate(groups)])
    sent = [vote for result in results for vote in result]
    assert len(sent) >= 120
    check_final_state(engine, study.id, sent)


KILLED_IMPORT = """
import sys, time
from annotate.store.db import make_engine, write_session
from annotate.studies import create_study
from annotate.people.auth import add_annotator
from annotate.judging.votes import cast_vote
from annotate.store.models import Item
from sqlalchemy import select
engine = make_engine(sys.argv[1])
with write_session(engine) as session:
    if sys.argv[2] == "import":
        create_study(session, "half", "slu", [sys.argv[3]])
    else:
        person = add_annotator(session, "doomed")
        item_id = session.scalar(select(Item.id).where(Item.key == "PMUL4648.json"))
        cast_vote(session, person, item_id, "satisfied", "1")
    print("ready", flush=True)
    time.sleep(60)
"""


def run_and_kill(db_url: str, mode: str, fixtures) -> None:
    process = subprocess.Popen(
        [sys.executable, "-c", KILLED_IMPORT, db_url, mode, str(fixtures / "dstc2")], cwd=REPO, stdout=subprocess.PIPE, text=True
    )
    assert process.stdout.readline().strip() == "ready"
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)


def test_killed_import_and_vote_leave_the_database_consistent(engine, db_url, fixtures):
    with write_session(engine) as session:
        create_study(session, "kept", "satisfaction", [fixtures / "fga_human_eval"])
    run_and_kill(db_url, "import", fixtures)
    run_and_kill(db_url, "vote", fixtures)
    with read_session(engine) as session:
        assert session.scalars(select(Study.name)).all() == ["kept"]
        assert session.scalar(select(func.count()).select_from(Item)) == 10
        assert session.scalar(select(func.count()).select_from(VoteEvent)) == 0
        if is_sqlite(engine):
            assert session.execute(text("PRAGMA integrity_check")).scalar() == "ok"
    # The killed writer's lock is gone: a new write goes through at once.
    with write_session(engine) as session:
        create_study(session, "after", "slu", [fixtures / "dstc2"])
