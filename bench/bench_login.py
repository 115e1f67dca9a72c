"""What a refused login costs: the throttle's one query, as a guesser polling once a second makes the server run it.

    python -m bench.bench_login [--attempts 2000] [--rounds 5] [--backends sqlite,postgresql] [--json]

Each round times, interleaved on the same database, ``--attempts`` refused attempts through
``annotate.people.sessions.log_in`` (the name's throttle already running: refused before any password
check), and the same throttle query built afresh for each call (``built``: how ``_throttle_wait`` made it
before it was prepared once).  Figures: CPU milliseconds per attempt (``time.process_time``: this process,
so a PostgreSQL server's own work is not in it), the median over rounds, and the ratio built / prepared of
the query alone.  The login-throttle tests simulate hours of such polling (21,600 attempts in one).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from datetime import datetime, timedelta

from sqlalchemy import and_, func, select

from annotate.people.auth import add_annotator
from annotate.people.sessions import CLIENT_WINDOW, DEVICE_PREFIX, FAILURE_WINDOW, LoginRefused, _throttle_wait, log_in
from annotate.store.db import make_engine, read_session, upgrade, write_session
from annotate.store.models import LoginFailure

T0 = datetime(2026, 3, 2, 9)
NAME, CLIENT = "victim", "203.0.113.9"


def built_query(session, name: str, bucket: str, now: datetime):
    """The throttle query as it was built on every call before it was prepared once."""
    own = and_(LoginFailure.client == bucket, LoginFailure.at >= now - CLIENT_WINDOW)
    unknown = and_(LoginFailure.client.not_like(DEVICE_PREFIX + "%"), LoginFailure.at >= now - FAILURE_WINDOW)
    since = now - max(CLIENT_WINDOW, FAILURE_WINDOW)
    return session.execute(
        select(
            func.count(LoginFailure.id).filter(own),
            func.max(LoginFailure.at).filter(own),
            func.count(LoginFailure.id).filter(unknown),
            func.max(LoginFailure.at).filter(unknown),
        ).where(LoginFailure.name == name, LoginFailure.at >= since)
    ).one()


def _engine(backend: str):
    if backend == "sqlite":
        return make_engine(f"sqlite:///{tempfile.mkdtemp()}/login.sqlite"), None
    from tests.databases import create_pg_database

    url = create_pg_database()
    return make_engine(url), url


def measure(backend: str, attempts: int, rounds: int) -> dict:
    engine, url = _engine(backend)
    try:
        upgrade(engine)
        with write_session(engine) as session:
            add_annotator(session, NAME, "the-right-password")
        for _ in range(6):  # the free failures: from here on every attempt is refused before the check
            try:
                log_in(engine, NAME, "wrong", client=CLIENT, now=T0)
            except LoginRefused:
                pass
        timings: dict[str, list[float]] = {"login": [], "prepared": [], "built": []}
        for _ in range(rounds):
            start = time.process_time()
            for i in range(attempts):
                try:
                    log_in(engine, NAME, "wrong", client=CLIENT, now=T0 + timedelta(seconds=1 + i / attempts))
                except LoginRefused:
                    pass
            timings["login"].append((time.process_time() - start) / attempts * 1000)
            for label, run in (("prepared", _throttle_wait), ("built", built_query)):
                with read_session(engine) as session:
                    start = time.process_time()
                    for _ in range(attempts):
                        if label == "prepared":
                            run(session, NAME, CLIENT, False, T0 + timedelta(seconds=1))
                        else:
                            run(session, NAME, CLIENT, T0 + timedelta(seconds=1))
                    timings[label].append((time.process_time() - start) / attempts * 1000)
        medians = {key: statistics.median(values) for key, values in timings.items()}
        return {
            "backend": backend,
            "attempts": attempts,
            "rounds": rounds,
            "refused_login_ms": medians["login"],
            "query_prepared_ms": medians["prepared"],
            "query_built_ms": medians["built"],
            "built_over_prepared": medians["built"] / medians["prepared"],
        }
    finally:
        engine.dispose()
        if url:
            from tests.databases import drop_pg_database

            drop_pg_database(url)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rows = [measure(b, args.attempts, args.rounds) for b in args.backends.split(",") if b]
    if args.json:
        print(json.dumps({"rows": rows}, indent=2))
        return 0
    print(f"{'backend':<11} {'refused login':>14} {'query prepared':>15} {'query built':>12} {'built/prepared':>15}")
    for row in rows:
        print(
            f"{row['backend']:<11} {row['refused_login_ms']:>11.3f} ms {row['query_prepared_ms']:>12.3f} ms "
            f"{row['query_built_ms']:>9.3f} ms {row['built_over_prepared']:>14.2f}×"
        )
    print("CPU of this process per attempt, median over rounds (a PostgreSQL server's own work is not in it)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
