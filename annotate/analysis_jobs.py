"""Analyses computed in the background, so that the Analysis page never waits for a bootstrap (issue 27).

A study's analysis (agreement, the correlations with their bootstraps, the λ calibration) takes
seconds; in the page's own request it held the page 1-8 s on every first look and every change of a
setting.  Here one worker thread per server process computes them, one at a time, into the analysis
cache (``annotate.reports``), and :func:`look` answers at once with what there is:

- the analysis of the study as it is now, if computed (``current``);
- else the newest analysis computed for the same settings on fewer votes (its ``n_votes`` says how
  many), while the current one is computed (``running``, with its progress);
- else nothing yet, while it is computed.

A look that finds no current analysis starts its computation (one job per study state and settings;
a second look joins it).  As votes arrive, a warmer thread (:func:`start_warmer`, started with the
app's engine) computes each open study's stored settings' analysis once the votes have settled for a
few seconds, so the admin's first look finds it done.  ``DST_JUDGE_BACKGROUND_ANALYSIS=0`` turns the
warmer off (the test suite does, so that no test competes with an analysis it did not ask for).

Nothing here is Streamlit: the page polls :func:`look` from a fragment that re-runs every second while
a job runs (``annotate/pages/analysis.py``).
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sqlalchemy import Engine, select

from annotate.auth import require_admin
from annotate.store.db import read_session
from annotate.store.models import Annotator, Study
from formats.settings import settings

if TYPE_CHECKING:
    from metrics.analysis import AnalysisSettings

# annotate.reports and annotate.study_data (numpy, the statistics) are imported by the functions that
# compute: the warmer starts with the app's engine, before the login form is served, and imports them
# in its own thread, after its first sleep (issue 36).

log = logging.getLogger(__name__)

_EXECUTOR = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dst-judge-analysis")
_LOCK = threading.Lock()
KEPT_JOBS = 64


@dataclass
class Job:
    """One computation under way (or ended): its progress as the analysis reports it."""

    key: tuple
    fraction: float = 0.0
    text: str = "waiting for the analysis worker"
    future: Future | None = None
    error: str | None = None
    started: float = field(default_factory=time.monotonic)

    def progress(self, fraction: float, text: str) -> None:
        self.fraction, self.text = float(fraction), text

    @property
    def running(self) -> bool:
        return self.future is not None and not self.future.done()


_JOBS: dict[tuple, Job] = {}


@dataclass(frozen=True)
class Look:
    """What the Analysis page can show now: ``result`` (None before the first analysis of these settings),
    whether it is of the study as it is now (``current``) or of fewer votes, and the job computing the
    current one (``running``, ``fraction``, ``text``), or the error it ended with."""

    result: dict | None
    current: bool
    running: bool = False
    fraction: float = 0.0
    text: str = ""
    error: str | None = None

    @property
    def votes(self) -> int | None:
        """The votes the shown result was computed on."""
        return None if self.result is None else self.result.get("n_votes")


def _run(engine: Engine, job: Job) -> dict:
    from annotate import reports

    try:
        return reports.compute(engine, job.key, job.progress)
    except Exception as error:  # shown on the page ("the analysis failed: ..."), never a traceback
        job.error = f"{type(error).__name__}: {error}" if not isinstance(error, ValueError) else str(error)
        log.exception("analysis of study %s failed", job.key[1])
        raise


def submit(engine: Engine, key: tuple) -> Job:
    """The job computing ``key`` (:func:`annotate.reports.analysis_key`): the one under way, or a new one
    (an ended job is not handed back: its result may have left the cache since)."""
    with _LOCK:
        job = _JOBS.get(key)
        if job is not None and job.running:
            return job
        job = Job(key)
        _JOBS[key] = job
        while len(_JOBS) > KEPT_JOBS:  # the oldest ended jobs go first
            ended = next((k for k, j in _JOBS.items() if not j.running), None)
            if ended is None:
                break
            _JOBS.pop(ended)
        job.future = _EXECUTOR.submit(_run, engine, job)
        return job


def look(
    engine: Engine,
    user: Annotator,
    study_id: int,
    settings: AnalysisSettings,
    *,
    condition: str | None = None,
    retry: bool = False,
    wait: float = 0.0,
) -> Look:
    """What there is to show now of ``settings``' analysis (see the module's docstring); starts
    computing the current one if it is not there (``retry``: again after an error) and waits for it up
    to ``wait`` seconds (a small study's analysis is there before a progress bar would be worth
    showing; the page waits ``DST_JUDGE_ANALYSIS_WAIT`` seconds, 0.5 by default).  Admin only."""
    from annotate import reports

    require_admin(user)
    key = reports.analysis_key(engine, study_id, settings, condition)
    found = reports.cached(key)
    if found is not None:
        return Look(found, True)
    with _LOCK:
        failed = _JOBS.get(key)
    if failed is not None and failed.error is not None and not failed.running and not retry:
        return Look(reports.newest(key), False, error=failed.error)
    job = submit(engine, key)
    if wait > 0 and job.future is not None:
        try:
            job.future.result(timeout=wait)
        except Exception:  # still running (TimeoutError), or failed: job.error says which
            pass
    found = reports.cached(key)  # it may have ended meanwhile
    if found is not None:
        return Look(found, True)
    return Look(reports.newest(key), False, running=job.running, fraction=job.fraction, text=job.text, error=job.error)


def wait(engine: Engine, user: Annotator, study_id: int, settings: AnalysisSettings, *, condition=None, timeout=600) -> Look:
    """:func:`look` until the current analysis is there (for scripts and benchmarks)."""
    deadline = time.monotonic() + timeout
    while True:
        seen = look(engine, user, study_id, settings, condition=condition)
        if seen.current or seen.error or time.monotonic() > deadline:
            return seen
        time.sleep(0.05)


# --- the warmer: each open study's stored settings, computed as votes arrive -----------------------

_WARMERS: set[str] = set()
POLL_SECONDS = 5.0  # a study is analysed once its inputs were the same at two rounds in a row


def warm_once(engine: Engine, settled: dict[int, tuple]) -> int:
    """One round: each open study with votes whose stored settings' analysis is not current, and whose
    inputs were the same at the last round (``settled``: study → inputs seen), gets a job.  Returns the
    number of jobs started."""
    from annotate import reports
    from annotate.study_data import stored_settings

    started = 0
    with read_session(engine) as session:
        studies = session.execute(select(Study.id, Study.settings).where(Study.archived.is_(False))).all()
    for study_id, stored in studies:
        settings = stored_settings(stored)  # what the Analysis page opens with
        key = reports.analysis_key(engine, study_id, settings, None)
        previous, settled[study_id] = settled.get(study_id), key[4]
        if previous != key[4] or reports.cached(key) is not None:
            continue  # votes still arriving (or nothing new): wait for them to settle
        if not _has_votes(key):
            continue
        with _LOCK:
            known = _JOBS.get(key)
        if known is None:
            submit(engine, key)
            started += 1
    return started


def _has_votes(key: tuple) -> bool:
    """Whether :func:`annotate.reports.inputs_version` counted any vote event (its 5th number)."""
    return bool(key[4][4])


def start_warmer(engine: Engine) -> bool:
    """Start the warmer thread for this engine's database once per process (unless
    ``DST_JUDGE_BACKGROUND_ANALYSIS=0``).  Returns whether it runs."""
    if not settings().background_analysis:
        return False
    url = engine.url.render_as_string(hide_password=False)
    with _LOCK:
        if url in _WARMERS:
            return True
        _WARMERS.add(url)

    def loop() -> None:
        settled: dict[int, tuple] = {}
        while True:
            time.sleep(POLL_SECONDS)
            try:
                warm_once(engine, settled)
            except Exception:  # a database away for a while: try again next round
                log.warning("analysis warmer: this round failed", exc_info=True)

    threading.Thread(target=loop, name="dst-judge-analysis-warmer", daemon=True).start()
    return True
