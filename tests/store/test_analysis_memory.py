"""Issue 37, item 6 (the 1-hour soak): a server keeps the analysis of a study's current state, not one
per earlier state.  As votes arrive every look (and the warmer) computes a new analysis; before, each
was kept three times over until the bounds were reached: in the analysis cache (32 entries, most of them
the same study at fewer votes), in the ended jobs' futures (64 jobs, each holding its result) and in the
stamps of when each was computed.  A result holds the per-item tables and the bootstraps' summaries, a
megabyte at a few hundred votes and more as votes grow, so the soak's server grew by tens of MB."""

from __future__ import annotations

import gc

import pytest

from annotate.analysis import analysis_jobs, reports
from tests.store.test_analysis_cache import SETTINGS, _study, _vote


@pytest.fixture(autouse=True)
def _fresh_cache():
    reports.clear_cache()
    analysis_jobs._JOBS.clear()
    yield
    reports.clear_cache()
    analysis_jobs._JOBS.clear()


def _live_analyses(study_id: int, before: frozenset[int] = frozenset()) -> list[dict]:
    """The analysis results of this study that anything in the process still holds, but those alive
    ``before`` the test (by id): an earlier test in the same process (an xdist worker runs its own
    share of the suite) may leave one alive, of its own database's study with the same id."""
    gc.collect()
    return [
        o
        for o in gc.get_objects()
        if type(o) is dict
        and "n_votes" in o
        and "agreement" in o
        and o.get("study_id", study_id) == study_id
        and id(o) not in before
    ]


def test_only_the_newest_analysis_of_a_study_is_kept(engine, tmp_path, monkeypatch):
    monkeypatch.setenv("DST_JUDGE_ANALYSIS_PROCESS", "0")  # computed in this process (the same cache either way)
    study, admin, people = _study(engine, tmp_path, n=8, name="memory")
    before = frozenset(id(o) for o in _live_analyses(study.id))  # another test's, held elsewhere
    votes = []
    for round_ in range(6):  # a vote, then the admin's look: each look a new study state
        assert _vote(engine, study, people[round_ % len(people)], limit=1) == 1
        seen = analysis_jobs.wait(engine, admin, study.id, SETTINGS)
        assert seen.current and seen.error is None
        votes.append(seen.votes)
    assert votes == sorted(set(votes))  # six states, six analyses
    del seen
    kept = _live_analyses(study.id, before)
    # the newest whole analysis, and at most the first answers (their own settings) of one state
    assert len(kept) <= 2, sorted(r["n_votes"] for r in kept)
    assert max(r["n_votes"] for r in kept) == votes[-1]
    again = analysis_jobs.wait(engine, admin, study.id, SETTINGS)  # the newest is still answered from the cache
    assert again.current and again.votes == votes[-1]
