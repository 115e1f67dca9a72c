"""Benchmark: vote writes with 50 concurrent annotators, SQLite beside PostgreSQL.

    python -m bench.bench_votes [--writers 50] [--votes 40] [--items 1000] [--pg URL]

Each writer is a thread with its own annotator: one transaction = next_item + cast_vote
(a judgement), and every third judgement also changes an earlier vote (a second
transaction).  Prints p50 / p99 latency per transaction, throughput, and checks that no
vote was lost.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from sqlalchemy import func, select  # noqa: E402

from annotate.assignment import next_item  # noqa: E402
from annotate.auth import add_annotator  # noqa: E402
from annotate.db import make_engine, read_session, upgrade, write_session  # noqa: E402
from annotate.models import VoteEvent  # noqa: E402
from annotate.studies import create_study  # noqa: E402
from bench.corpus import build  # noqa: E402


def percentile(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q / 100 * (len(values) - 1))))]


def run_backend(url: str, corpus_path: Path, writers: int, votes: int) -> dict:
    engine = make_engine(url, pool_size=writers)
    upgrade(engine)
    with write_session(engine) as session:
        study = create_study(session, "bench", "satisfaction", [corpus_path], overlap=3)
        people = [add_annotator(session, f"bench-{i:02d}") for i in range(writers)]
    latencies: list[float] = []
    lock = threading.Lock()
    sent = 0

    def writer(index: int) -> int:
        rng = random.Random(index)
        person, judged, count = people[index], [], 0
        for n in range(votes):
            start = time.perf_counter()
            with write_session(engine) as session:
                item = next_item(session, study.id, person)
                if item is None:
                    break
                from annotate.votes import cast_vote

                cast_vote(session, person, item.id, "satisfied", rng.choice("01"))
            elapsed = time.perf_counter() - start
            judged.append(item.id)
            count += 1
            with lock:
                latencies.append(elapsed)
            if n % 3 == 2:
                start = time.perf_counter()
                with write_session(engine) as session:
                    from annotate.votes import cast_vote

                    cast_vote(session, person, rng.choice(judged), "satisfied", rng.choice("01"))
                with lock:
                    latencies.append(time.perf_counter() - start)
                count += 1
        return count

    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=writers) as pool:
        sent = sum(pool.map(writer, range(writers)))
    wall = time.perf_counter() - start
    with read_session(engine) as session:
        stored = session.scalar(select(func.count()).select_from(VoteEvent))
    engine.dispose()
    return {
        "transactions": len(latencies),
        "votes_sent": sent,
        "votes_stored": stored,
        "wall_s": wall,
        "p50_ms": 1e3 * statistics.median(latencies),
        "p99_ms": 1e3 * percentile(latencies, 99),
        "votes_per_s": sent / wall,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--writers", type=int, default=50)
    parser.add_argument("--votes", type=int, default=40, help="judgements per writer")
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/test", help="admin URL; a scratch database is made")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="dst-bench-votes-"))
    corpus = work / "corpus.json"
    corpus.write_text(json.dumps(build(args.items)))
    print(f"machine: {platform.machine()}, {platform.python_implementation()} {platform.python_version()}")
    print(
        f"{args.writers} concurrent writers x {args.votes} judgements (+1 vote change per 3), study of {args.items} items, k = 3"
    )
    results = {"sqlite": run_backend(f"sqlite:///{work / 'bench.sqlite'}", corpus, args.writers, args.votes)}
    try:
        import os

        from tests.databases import create_pg_database, drop_pg_database

        os.environ["DST_JUDGE_TEST_PG"] = args.pg
        url = create_pg_database()
        try:
            results["postgresql"] = run_backend(url, corpus, args.writers, args.votes)
        finally:
            drop_pg_database(url)
    except Exception as err:  # report, do not hide, a missing server
        print(f"postgresql: not measured ({err})")
    print(f"{'backend':<11} {'votes':>6} {'stored':>6} {'lost':>4} {'p50 ms':>8} {'p99 ms':>8} {'votes/s':>8}")
    for name, r in results.items():
        print(
            f"{name:<11} {r['votes_sent']:>6} {r['votes_stored']:>6} {r['votes_sent'] - r['votes_stored']:>4} "
            f"{r['p50_ms']:>8.1f} {r['p99_ms']:>8.1f} {r['votes_per_s']:>8.0f}"
        )
    if len(results) == 2:
        s, p = results["sqlite"], results["postgresql"]
        ratio = p["votes_per_s"] / s["votes_per_s"]
        print(f"ratio postgresql/sqlite: p50 x{p['p50_ms'] / s['p50_ms']:.2f}, throughput x{ratio:.2f}")


if __name__ == "__main__":
    main()
