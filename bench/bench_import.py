"""Benchmark: annotators' vote waits during a large vote import, before and after issue 23.

    python -m bench.bench_import [--raters 520] [--pg URL] [--skip-before] [--json]

A study of the 36 DSTC2 fixture turns (173 questions); a votes file where every rater answers every
question (520 raters: 89,960 rows).  The import runs in a process of its own (as ``python -m annotate
votes import`` does) while this process casts votes on the same items, one write transaction each
(a new place on an item and a vote), every 20 ms, and records how long each one took.

- ``before``: the import as it was, every row cast with ``cast_vote`` inside one write transaction;
- ``after``: ``import_votes_file`` (rows checked and staged in a temporary table, then one short
  swapping transaction).

Prints, per backend and mode: import seconds, votes cast during the import, failed votes (e.g.
"database is locked"), and the max and p99 wait in ms.  ``--json`` prints them as one object.

Measured (2 shared cores, 89,960 rows, a vote every 20 ms; the "before" importer here pre-checks the
rows, so it is faster than the old CLI, which took ~100 s):

    sqlite     before  import 22.7 s   max wait 21,785 ms  p99 21,785 ms
    sqlite     after   import  2.8 s   max wait    434 ms  p99      8 ms   (0 failed)
    postgresql before  import 227 s    max wait 30,015 ms  p99 30,015 ms   (7 failed: statement timeout)
    postgresql after   import 11.1 s   max wait  1,140 ms  p99     49 ms   (0 failed)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sqlalchemy import select

from annotate.judging.votes import cast_vote
from annotate.people.auth import add_annotator
from annotate.store.db import make_engine, read_session, upgrade, write_session
from annotate.store.models import Item
from annotate.studies import create_study
from tests.store.test_import_batches import slu_votes_csv

ROOT = Path(__file__).resolve().parent.parent  # run as python -m bench.bench_import from the checkout

FIXTURES = ROOT.parent / "shared" / "fixtures"

IMPORTER = """
import sys
from annotate.store.db import make_engine, write_session
from annotate.judging.votes import import_votes_file
engine = make_engine(sys.argv[1])
text = open(sys.argv[4]).read()
study_id = int(sys.argv[3])
if sys.argv[2] == "after":
    import_votes_file(engine, study_id, "votes.csv", text)
else:  # the import before issue 23: cast_vote per row, one write transaction for the whole file
    from sqlalchemy import select
    from annotate.store.models import Annotator, Item
    from annotate.judging.votes import cast_vote, check_vote_rows
    with write_session(engine) as session:
        people = {}
        for vote in list(check_vote_rows(session, study_id, "votes.csv", text)):
            if vote.annotator not in people:
                people[vote.annotator] = Annotator(name=vote.annotator, role="annotator")
                session.add(people[vote.annotator])
                session.flush()
            cast_vote(session, people[vote.annotator], vote.item_id, vote.question, vote.value,
                      comment=vote.comment, seconds=vote.seconds, source="import")
"""


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run(url: str, mode: str, raters: int) -> dict:
    engine = make_engine(url)
    upgrade(engine)
    with write_session(engine) as session:
        study = create_study(session, f"bench-{mode}", "slu", [FIXTURES / "dstc2"], overlap=100_000)
        live = [add_annotator(session, f"live-{mode}-{i:02d}") for i in range(40)]
    votes, rows = slu_votes_csv(engine, study.id, raters, prefix=f"rater-{mode}")
    with read_session(engine) as session:
        item_ids = session.scalars(select(Item.id).where(Item.study_id == study.id).order_by(Item.id)).all()
    with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as handle:
        handle.write(votes)
    started = time.monotonic()
    process = subprocess.Popen([sys.executable, "-c", IMPORTER, url, mode, str(study.id), handle.name], cwd=ROOT)
    waits, failures, n = [], [], 0
    while process.poll() is None:
        person, item_id = live[n % len(live)], item_ids[(n // len(live)) % len(item_ids)]
        begun = time.monotonic()
        try:
            with write_session(engine) as session:
                cast_vote(session, person, item_id, "transcription", f"live {n}")
        except Exception as err:  # noqa: BLE001 - counted and shown
            failures.append(type(err).__name__ + ": " + str(err).splitlines()[0][:80])
        waits.append(time.monotonic() - begun)
        n += 1
        time.sleep(0.02)
    seconds = time.monotonic() - started
    Path(handle.name).unlink()
    engine.dispose()
    return {
        "rows": rows,
        "import_ok": process.returncode == 0,
        "import_s": round(seconds, 1),
        "votes_during": n,
        "failed": len(failures),
        "first_failure": failures[0] if failures else "",
        "max_wait_ms": round(1000 * max(waits), 1) if waits else None,
        "p99_wait_ms": round(1000 * percentile(waits, 0.99), 1) if waits else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--raters", type=int, default=520)
    parser.add_argument("--pg", help="a PostgreSQL database URL to run on too (its tables are written)")
    parser.add_argument("--skip-before", action="store_true", help="only the new import")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results = {}
    with tempfile.TemporaryDirectory() as folder:
        backends = {"sqlite": f"sqlite:///{folder}/bench.sqlite"}
        if args.pg:
            backends["postgresql"] = args.pg
        for backend, url in backends.items():
            for mode in ("after",) if args.skip_before else ("before", "after"):
                results[f"{backend} {mode}"] = result = run(url, mode, args.raters)
                if not args.json:
                    print(f"{backend:10} {mode:6} {result}", flush=True)
    if args.json:
        print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
