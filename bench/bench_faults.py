"""Fault run (issue 23): annotators vote through the service (``service.next_item`` + ``service.submit``,
the app's write path) while the database fails under them; prints, per fault, the votes acknowledged,
stored and lost (acknowledged but not stored: must be 0), the failed attempts, and the recovery time
(from the end of the fault to the first acknowledged vote after it).

Faults, each on a database of this run's own (never the machine's shared PostgreSQL):
- ``pg-restart``: PostgreSQL fast restart (``pg_ctl restart -m fast``);
- ``pg-kill``: PostgreSQL killed (``pg_ctl stop -m immediate``: SIGQUIT to every backend, no
  checkpoint), started again 2 s later;
- ``partition``: PostgreSQL in a network namespace, every packet between app and server dropped for
  20 s (``tests.pg_server.NetnsHost``), with the default timeouts (``annotate.store.db.ServerTimeouts``);
- ``disk-full``: SQLite on an 8 MB tmpfs filled up mid-run, space given back 5 s later;
  ``PRAGMA integrity_check`` after.

    python -m bench.bench_faults [--annotators 20] [--faults pg-restart,pg-kill,partition,disk-full] [--json]

Needs root (runuser, ip netns, mount) and Debian's PostgreSQL server binaries.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from sqlalchemy import func, select, text

from annotate import service
from annotate.auth import add_annotator
from annotate.store.db import make_engine, read_session, upgrade, write_session
from annotate.store.models import VoteEvent
from annotate.studies import create_study
from tests.pg_server import NetnsHost, OwnPostgres

FIXTURES = Path(os.environ.get("DST_JUDGE_FIXTURES", Path(__file__).resolve().parents[2] / "shared" / "fixtures"))


def prepare(engine, annotators: int) -> tuple[int, list]:
    upgrade(engine)
    with write_session(engine) as session:
        study = create_study(session, "faults", "satisfaction", [FIXTURES / "fga_human_eval"], overlap=annotators)
        people = [add_annotator(session, f"f{i}") for i in range(annotators)]
    return study.id, people


class Run:
    """Annotator threads voting until ``stop``; every acknowledged vote and every failure time-stamped."""

    def __init__(self, engine, study_id: int, people: list):
        self.engine, self.study_id, self.people = engine, study_id, people
        self.acknowledged = {p.id: 0 for p in people}
        self.ack_times: list[float] = []
        self.failures = 0
        self.stop = threading.Event()
        self.lock = threading.Lock()

    def annotator(self, person) -> None:
        judged: list[int] = []
        rng = random.Random(person.id)
        while not self.stop.is_set():
            try:
                item = service.next_item(self.engine, person, self.study_id)
                item_id = item.id if item is not None else rng.choice(judged)  # then: changes of answer
                service.submit(self.engine, person, item_id, {"satisfied": rng.choice("01")})
            except Exception:  # the fault: not acknowledged; try again shortly
                with self.lock:
                    self.failures += 1
                time.sleep(0.2)
                continue
            with self.lock:
                self.acknowledged[person.id] += 1
                self.ack_times.append(time.monotonic())
            if item is not None:
                judged.append(item.id)
            time.sleep(0.05)  # a quick annotator

    def run(self, fault, seconds: float) -> dict:
        threads = [threading.Thread(target=self.annotator, args=(p,), daemon=True) for p in self.people]
        for thread in threads:
            thread.start()
        time.sleep(3)
        healed = fault()
        time.sleep(max(0.0, seconds - 3))
        self.stop.set()
        for thread in threads:
            thread.join(60)
        after = [t for t in self.ack_times if t >= healed]
        with read_session(self.engine) as session:
            stored = dict(session.execute(select(VoteEvent.annotator_id, func.count()).group_by(VoteEvent.annotator_id)).all())
        acknowledged = sum(self.acknowledged.values())
        lost = sum(max(0, n - stored.get(pid, 0)) for pid, n in self.acknowledged.items())
        return {
            "acknowledged": acknowledged,
            "stored": sum(stored.values()),
            "lost": lost,
            "failed_attempts": self.failures,
            "recovery_s": round(min(after) - healed, 2) if after else None,
        }


def pg_fault(kind: str, annotators: int) -> dict:
    host = NetnsHost() if kind == "partition" else None
    pg = OwnPostgres(host=host.address, port=5432, inside=host.run_inside()) if host else OwnPostgres()
    engine = make_engine(pg.url, pool_size=annotators)
    try:
        run = Run(engine, *prepare(engine, annotators))

        def fault() -> float:
            if kind == "pg-restart":
                pg.stop("fast")
                pg.start()
            elif kind == "pg-kill":
                pg.stop("immediate")
                time.sleep(2)
                pg.start()
            else:
                host.partition()
                time.sleep(20)
                host.heal()
            return time.monotonic()

        return run.run(fault, 25 if kind != "partition" else 45)
    finally:
        engine.dispose()
        pg.close()
        if host:
            host.close()


def disk_full(annotators: int) -> dict:
    folder = Path(tempfile.mkdtemp(prefix="dstj-full-"))
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(folder)], check=True)
    try:
        engine = make_engine(f"sqlite:///{folder / 'judge.sqlite'}", pool_size=annotators)
        run = Run(engine, *prepare(engine, annotators))
        filler = folder / "filler"

        def fault() -> float:
            with open(filler, "wb") as out:  # fill the disk
                try:
                    while True:
                        out.write(b"\0" * 65536)
                        out.flush()
                except OSError:
                    pass
            time.sleep(5)
            filler.unlink()
            return time.monotonic()

        result = run.run(fault, 20)
        with engine.connect() as connection:
            result["integrity_check"] = connection.execute(text("PRAGMA integrity_check")).scalar()
        engine.dispose()
        return result
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--annotators", type=int, default=20)
    parser.add_argument("--faults", default="pg-restart,pg-kill,partition,disk-full")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    results = {}
    for fault in args.faults.split(","):
        results[fault] = disk_full(args.annotators) if fault == "disk-full" else pg_fault(fault, args.annotators)
        if not args.json:
            r = results[fault]
            print(
                f"{fault:>10}: acknowledged {r['acknowledged']}, stored {r['stored']}, lost {r['lost']}, "
                f"failed attempts {r['failed_attempts']}, recovery {r['recovery_s']} s"
                + (f", integrity_check {r['integrity_check']}" if "integrity_check" in r else "")
            )
    if args.json:
        print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
