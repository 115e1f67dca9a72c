"""Issue 27, item 7: a study's analysis is computed in the background; a look answers at once with the
current analysis, or with the newest one of fewer votes while the current one is computed; as votes
arrive the warmer computes the stored settings' analysis once they settle; SQLite and PostgreSQL."""

from __future__ import annotations

import os
import threading
import time
from dataclasses import replace

import pytest

from annotate import service
from annotate.analysis import analysis_cache, analysis_jobs, reports, study_data
from annotate.people.auth import PermissionDenied
from annotate.store.db import write_session
from annotate.store.models import Study
from tests.store.test_analysis_cache import SETTINGS, _study, _vote


@pytest.fixture(autouse=True)
def _fresh_cache():
    reports.clear_cache()
    analysis_jobs._WANTED.clear()
    analysis_jobs._STARTED.clear()
    yield
    reports.clear_cache()


def test_a_look_answers_at_once_and_the_current_analysis_follows(engine, tmp_path):
    study, admin, people = _study(engine, tmp_path, n=10)
    for person in people:
        _vote(engine, study, person)
    first = service.analysis_look(engine, admin, study.id, SETTINGS)  # nothing computed yet: a job starts
    assert first.result is None or first.current
    done = analysis_jobs.wait(engine, admin, study.id, SETTINGS)
    assert done.current and done.error is None and done.votes == 20  # 10 dialogues x overlap 2
    again = service.analysis_look(engine, admin, study.id, SETTINGS)
    assert again.current and again.result is done.result  # from the cache, no second computation

    # one more vote: the look shows the analysis of 20 votes, said so, while 21 are analysed
    extra = service.reopen(engine, admin, study.id, None, extra=1)
    assert extra > 0
    assert _vote(engine, study, people[2], limit=1) == 1  # the third annotator had nothing left before
    stale = service.analysis_look(engine, admin, study.id, SETTINGS)
    if not stale.current:  # the worker may already be done on a fast machine
        assert stale.result is done.result and stale.votes == 20
    fresh = analysis_jobs.wait(engine, admin, study.id, SETTINGS)
    assert fresh.current and fresh.votes == 21
    assert fresh.result == analysis_jobs.study_analysis(engine, admin, study.id, SETTINGS)  # the page's and the exports' agree


def test_a_look_can_wait_a_little_for_a_small_analysis(engine, tmp_path):
    study, admin, people = _study(engine, tmp_path, n=6, name="quick")
    _vote(engine, study, people[0])
    seen = service.analysis_look(engine, admin, study.id, SETTINGS, wait=120)
    assert seen.current and seen.votes == 6


def test_only_an_admin_looks(engine, tmp_path):
    study, _, people = _study(engine, tmp_path, n=4, name="private")
    with pytest.raises(PermissionDenied):
        service.analysis_look(engine, people[0], study.id, SETTINGS)


def test_a_failed_analysis_is_said_once_and_tried_again_on_request(engine, tmp_path, monkeypatch):
    study, admin, people = _study(engine, tmp_path, n=4, name="failing")
    _vote(engine, study, people[0])
    calls = []

    def broken(engine_, study_id, settings, condition, progress=None):
        calls.append(study_id)
        raise ValueError("the ratings need at least 3 observations")

    monkeypatch.setenv("DST_JUDGE_ANALYSIS_PROCESS", "0")  # computed in this process, where the patch is
    monkeypatch.setattr(study_data, "analyse_afresh", broken)  # the analysis itself fails (not our store)
    seen = analysis_jobs.wait(engine, admin, study.id, SETTINGS)
    assert seen.error == "the ratings need at least 3 observations" and not seen.current
    assert service.analysis_look(engine, admin, study.id, SETTINGS).error and len(calls) == 1  # not re-run on every look
    monkeypatch.undo()
    retried = service.analysis_look(engine, admin, study.id, SETTINGS, retry=True, wait=120)
    assert retried.current and retried.votes == 4


def test_the_warmer_keeps_only_wanted_studies_current_debounced_to_minutes(engine, tmp_path, monkeypatch):
    """Issue 38: the warmer analyses only studies whose analysis was wanted recently (a look, a report),
    once their votes were still for a minute, or, while votes keep arriving at a person's pace, once the
    refresh interval passed since the last job; never after every vote."""
    monkeypatch.setenv("DST_JUDGE_ANALYSIS_WANTED_MINUTES", "30")
    monkeypatch.setenv("DST_JUDGE_ANALYSIS_REFRESH_SECONDS", "300")
    study, admin, people = _study(engine, tmp_path, n=30, name="warm")
    service.set_study_settings(engine, admin, study.id, SETTINGS)
    settled: dict = {}
    t = float(round(time.monotonic()))  # the warmer's clock, moved on by hand (whole seconds: t + 300 - t is 300 exactly)
    _vote(engine, study, people[0], limit=3)
    for step in range(20):  # nobody wants it: votes still for minutes, nothing computed, nothing read
        assert analysis_jobs.warm_once(engine, settled, now=t + 60 * step) == 0
    stored = service.study_settings(engine, admin, study.id)
    assert analysis_cache.cached(analysis_cache.analysis_key(engine, study.id, stored, None)) is None

    analysis_jobs.want(engine, study.id, now=t)  # an admin opened its Analysis page
    assert analysis_jobs.warm_once(engine, settled, now=t) == 1  # never analysed: at once
    seen = analysis_jobs.wait(engine, admin, study.id, stored)
    assert seen.current and seen.votes == 3
    assert analysis_jobs.warm_once(engine, settled, now=t + 1) == 0  # current: nothing to do
    analysis_jobs.want(engine, study.id, now=t + 1)

    # a vote every 12 s: no job until the refresh interval (300 s) has passed since the last one
    started = []
    for n in range(1, 31):
        now = t + 12 * n
        _vote(engine, study, people[1 + n % 2], limit=1)
        started.append(analysis_jobs.warm_once(engine, settled, now=now))
        if started[-1]:
            analysis_jobs.wait(engine, admin, study.id, stored)
    assert sum(started) == 1 and started.index(1) == 300 // 12 - 1, started  # at 300 s: one job for 25 votes

    # the votes stop: the study is analysed once they were still for a minute
    now = t + 12 * 30
    _vote(engine, study, people[1], limit=1)
    assert analysis_jobs.warm_once(engine, settled, now=now + 1) == 0
    assert analysis_jobs.warm_once(engine, settled, now=now + 30) == 0
    assert analysis_jobs.warm_once(engine, settled, now=now + 1 + analysis_jobs.SETTLE_SECONDS) == 1
    assert analysis_jobs.wait(engine, admin, study.id, stored).current

    # wanted long ago: left alone again
    later = now + 31 * 60
    _vote(engine, study, people[2], limit=1)
    assert analysis_jobs.warm_once(engine, settled, now=later) == 0
    assert analysis_jobs.warm_once(engine, settled, now=later + 3600) == 0

    closed, closed_admin, closed_people = _study(engine, tmp_path, n=4, name="closed")
    _vote(engine, closed, closed_people[0])
    with write_session(engine) as session:  # an archived study is left alone, wanted or not
        session.get(Study, closed.id).archived = True
    analysis_jobs.want(engine, closed.id, now=later)
    assert analysis_jobs.warm_once(engine, settled, now=later) == 0
    assert analysis_jobs.warm_once(engine, settled, now=later + 3600) == 0


def test_a_report_makes_the_study_wanted(engine, tmp_path):
    study, admin, people = _study(engine, tmp_path, n=4, name="reported")
    _vote(engine, study, people[0])
    service.study_analysis(engine, admin, study.id, SETTINGS)  # an export, the report
    url = engine.url.render_as_string(hide_password=False)
    assert (url, study.id) in analysis_jobs._WANTED


def test_the_analysis_runs_in_a_process_of_its_own_at_a_lower_priority(engine):
    """Issue 38: not in the process (nor at the priority) that serves the annotators' pages."""
    if not analysis_jobs._separate(engine):
        pytest.skip("an in-memory database: analysed in this process")
    analysis_jobs.prepare(engine)
    assert analysis_jobs._WORKER.call(os.getpid) != os.getpid()
    assert analysis_jobs._WORKER.call(os.nice, 0) >= min(19, os.nice(0) + analysis_jobs.NICE)


def test_the_first_answers_are_shown_while_the_whole_analysis_is_computed(engine, tmp_path, monkeypatch):
    """Issue 38: cheap first (agreement, r per metric: no resamples), the rest later; a look between the
    two shows the first answers, said so, and the whole analysis replaces them."""
    monkeypatch.setenv("DST_JUDGE_ANALYSIS_PROCESS", "0")  # the hold below is in this process
    study, admin, people = _study(engine, tmp_path, n=10, name="first")
    for person in people:
        _vote(engine, study, person)
    hold, computed = threading.Event(), []
    real = study_data.analyse_afresh

    def held(engine_, study_id, settings, condition, progress=None):
        computed.append(settings.resamples)
        if settings.resamples:  # the whole analysis waits until the test has looked
            assert hold.wait(300)
        return real(engine_, study_id, settings, condition, progress)

    monkeypatch.setattr(study_data, "analyse_afresh", held)
    seen = service.analysis_look(engine, admin, study.id, SETTINGS)
    for _ in range(6000):
        if seen.result is not None:
            break
        time.sleep(0.05)
        seen = service.analysis_look(engine, admin, study.id, SETTINGS)
    assert seen.first and not seen.current and seen.running and seen.votes == 20
    assert seen.result["agreement"]["questions"] and seen.result["correlation"]["metrics"]
    assert all(m["pearson"] is not None for m in seen.result["correlation"]["metrics"])
    for _ in range(600):  # the whole one starts once its lease is taken (analysis_cache.claim): a write away
        if len(computed) == 2:
            break
        time.sleep(0.05)
    assert computed == [0, SETTINGS.resamples]  # the cheap one first
    hold.set()
    done = analysis_jobs.wait(engine, admin, study.id, SETTINGS)
    assert done.current and not done.first and done.result["n_votes"] == 20
    assert done.computed is not None


def test_an_analysis_dropped_from_the_cache_is_computed_again(engine, tmp_path):
    """Review of issue 27: a job that ended well was handed back after its result had left the cache
    (32 results kept, 64 jobs), so the page's progress bar polled for ever."""
    study, admin, people = _study(engine, tmp_path, n=4, name="evicted")
    _vote(engine, study, people[0])
    assert analysis_jobs.wait(engine, admin, study.id, SETTINGS).current
    reports.clear_cache()  # as an eviction does
    again = analysis_jobs.wait(engine, admin, study.id, SETTINGS, timeout=60)
    assert again.current and again.votes == 4


def test_a_queued_analysis_of_inputs_that_are_gone_is_dropped(engine, tmp_path):
    """Issue 37's soak (traced by line): with votes arriving, an admin's Analysis page asked for the
    analysis of each new state of the study while the one worker was busy; every ask queued a job, none
    was dropped (a queued job counted as running, so ``KEPT_JOBS`` could not evict it), and 438 jobs
    waited in the executor after 16 minutes, each to compute a state long gone.  A job not yet started for
    the same study, settings and condition is dropped when a newer one is asked for: at most one waits."""
    study, admin, people = _study(engine, tmp_path, n=6, name="queued")
    _vote(engine, study, people[0])
    key = analysis_cache.analysis_key(engine, study.id, SETTINGS, None)
    gate = threading.Event()
    blocker = analysis_jobs._EXECUTOR.submit(gate.wait, 60)  # the worker busy with something else
    try:
        asked = [analysis_jobs.submit(engine, replace(key, inputs=("state", n))) for n in range(5)]
        waiting = [job for job in analysis_jobs._JOBS.values() if job.key.slot == key.slot and job.running]
        assert [job.key.inputs for job in waiting] == [("state", 4)]
        assert all(job.future.cancelled() for job in asked[:4])
        # the executor skips a cancelled job when it reaches it: nothing of it is computed
    finally:
        gate.set()
        blocker.result(timeout=60)
    assert asked[-1].future.result(timeout=300) is None and asked[-1].error is None
