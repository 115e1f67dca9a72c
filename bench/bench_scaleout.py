"""Benchmark: many annotators on two Streamlit servers behind nginx, one PostgreSQL database.

    python -m bench.bench_scaleout [--store 100] [--browsers 4] [--seconds 60] [--kill-after 30] [--think LO HI]

Store annotators vote through the service layer the pages call (judgement saved + next item
claimed, as a key press does); browser annotators vote with the keyboard in Chromium through
nginx, half pinned to each server.  Everyone reads each item ``--think`` seconds (uniform; by
default store annotators 0.05-0.25 s and browsers not at all: a stress run); issue 16's load run
is ``--store 46 --browsers 4 --think 5 20 --seconds 180 --kill-after 0``: 50 annotators at
a person's pace, key press -> next item p50 / p95.  With ``--kill-after`` one server is killed with SIGKILL mid-run.  Prints the
machine, sustained annotators, votes per second, p50 / p99 latency per kind, and whether the
database equals the votes sent.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("DST_JUDGE_BCRYPT_ROUNDS", "4")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--store", type=int, default=100)
    parser.add_argument("--browsers", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--kill-after", type=float, default=30, help="seconds; 0: no kill")
    parser.add_argument("--dialogues", type=int, default=3000)
    parser.add_argument(
        "--think",
        type=float,
        nargs=2,
        metavar=("LO", "HI"),
        default=None,
        help="seconds each annotator reads an item (store and browser annotators alike)",
    )
    args = parser.parse_args()

    from sqlalchemy import func, select

    from annotate.people.auth import add_annotator
    from annotate.store.db import make_engine, read_session, upgrade, write_session
    from annotate.store.models import Annotator, VoteEvent
    from annotate.studies import create_study
    from bench.corpus import dialogue_file
    from bench.corpus import write as write_corpus
    from tests.databases import create_pg_database, drop_pg_database
    from tests.scaleout_harness import Cluster, Ledger, browser_annotator, store_annotator

    work = Path(tempfile.mkdtemp(prefix="dst-bench-scaleout-"))
    url = create_pg_database()
    engine = make_engine(url, pool_size=20)  # PostgreSQL allows 100 connections; threads queue on the pool
    upgrade(engine)
    corpus = work / "corpus.json"
    write_corpus(corpus, args.dialogues)
    browsers = [(f"web-{i}", "ab"[i % 2]) for i in range(args.browsers)]
    with write_session(engine) as session:
        study_id = create_study(session, "load", "satisfaction", [corpus, dialogue_file(corpus)], overlap=3).id
        for name, _ in browsers:
            add_annotator(session, name, f"{name}-password")
        people = [add_annotator(session, f"store-{i:03d}") for i in range(args.store)]
        session.flush()
        for person in people:
            session.expunge(person)
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores ({cpu}), Python {platform.python_version()}")
    print(
        f"study: {args.dialogues} dialogues, overlap 3; {args.store} store annotators + {args.browsers} browsers; "
        f"{args.seconds:.0f} s" + (f", SIGKILL of server a after {args.kill_after:.0f} s" if args.kill_after else "")
    )
    cluster = Cluster(url, work / "cluster")
    ledger, stop = Ledger(), threading.Event()
    started = time.time()
    store_think, web_think = (args.think, args.think) if args.think else ((0.05, 0.25), (0.0, 0.0))
    threads = [
        threading.Thread(
            target=browser_annotator, args=(cluster.url, route, name, f"{name}-password", ledger, stop, None, tuple(web_think))
        )
        for name, route in browsers
    ]
    threads += [
        threading.Thread(target=store_annotator, args=(engine, p, study_id, ledger, stop, i, tuple(store_think)))
        for i, p in enumerate(people)
    ]
    try:
        for thread in threads[: len(browsers)]:  # browsers log in first, then the load starts
            thread.start()
        deadline = time.time() + 120
        while time.time() < deadline and len(ledger.ready) < len(browsers):
            time.sleep(0.5)
        for thread in threads[len(browsers) :]:
            thread.start()
        started = time.time()
        if args.kill_after:
            time.sleep(args.kill_after)
            cluster.kill("a")
        time.sleep(max(0.0, args.seconds - (time.time() - started)))
    finally:
        stop.set()
        elapsed = time.time() - started  # votes after this moment are the few in flight
        for thread in threads:
            thread.join(timeout=120)
        cluster.stop()
    with read_session(engine) as session:
        stored = dict(
            session.execute(select(Annotator.name, func.count(VoteEvent.id)).join(VoteEvent).group_by(Annotator.name)).all()
        )
    store_names = {p.name for p in people}
    store_latency = [t for n, ts in ledger.latency_by_name.items() if n in store_names for t in ts]
    web_latency = [t for n, ts in ledger.latency_by_name.items() if n not in store_names for t in ts]
    total = sum(ledger.acknowledged.values())
    lost = sum(max(0, ledger.acknowledged.get(n, 0) - stored.get(n, 0)) for n in ledger.acknowledged)
    extra = sum(stored.values()) - total
    print(
        f"votes acknowledged: {total} in {elapsed:.1f} s = {total / elapsed:.1f} votes/s; "
        f"sustained annotators: {sum(1 for n in ledger.acknowledged if ledger.acknowledged[n])}"
    )
    print(
        f"store calls (judgement saved + next item)  p50 {1e3 * statistics.median(store_latency):.1f} ms  "
        f"p95 {1e3 * percentile(store_latency, 0.95):.1f} ms  p99 {1e3 * percentile(store_latency, 0.99):.1f} ms"
    )
    web = [n for n in ledger.acknowledged if n not in store_names]
    print(
        f"browser votes: {sum(ledger.acknowledged[n] for n in web)} acknowledged, {sum(ledger.in_flight.values())} in flight "
        f"at the kill; key press -> next item ({len(web_latency)} presses) "
        f"p50 {1e3 * statistics.median(web_latency or [float('nan')]):.0f} ms  "
        f"p95 {1e3 * percentile(web_latency, 0.95):.0f} ms  p99 {1e3 * percentile(web_latency, 0.99):.0f} ms"
    )
    print(
        f"database: {sum(stored.values())} votes; acknowledged but missing: {lost}; stored beyond acknowledged: {extra} "
        f"(at most the in-flight ones)"
    )
    engine.dispose()
    drop_pg_database(url)


if __name__ == "__main__":
    main()
