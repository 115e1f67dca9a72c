"""Issue 27, item 7: a study's analysis is computed in the background; a look answers at once with the
current analysis, or with the newest one of fewer votes while the current one is computed; as votes
arrive the warmer computes the stored settings' analysis once they settle; SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from annotate import analysis_jobs, reports, service
from annotate.auth import PermissionDenied
from annotate.store.db import write_session
from annotate.store.models import Study
from tests.store.test_analysis_cache import SETTINGS, _study, _vote


@pytest.fixture(autouse=True)
def _fresh_cache():
    reports.clear_cache()
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
    assert fresh.result == reports.study_analysis(engine, admin, study.id, SETTINGS)  # the page's and the exports' agree


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

    def broken(engine_, key, progress=None):
        calls.append(key)
        raise ValueError("the ratings need at least 3 observations")

    monkeypatch.setattr(reports, "compute", broken)  # the analysis itself fails (not our store)
    seen = analysis_jobs.wait(engine, admin, study.id, SETTINGS)
    assert seen.error == "the ratings need at least 3 observations" and not seen.current
    assert service.analysis_look(engine, admin, study.id, SETTINGS).error and len(calls) == 1  # not re-run on every look
    monkeypatch.undo()
    retried = service.analysis_look(engine, admin, study.id, SETTINGS, retry=True, wait=120)
    assert retried.current and retried.votes == 4


def test_the_warmer_computes_the_stored_settings_once_the_votes_settle(engine, tmp_path):
    study, admin, people = _study(engine, tmp_path, n=8, name="warm")
    service.set_study_settings(engine, admin, study.id, SETTINGS)
    settled: dict[int, tuple] = {}
    assert analysis_jobs.warm_once(engine, settled) == 0  # no votes yet
    _vote(engine, study, people[0], limit=3)
    assert analysis_jobs.warm_once(engine, settled) == 0  # votes still arriving: wait a round
    started = analysis_jobs.warm_once(engine, settled)
    assert started >= 1
    seen = analysis_jobs.wait(engine, admin, study.id, service.study_settings(engine, admin, study.id))
    assert seen.current and seen.votes == 3
    assert analysis_jobs.warm_once(engine, settled) == 0  # current: nothing to do
    closed, closed_admin, closed_people = _study(engine, tmp_path, n=4, name="closed")
    _vote(engine, closed, closed_people[0])
    with write_session(engine) as session:  # an archived study is left alone
        session.get(Study, closed.id).archived = True
    assert analysis_jobs.warm_once(engine, settled) == 0
    assert analysis_jobs.warm_once(engine, settled) == 0
    key = reports.analysis_key(engine, closed.id, service.study_settings(engine, closed_admin, closed.id), None)
    assert reports.cached(key) is None


def test_an_analysis_dropped_from_the_cache_is_computed_again(engine, tmp_path):
    """Review of issue 27: a job that ended well was handed back after its result had left the cache
    (32 results kept, 64 jobs), so the page's progress bar polled for ever."""
    study, admin, people = _study(engine, tmp_path, n=4, name="evicted")
    _vote(engine, study, people[0])
    assert analysis_jobs.wait(engine, admin, study.id, SETTINGS).current
    reports.clear_cache()  # as an eviction does
    again = analysis_jobs.wait(engine, admin, study.id, SETTINGS, timeout=60)
    assert again.current and again.votes == 4
