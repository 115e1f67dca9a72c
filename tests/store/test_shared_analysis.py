"""Issue 39, item 2: the app servers of one database compute a study's analysis once.  Each server is a
process of its own (``tests/analysis_server.py``) on the same SQLite file or PostgreSQL database: the
second reads what the first stored; two asking at the same moment compute it once; a server killed while
computing holds the others up only until its lease lapses; a stored payload that names a function is
never run.  SQLite and PostgreSQL."""

from __future__ import annotations

import json
import os
import pickle
import signal
import subprocess
import sys
import time

import pytest
from sqlalchemy import select, update

from annotate import service
from annotate.analysis import analysis_cache, analysis_jobs, reports
from annotate.store.db import read_session, write_session
from annotate.store.models import AnalysisResult
from metrics.analysis import AnalysisSettings
from tests.conftest import REPO
from tests.store.test_analysis_cache import _study, _vote


@pytest.fixture(autouse=True)
def _fresh_cache():
    reports.clear_cache()
    yield
    reports.clear_cache()


def _server(url: str, study_id: int, resamples: int, go=None, **env) -> subprocess.Popen:
    command = [sys.executable, "-m", "tests.analysis_server", url, str(study_id), str(resamples)]
    if go is not None:
        command.append(str(go))
    environment = {**os.environ, "DST_JUDGE_BACKGROUND_ANALYSIS": "0", **env}
    return subprocess.Popen(command, cwd=REPO, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _ready(server: subprocess.Popen) -> None:
    line = server.stdout.readline()
    assert "ready" in line, line + server.stderr.read()


def _answer(server: subprocess.Popen) -> dict:
    out, err = server.communicate(timeout=600)
    assert server.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1])


def _rows(engine, study_id: int) -> list:
    with read_session(engine) as session:
        return session.execute(
            select(AnalysisResult.digest, AnalysisResult.running_digest, AnalysisResult.running_by, AnalysisResult.votes).where(
                AnalysisResult.study_id == study_id
            )
        ).all()


def _voted_study(engine, tmp_path, n=12, name="shared"):
    study, admin, people = _study(engine, tmp_path, n=n, overlap=2, annotators=2, name=name)
    for person in people:
        _vote(engine, study, person)
    return study, admin


def test_a_second_server_reads_the_analysis_the_first_computed(engine, db_url, tmp_path):
    study, admin = _voted_study(engine, tmp_path)
    first = _answer(_server(db_url, study.id, 20))
    second = _answer(_server(db_url, study.id, 20))
    assert first["origin"] == "computed" and second["origin"] == "stored"
    assert second["sha"] == first["sha"]  # the same analysis, value for value
    [(digest, running, by, votes)] = _rows(engine, study.id)
    assert digest is not None and running is None and votes == 24  # 12 dialogues x overlap 2

    # and this process (a third server) reads it too: the same numbers as it computes itself
    settings = AnalysisSettings(resamples=20, folds=0, grid=(0.0, 2.0, 5))
    stored = analysis_jobs.study_analysis(engine, admin, study.id, settings)
    assert analysis_cache.origin(stored) == "stored"
    reports.clear_cache(engine)  # nothing held anywhere: computed afresh here
    assert _rows(engine, study.id) == []
    fresh = analysis_jobs.study_analysis(engine, admin, study.id, settings)
    assert analysis_cache.origin(fresh) == "computed" and pickle.dumps(fresh, protocol=5) == pickle.dumps(stored, protocol=5)

    # a new vote: the stored analysis is not the study's any more, and the next server computes it
    service.reopen(engine, admin, study.id, None, extra=1)
    assert _vote(engine, study, _third(engine, study), limit=1) == 1
    assert _answer(_server(db_url, study.id, 20))["origin"] == "computed"

    # a study deleted takes its stored analyses with it
    service.record_export(engine, admin, study.id, "test", 10**9)
    service.delete_study(engine, admin, study.id, study.name)
    assert _rows(engine, study.id) == []


def _third(engine, study):
    from annotate.people.auth import add_annotator

    with write_session(engine) as session:
        return add_annotator(session, f"{study.name}-late", "pw-late-123")


def test_two_servers_asking_at_once_compute_it_once(engine, db_url, tmp_path):
    study, _ = _voted_study(engine, tmp_path, n=30, name="together")
    go = tmp_path / "go"
    servers = [_server(db_url, study.id, 300, go) for _ in range(2)]
    for server in servers:
        _ready(server)
    go.touch()  # both ask now
    answers = [_answer(server) for server in servers]
    assert sorted(a["origin"] for a in answers) == ["computed", "stored"]
    assert answers[0]["sha"] == answers[1]["sha"]
    [(digest, running, _, votes)] = _rows(engine, study.id)
    assert digest is not None and running is None and votes == 60


def test_a_result_stored_between_a_look_and_the_lease_check_is_read_not_computed_again(engine, tmp_path, monkeypatch):
    """The race two servers ran into on a busy machine: this server looks (nothing stored yet), the other
    server stores its result and ends its lease, and only then does this server see the lease gone.  The
    lease gone means the result is there: this server reads it and computes nothing."""
    study, _ = _voted_study(engine, tmp_path, name="between")
    settings = AnalysisSettings(resamples=20, folds=0, grid=(0.0, 2.0, 5))
    key = analysis_cache.analysis_key(engine, study.id, settings, None)
    from annotate.analysis.study_data import analyse_afresh

    result = analyse_afresh(engine, study.id, settings, None, None)
    monkeypatch.setattr(analysis_cache, "_HOLDER", "other-server")
    assert analysis_cache.claim(engine, key)  # the other server computes it
    monkeypatch.undo()
    reports.clear_cache()  # nothing held in this process: only the database tells
    looks = []
    real_fetch = analysis_cache.fetch

    def fetch_then_the_other_stores(engine_, key_):
        found = real_fetch(engine_, key_)
        looks.append(found is not None)
        if len(looks) == 2:  # right after this server's second look, the other server finishes
            with monkeypatch.context() as other:
                other.setattr(analysis_cache, "_HOLDER", "other-server")
                analysis_cache.store(engine_, key_, dict(result))
            analysis_cache.clear()  # what the other server keeps in its memory is not this one's
        return found

    monkeypatch.setattr(analysis_cache, "fetch", fetch_then_the_other_stores)
    monkeypatch.setattr(analysis_jobs, "WAIT_SECONDS", 0.01)
    computed = []
    found = analysis_jobs._obtain(
        engine, key, lambda: computed.append(1) or analyse_afresh(engine, study.id, settings, None, None)
    )
    assert computed == [] and analysis_cache.origin(found) == "stored"
    assert looks[:2] == [False, False] and looks[-1] is True


def test_a_server_killed_while_computing_holds_the_others_up_only_until_its_lease_lapses(engine, db_url, tmp_path):
    study, _ = _voted_study(engine, tmp_path, n=40, name="killed")
    lease = {"DST_JUDGE_ANALYSIS_LEASE_SECONDS": "3"}
    first = _server(db_url, study.id, 3000, **lease)
    _ready(first)
    for _ in range(3000):  # until it holds the lease: it is computing
        rows = _rows(engine, study.id)
        if rows and f":{first.pid}:" in rows[0].running_by:
            break
        time.sleep(0.02)
    else:
        pytest.fail("the first server never took the lease: " + first.stderr.read()[-2000:])
    first.send_signal(signal.SIGKILL)
    first.wait(30)
    [(digest, running, by, _)] = _rows(engine, study.id)
    assert digest is None and running is not None and f":{first.pid}:" in by  # died mid-way, lease held

    second = _answer(_server(db_url, study.id, 3000, **lease))
    assert second["origin"] == "computed"  # it waited for the lease to lapse, then took over
    [(digest, running, by, votes)] = _rows(engine, study.id)
    assert digest is not None and running is None and f":{second['pid']}:" in by and votes == 80


def test_a_stored_payload_that_names_a_function_is_never_run(engine, tmp_path):
    """Only plain values are stored and loaded: a payload someone wrote into the table that would call a
    function on loading (here ``os.system``) is refused and the analysis computed afresh."""
    import zlib

    study, admin = _voted_study(engine, tmp_path, name="hostile")
    settings = AnalysisSettings(resamples=20, folds=0, grid=(0.0, 2.0, 5))
    honest = analysis_jobs.study_analysis(engine, admin, study.id, settings)
    marker = tmp_path / "ran"

    class Hostile:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    key = analysis_cache.analysis_key(engine, study.id, settings, None)
    with write_session(engine) as session:
        session.execute(
            update(AnalysisResult)
            .where(AnalysisResult.slot == key.slot_digest)
            .values(payload=zlib.compress(pickle.dumps({"n_votes": Hostile()})))
        )
    reports.clear_cache()  # this process forgets it: the next look reads the database's copy
    again = analysis_jobs.study_analysis(engine, admin, study.id, settings)
    assert not marker.exists()
    assert analysis_cache.origin(again) == "computed" and again["n_votes"] == honest["n_votes"] == 24
    assert analysis_cache._unpack(zlib.compress(pickle.dumps({"a": [1, 2.5, "x", None, (3,)]}))) == {
        "a": [1, 2.5, "x", None, (3,)]
    }


def test_a_result_that_cannot_be_shared_ends_its_lease(engine, tmp_path):
    """A result holding more than plain values (here a datetime) stays in this process only, and the
    lease taken to compute it ends at once: no other server waits for a result that will never come."""
    from datetime import datetime

    study, _ = _voted_study(engine, tmp_path, name="unshared")
    key = analysis_cache.analysis_key(engine, study.id, AnalysisSettings(resamples=20, folds=0, grid=(0.0, 2.0, 5)), None)
    assert analysis_cache.claim(engine, key)
    [(digest, running, _, _)] = _rows(engine, study.id)
    assert digest is None and running == key.digest
    result = {"n_votes": 24, "when": datetime(2026, 11, 28)}
    assert analysis_cache.store(engine, key, result) is result
    [(digest, running, _, _)] = _rows(engine, study.id)
    assert digest is None and running is None and analysis_cache.lease_lapsed(engine, key)
    assert analysis_cache.cached(key) is result


def test_a_server_waiting_for_another_only_reads_while_that_lease_is_live(engine, tmp_path, monkeypatch):
    """While another server holds the lease on an analysis, a server that wants it polls by reading: it
    tries to take the lease (a write, which on SQLite queues behind the votes) once, then again only when
    the other's lease has lapsed, and it takes the other's result when it is stored."""
    import threading

    study, admin = _voted_study(engine, tmp_path, name="waiting")
    settings = AnalysisSettings(resamples=20, folds=0, grid=(0.0, 2.0, 5))
    honest = analysis_jobs.study_analysis(engine, admin, study.id, settings)
    key = analysis_cache.analysis_key(engine, study.id, settings, None)
    with write_session(engine) as session:  # another server computes it now: its lease, no result yet
        session.execute(
            update(AnalysisResult)
            .where(AnalysisResult.slot == key.slot_digest)
            .values(digest=None, running_digest=key.digest, running_until=time.time() + 60, running_by="elsewhere:1:x")
        )
    reports.clear_cache()  # this process holds nothing
    claims, polls, out = [], [], {}
    real_claim = analysis_cache.claim
    monkeypatch.setattr(analysis_cache, "claim", lambda *a, **k: claims.append(1) or real_claim(*a, **k))
    waiter = threading.Thread(
        target=lambda: out.setdefault(
            "result", analysis_jobs._obtain(engine, key, lambda: {"n_votes": -1}, waiting=lambda: polls.append(1))
        )
    )
    waiter.start()
    deadline = time.time() + 60
    while len(polls) < 5 and time.time() < deadline:
        time.sleep(0.05)
    assert len(polls) >= 5 and waiter.is_alive()
    with write_session(engine) as session:  # the other server stores its result
        session.execute(
            update(AnalysisResult)
            .where(AnalysisResult.slot == key.slot_digest)
            .values(digest=key.digest, running_digest=None, running_until=None)
        )
    waiter.join(30)
    assert not waiter.is_alive()
    assert out["result"]["n_votes"] == honest["n_votes"] == 24  # the stored result, not one computed here
    assert len(claims) == 1  # one try at the lease, then reads only
