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
  ``PRAGMA integrity_check`` after;
- ``freeze-25``, ``freeze-70`` (issue 37): every process of the PostgreSQL server stopped with SIGSTOP
  for 25 s or 70 s, then SIGCONT (``OwnPostgres.freeze``), with the default timeouts: a hung server,
  whose kernel still acknowledges data and whose own statement timeout cannot fire, so the client's
  deadline (``annotate.store.deadline``) is what bounds a request.

Every fault row also prints the p50 / p99 and the longest time of one attempt (``next_item`` +
``submit``, acknowledged or failed): how long an annotator waited for an answer, whichever it was.

Beside them, rows of HTTP API clients under overload (issue 37): ``api200-sqlite`` and
``api200-postgresql`` run ``--clients`` (200) API clients for ``--seconds`` (40) against the API in its own
process (``python -m annotate api``, the default bounds of ``annotate.api.admission``), each looping
``GET next`` -> ``POST vote`` (an Idempotency-Key per vote); a 503 is sent again after its
``Retry-After``.  They print p50 / p99 of every answer, the share of 503s, p50 / p99 of a vote from its
first send to its acknowledgement, votes per second, and acknowledged vs stored (lost: acknowledged,
not stored; duplicated: stored twice; both must be 0).  ``api200-sqlite-unbounded`` is the same with the
API's line and the writer's bound off (``DST_JUDGE_API_CONCURRENCY=0``, ``DST_JUDGE_WRITE_QUEUE_WAIT=0``):
the waits as they were before.

    python -m bench.bench_faults [--annotators 20] [--faults pg-restart,pg-kill,partition,disk-full,freeze-25,freeze-70,
                                  api200-sqlite,api200-postgresql] [--clients 200] [--seconds 40] [--json]

Needs root (runuser, ip netns, mount) and Debian's PostgreSQL server binaries.
"""

from __future__ import annotations

import argparse
import asyncio
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
from annotate.people.auth import add_annotator
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


def percentile(values: list[float], q: float) -> float | None:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q / 100 * (len(values) - 1))))] if values else None


def rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


class Run:
    """Annotator threads voting until ``stop``; every acknowledged vote and every failure time-stamped,
    and every attempt's duration."""

    def __init__(self, engine, study_id: int, people: list):
        self.engine, self.study_id, self.people = engine, study_id, people
        self.acknowledged = {p.id: 0 for p in people}
        self.ack_times: list[float] = []
        self.attempts: list[float] = []  # seconds of each attempt, acknowledged or failed
        self.failures = 0
        self.stop = threading.Event()
        self.lock = threading.Lock()

    def annotator(self, person) -> None:
        judged: list[int] = []
        rng = random.Random(person.id)
        while not self.stop.is_set():
            began = time.monotonic()
            try:
                item = service.next_item(self.engine, person, self.study_id)
                item_id = item.id if item is not None else rng.choice(judged)  # then: changes of answer
                service.submit(self.engine, person, item_id, {"satisfied": rng.choice("01")})
            except Exception:  # the fault: not acknowledged; try again shortly
                with self.lock:
                    self.failures += 1
                    self.attempts.append(time.monotonic() - began)
                time.sleep(0.2)
                continue
            with self.lock:
                self.acknowledged[person.id] += 1
                self.ack_times.append(time.monotonic())
                self.attempts.append(self.ack_times[-1] - began)
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
            "attempt_p50_s": rounded(percentile(self.attempts, 50)),
            "attempt_p99_s": rounded(percentile(self.attempts, 99)),
            "longest_attempt_s": rounded(max(self.attempts, default=None)),
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
            elif kind.startswith("freeze-"):
                pg.freeze()
                time.sleep(float(kind.split("-")[1]))
                pg.thaw()
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


class ApiLog:
    """What the API clients saw: every answer's status and time, each vote from its first send to its
    acknowledgement, the (annotator, key) of every acknowledged vote, and anything else went wrong."""

    def __init__(self) -> None:
        self.answers: list[tuple[int, float]] = []
        self.votes: list[float] = []
        self.acknowledged: set[tuple[str, str]] = set()
        self.errors: list[str] = []
        self.resent = 0  # requests sent again after the connection broke


async def _api_client(http, study: int, token: str, name: str, deadline: float, log: ApiLog) -> None:
    import httpx

    headers = {"Authorization": f"Bearer {token}"}

    async def ask(method: str, path: str, key: str | None = None, **options):
        """Until answered other than 503 (nothing was stored: the same request after Retry-After)."""
        sent = {**headers, "Idempotency-Key": key} if key else headers
        cut = 0
        while True:
            began = time.monotonic()
            try:
                response = await http.request(method, f"/api/v1/studies/{study}{path}", headers=sent, **options)
            except httpx.TransportError as err:  # a kept-alive connection the server closed meanwhile: again
                cut += 1
                log.resent += 1
                if cut < 5:
                    await asyncio.sleep(0.5)
                    continue  # the same key: stored at most once
                log.errors.append(f"{method} {path}: {type(err).__name__}: {err}")
                return None
            log.answers.append((response.status_code, time.monotonic() - began))
            if response.status_code != 503:
                return response
            await asyncio.sleep(float(response.headers.get("retry-after", "2")))

    n = 0
    while time.monotonic() < deadline:
        found = await ask("GET", "/next")
        if found is None or found.status_code != 200:
            if found is not None:
                log.errors.append(f"GET next: {found.status_code} {found.text[:200]}")
            return
        item = found.json()["item"]
        if item is None:
            return  # nothing left for this client
        key, n = f"{name}-{n}", n + 1
        sent = time.monotonic()
        voted = await ask("POST", f"/items/{item['id']}/votes", key, json={"answers": {"satisfied": "1"}})
        if voted is None or voted.status_code != 200:
            if voted is not None:
                log.errors.append(f"POST vote: {voted.status_code} {voted.text[:200]}")
            return
        log.votes.append(time.monotonic() - sent)
        log.acknowledged.add((name, key))


def api_clients(backend: str, clients: int, run_seconds: float, *, unbounded: bool = False) -> dict:
    """``clients`` API clients for ``run_seconds`` against the API in its own process, on a fresh database
    of ``backend`` (sqlite, or postgresql: a server of this run's own)."""
    import httpx

    from annotate.store.models import Annotator, ApiRequest
    from bench.corpus import build, dialogue_file
    from tests.api_harness import LiveApi

    folder = Path(tempfile.mkdtemp(prefix="dstj-api200-"))
    pg = OwnPostgres() if backend == "postgresql" else None
    url = pg.url if pg else f"sqlite:///{folder / 'judge.sqlite'}"
    engine = make_engine(url)
    saved = {name: os.environ.get(name) for name in ("DST_JUDGE_API_CONCURRENCY", "DST_JUDGE_WRITE_QUEUE_WAIT")}
    try:
        upgrade(engine)
        corpus = folder / "corpus.json"
        corpus.write_text(json.dumps(build(1000)))
        study = service.create_study_from_files(
            engine, service.CLI, "api200", "satisfaction", [corpus, dialogue_file(corpus)], overlap=3
        ).id
        names = [f"c{i:03d}" for i in range(clients)]
        tokens = []
        for name in names:
            service.add_person(engine, service.CLI, name, None)
            tokens.append(service.add_token(engine, service.CLI, name)[0])
        if unbounded:  # the API as it was: no line in front, no bound on the writer's line
            os.environ.update(DST_JUDGE_API_CONCURRENCY="0", DST_JUDGE_WRITE_QUEUE_WAIT="0")
        log = ApiLog()
        with LiveApi(url, log=folder / "api.log") as api:

            async def everyone() -> float:
                # a client of its own (one connection) each: one pool shared by 200 tasks queues them in the
                # client (httpcore), which then measures itself rather than the API
                https = [httpx.AsyncClient(base_url=api.url, timeout=600, verify=False) for _ in range(clients)]
                try:
                    began = time.monotonic()
                    deadline = began + run_seconds
                    await asyncio.gather(
                        *(_api_client(https[i], study, tokens[i], names[i], deadline, log) for i in range(clients))
                    )
                    return time.monotonic() - began
                finally:
                    for http in https:
                        await http.aclose()

            wall = asyncio.run(everyone())
        with read_session(engine) as session:
            ids = dict(session.execute(select(Annotator.id, Annotator.name)).all())
            keys = {(ids[a], k) for a, k in session.execute(select(ApiRequest.annotator_id, ApiRequest.key))}
            events = session.scalar(select(func.count()).select_from(VoteEvent))
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        engine.dispose()
        if pg:
            pg.close()
    times = [t for _, t in log.answers]
    busy = sum(1 for status, _ in log.answers if status == 503)
    return {
        "clients": clients,
        "seconds": round(wall, 1),
        "answers": len(log.answers),
        "p50_ms": round(percentile(times, 50) * 1000) if times else None,
        "p99_ms": round(percentile(times, 99) * 1000) if times else None,
        "share_503": round(busy / len(times), 3) if times else None,
        "vote_p50_ms": round(percentile(log.votes, 50) * 1000) if log.votes else None,
        "vote_p99_ms": round(percentile(log.votes, 99) * 1000) if log.votes else None,
        "votes_per_s": round(len(log.acknowledged) / wall, 1),
        "acknowledged": len(log.acknowledged),
        "stored": len(keys),
        "lost": len(log.acknowledged - keys),
        "duplicated": events - len(keys),
        "resent_after_a_broken_connection": log.resent,
        "errors": len(log.errors),
        **({"first_error": log.errors[0]} if log.errors else {}),
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--annotators", type=int, default=20)
    parser.add_argument(
        "--faults", default="pg-restart,pg-kill,partition,disk-full,freeze-25,freeze-70,api200-sqlite,api200-postgresql"
    )
    parser.add_argument("--clients", type=int, default=200, help="API clients of the api200 rows")
    parser.add_argument("--seconds", type=float, default=40, help="how long the api200 rows' clients run")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    results = {}
    for fault in args.faults.split(","):
        if fault.startswith("api200-"):
            backend = fault.split("-")[1]
            results[fault] = r = api_clients(backend, args.clients, args.seconds, unbounded=fault.endswith("-unbounded"))
            if not args.json:
                print(
                    f"{fault:>10}: {r['clients']} clients x {r['seconds']} s: {r['answers']} answers, p50 {r['p50_ms']} ms, "
                    f"p99 {r['p99_ms']} ms, 503s {r['share_503']:.1%}; a vote p50 {r['vote_p50_ms']} ms, p99 "
                    f"{r['vote_p99_ms']} ms, {r['votes_per_s']} votes/s; acknowledged {r['acknowledged']}, stored "
                    f"{r['stored']}, lost {r['lost']}, duplicated {r['duplicated']}, errors {r['errors']}"
                )
            continue
        results[fault] = disk_full(args.annotators) if fault == "disk-full" else pg_fault(fault, args.annotators)
        if not args.json:
            r = results[fault]
            print(
                f"{fault:>10}: acknowledged {r['acknowledged']}, stored {r['stored']}, lost {r['lost']}, "
                f"failed attempts {r['failed_attempts']}, recovery {r['recovery_s']} s, an attempt p50 "
                f"{r['attempt_p50_s']} s, p99 {r['attempt_p99_s']} s, longest {r['longest_attempt_s']} s"
                + (f", integrity_check {r['integrity_check']}" if "integrity_check" in r else "")
            )
    if args.json:
        print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
