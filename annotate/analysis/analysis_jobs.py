"""Analyses computed in the background, so that the Analysis page never waits for a bootstrap (issue 27),
and never at an annotator's expense (issue 38).

A study's analysis (agreement, the correlations with their bootstraps, the λ calibration, Dawid-Skene)
takes seconds; in the page's own request it held the page 1-8 s on every first look and every change of
a setting.  Here one job at a time computes them into the analysis cache (``annotate.analysis.analysis_cache``:
this process's, and the database's, shared by its app servers, which compute each analysis once), and
:func:`look` answers at once with what there is:

- the analysis of the study as it is now, if computed (``current``);
- else the newest whole analysis computed for the same settings on fewer votes (its ``n_votes`` says how
  many), or, before there is one, the *first answers* of the study as it is now (``first``), while the
  current one is computed (``running``, with its progress);
- else nothing yet, while it is computed.

Where and when (issue 38: at a person's pace the old warmer re-ran the whole analysis after nearly
every vote, 2.5 s of server CPU per vote, in the process that serves the pages):

- **In a process of its own, at a lower priority.**  A job's computations run in one worker process
  (a plain subprocess, ``os.nice(NICE)``: ``_Worker``), started when the first job (or the warmer) needs it; the serving
  process's thread only waits for it, so the serving process's CPU and its GIL are the annotators'.
  ``DST_JUDGE_ANALYSIS_PROCESS=0`` (and an in-memory SQLite database, which another process cannot
  open) computes in a thread of the serving process instead, lowered with ``setpriority`` where Linux allows.
- **Cheap first, expensive later.**  A job computes the first answers (``AnalysisKey.first``: the
  settings without resamples, so agreement, majority, r per metric and the λ curve, without intervals)
  before the whole analysis (the bootstraps, the λ interval, Dawid-Skene's resampled competences); the
  page shows the first answers as soon as they are there and the rest replaces them when done.
- **Only for studies wanted recently.**  A look (the Analysis page) or a report, export or design line
  (``service.study_analysis``) marks the study wanted (:func:`want`); the warmer (:func:`start_warmer`,
  a thread that only reads a fingerprint every ``POLL_SECONDS``) keeps the stored settings' analysis of
  the studies wanted in the last ``DST_JUDGE_ANALYSIS_WANTED_MINUTES`` (30) current, and leaves every
  other study alone.
- **Debounced to minutes.**  The warmer starts a study's job once its inputs have been still for
  ``SETTLE_SECONDS`` (60), or, while votes keep arriving, once ``DST_JUDGE_ANALYSIS_REFRESH_SECONDS``
  (300) have passed since the study's last job started (the admin's own look is never delayed: it
  starts its job at once).  At a vote every 12 s that is one analysis per 25 votes, not one per vote.
- **The admin sees how fresh it is**: the page says on how many votes and when the shown analysis was
  computed (``Look.computed``), and keeps what it showed last (a revisit never shows less).

``DST_JUDGE_BACKGROUND_ANALYSIS=0`` turns the warmer off (the test suite does, so that no test competes
with an analysis it did not ask for).  Nothing here is Streamlit: the page polls :func:`look` from a
fragment that re-runs every second while a job runs (``annotate/pages/analysis.py``).
"""

from __future__ import annotations

import logging
import os
import pickle
import subprocess
import sys
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sqlalchemy import Engine, select

from annotate.analysis import analysis_cache
from annotate.analysis.analysis_cache import AnalysisKey, Inputs
from annotate.people.auth import require_admin
from annotate.store.db import read_session
from annotate.store.models import Annotator, Study
from formats.settings import settings

if TYPE_CHECKING:
    from metrics.analysis import AnalysisSettings, Progress

# annotate.analysis.study_data (numpy, the statistics) is imported by the functions that compute: the warmer
# starts with the app's engine, before the login form is served, and imports it in its own thread,
# after its first sleep (issue 36).

log = logging.getLogger(__name__)

_EXECUTOR = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dst-judge-analysis")
_LOCK = threading.Lock()
KEPT_JOBS = 64


@dataclass
class Job:
    """One computation under way (or ended): its progress as the analysis reports it."""

    key: AnalysisKey
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


_JOBS: dict[AnalysisKey, Job] = {}
_WANTED: dict[tuple[str, int], float] = {}  # (database, study) -> when (monotonic) its analysis was last wanted
_STARTED: dict[tuple[str, int], float] = {}  # (database, study) -> when its last job started


def want(engine: Engine, study_id: int, *, now: float | None = None) -> None:
    """Someone wants this study's analysis (its Analysis page, a report, an export): the warmer keeps it
    current for ``DST_JUDGE_ANALYSIS_WANTED_MINUTES``."""
    with _LOCK:
        _WANTED[(engine.url.render_as_string(hide_password=False), study_id)] = time.monotonic() if now is None else now


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
    first: bool = False  # the result is the first answers of the study as it is now (no intervals yet)
    computed: float | None = None  # when (time.time()) the shown result was computed

    def __post_init__(self) -> None:
        if self.computed is None and self.result is not None:
            object.__setattr__(self, "computed", analysis_cache.computed_at(self.result))

    @property
    def votes(self) -> int | None:
        """The votes the shown result was computed on."""
        return None if self.result is None else self.result.get("n_votes")


NICE = 10  # the analysis process's niceness: the serving process (0) comes first on a busy CPU
_CHILD_ENGINES: dict[str, Engine] = {}  # in the analysis process: one engine per database


# One BLAS thread in every process of the app (the analysis process here; ``python -m annotate serve``
# sets it for the serving process): the app's matrices are small, and OpenBLAS's threads (one per core)
# spin while they wait for work, so beside other load they burned 2-4x the CPU for the same numbers
# (``python -m bench.bench_blas_threads``: docs/benchmarks/blas-threads.json).  A value set in the
# environment is kept.
NUMERIC_THREADS = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


class _Worker:
    """The analysis process: ``python -c 'from annotate.analysis.analysis_jobs import serve; serve()'``, one call at
    a time, each ``(function, args)`` pickled in on its stdin and ``(ok, value)`` pickled back.  A plain
    subprocess, not ``multiprocessing``: under ``streamlit run`` the ``__main__`` module is the app's
    script, which a spawned ``multiprocessing`` child would import (and run) again."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.process: subprocess.Popen | None = None

    def call(self, function, *args):
        with self.lock:
            if self.process is None or self.process.poll() is not None:
                paths = os.pathsep.join(p for p in sys.path if p)  # the serving process's own imports
                env = {**NUMERIC_THREADS, **os.environ, "PYTHONPATH": paths}
                command = [sys.executable, "-c", "from annotate.analysis.analysis_jobs import serve; serve()"]
                self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
            try:
                pickle.dump((function, args), self.process.stdin)
                self.process.stdin.flush()
                ok, value = pickle.load(self.process.stdout)
            except (EOFError, OSError, pickle.UnpicklingError) as error:  # it died: a new one next time
                self.process.kill()
                self.process = None
                raise RuntimeError(f"the analysis process ended: {error}") from None
        if not ok:
            raise value
        return value


_WORKER = _Worker()


def serve() -> None:
    """The analysis process's loop (see ``_Worker``): at a lower priority, until its stdin closes."""
    try:
        os.nice(NICE)
    except OSError:  # not allowed here: the process is still apart from the serving one
        pass
    answers = os.fdopen(os.dup(1), "wb")  # the protocol's own stdout; what the analysis prints goes to stderr
    os.dup2(2, 1)
    requests = sys.stdin.buffer
    while True:
        try:
            function, args = pickle.load(requests)
        except EOFError:
            return
        try:
            answer = (True, function(*args))
        except Exception as error:
            answer = (False, error)
        try:
            pickle.dump(answer, answers)
        except Exception as error:  # an exception that does not pickle: said in words
            pickle.dump((False, RuntimeError(f"{type(answer[1]).__name__}: {answer[1]} ({error})")), answers)
        answers.flush()


# What the analysis imports where it first computes (function-local imports, issue 36): ~2 s of the
# first job's first answers when they were imported by the job itself (issue 38's 2 s target).
_STATISTICS_MODULES = (
    "krippendorff",
    "scipy.optimize",
    "scipy.special",
    "scipy.stats",
    "statsmodels.stats.inter_rater",
)


def _child_ready() -> bool:
    """Import the analysis and the statistics it calls in the analysis process (once, before the first
    job needs them)."""
    import importlib

    import annotate.analysis.study_data  # noqa: F401

    for name in _STATISTICS_MODULES:
        importlib.import_module(name)
    return True


def _child_analyse(url: str, study_id: int, settings: AnalysisSettings, condition: str | None) -> dict:
    """In the analysis process: the analysis, read from the database by URL (``study_data.analyse_afresh``)."""
    from annotate.analysis.study_data import analyse_afresh
    from annotate.store.db import make_engine

    engine = _CHILD_ENGINES.get(url)
    if engine is None:
        engine = _CHILD_ENGINES[url] = make_engine(url, pool_size=1)
    return analyse_afresh(engine, study_id, settings, condition, None)


def _separate(engine: Engine) -> bool:
    """Whether this engine's analyses are computed in the analysis process (not for an in-memory SQLite
    database, which no other process can open)."""
    if not settings().analysis_process:
        return False
    url = engine.url
    return not (url.get_backend_name() == "sqlite" and url.database in (None, "", ":memory:"))


def prepare(engine: Engine) -> None:
    """Start the analysis process and import the analysis in it, so that the first look does not wait
    for it (the warmer calls this as it starts: a process of its own, so the serving process imports nothing)."""
    if _separate(engine):
        _WORKER.call(_child_ready)


WAIT_SECONDS = 0.5  # how often a server waiting for another server's computation looks for its result


def _obtain(engine: Engine, key: AnalysisKey, compute, *, waiting=None) -> dict:
    """The analysis ``key`` names: held here or in the database (``analysis_cache.fetch``), else computed
    by ``compute()`` once this server holds the lease on it (``analysis_cache.claim``), and stored for
    every server; while another server holds the lease, its result is waited for (``waiting()`` is
    called each time: the job says so).  A lease that lapses (its server died) is taken over.  While
    another server's lease is live the wait only reads: the lease is tried (a write, which on SQLite
    queues behind the votes) at the first look and again only once that lease has lapsed."""
    attempt = 0
    while True:
        # the lease is read before the result: a lease seen gone means that the server which held it has
        # stored its result already (or died), so a result still not found after it is really not there
        lapsed = attempt > 0 and analysis_cache.lease_lapsed(engine, key)
        found = analysis_cache.fetch(engine, key)
        if found is not None:
            return found
        if attempt == 0 or lapsed:
            if analysis_cache.claim(engine, key):
                with analysis_cache.claimed(engine, key):
                    return analysis_cache.store(engine, key, compute())
            found = analysis_cache.fetch(engine, key)  # stored while this server tried the lease
            if found is not None:
                return found
            if lapsed and analysis_cache.lease_lapsed(engine, key):  # (not a third server's lease, just taken)
                # nobody computes it, yet the database's copy did not load: computed here, stored again
                return analysis_cache.store(engine, key, compute())
        if waiting is not None:
            waiting()
        attempt += 1
        time.sleep(WAIT_SECONDS)


def _analyse(engine: Engine, key: AnalysisKey, job: Job, low: float, high: float) -> dict:
    """One computation of a job: in the analysis process, or here (``_separate``)."""
    if not _separate(engine):
        from annotate.analysis.study_data import analyse_afresh

        _lower_this_thread()
        progress = lambda f, text: job.progress(low + (high - low) * f, text)  # noqa: E731
        return analyse_afresh(engine, key.study_id, key.settings, key.condition, progress)
    url = engine.url.render_as_string(hide_password=False)
    return _WORKER.call(_child_analyse, url, key.study_id, key.settings, key.condition)


def study_analysis(
    engine: Engine,
    user: Annotator,
    study_id: int,
    settings: AnalysisSettings,
    *,
    condition: str | None = None,
    progress: Progress | None = None,
) -> dict:
    """The study's analysis without the excluded annotators (``study_data.analyse_afresh``), computed once
    per study state and settings by all the app servers of the database (admin only; checked on every
    call): held, else computed here and now (``progress(fraction, text)`` between its steps), else
    waited for while another server computes it.  For the exports, the report and the design line; the
    Analysis page looks (:func:`look`) and never waits.

    The result is shared: callers must not change it."""
    from annotate.analysis.study_data import analyse_afresh

    require_admin(user)
    key = analysis_cache.analysis_key(engine, study_id, settings, condition)
    return _obtain(engine, key, lambda: analyse_afresh(engine, study_id, settings, condition, progress))


def _lower_this_thread() -> None:
    """Linux keeps a niceness per thread: the analysis thread of the serving process gets ``NICE``."""
    try:
        tid = threading.get_native_id()
        if os.getpriority(os.PRIO_PROCESS, tid) < NICE:
            os.setpriority(os.PRIO_PROCESS, tid, NICE)
    except (AttributeError, OSError):
        pass


def _run(engine: Engine, job: Job) -> None:
    """A job's work; the result goes to the cache (``analysis_cache.store``), not to the job's future,
    which ``_JOBS`` keeps after it ended (64 ended jobs held 64 results: issue 37's soak)."""
    try:
        first = job.key.first()
        if (
            first != job.key
            and analysis_cache.fetch(engine, first) is None
            and analysis_cache.fetch_newest(engine, job.key) is None
        ):
            # nothing whole to show meanwhile: the first answers first (a small part of the cost)
            job.progress(0.0, "first answers: agreement and r per metric")
            elsewhere = lambda: job.progress(0.0, "first answers: computed by another app server")  # noqa: E731
            _obtain(engine, first, lambda: _analyse(engine, first, job, 0.0, 0.2), waiting=elsewhere)
        job.progress(0.2, "intervals: the bootstraps, the λ calibration, Dawid-Skene")
        elsewhere = lambda: job.progress(0.2, "intervals: computed by another app server")  # noqa: E731
        _obtain(engine, job.key, lambda: _analyse(engine, job.key, job, 0.2, 1.0), waiting=elsewhere)
    except Exception as error:  # shown on the page ("the analysis failed: ..."), never a traceback
        job.error = f"{type(error).__name__}: {error}" if not isinstance(error, ValueError) else str(error)
        log.exception("analysis of study %s failed", job.key.study_id)
        raise


def submit(engine: Engine, key: AnalysisKey, *, now: float | None = None) -> Job:
    """The job computing ``key`` (:func:`annotate.analysis.analysis_cache.analysis_key`): the one under way, or a new one
    (an ended job is not handed back: its result may have left the cache since)."""
    with _LOCK:
        job = _JOBS.get(key)
        if job is not None and job.running:
            return job
        if job is not None and job.error is None and analysis_cache.cached(key) is not None:
            return job  # it ended between the caller's look and now: nothing to compute again
        # A job not yet started for the same study, settings and condition is for inputs that are gone:
        # dropped, so at most one waits (issue 37's soak: an Analysis page open while votes arrived
        # queued one job per new state of the study, 438 in 16 minutes, each to compute a state long gone)
        for older in [k for k, j in _JOBS.items() if k.slot == key.slot and j.future is not None and j.future.cancel()]:
            _JOBS.pop(older)
        job = Job(key)
        _JOBS[key] = job
        _STARTED[key.study] = time.monotonic() if now is None else now
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
    require_admin(user)
    want(engine, study_id)
    key = analysis_cache.analysis_key(engine, study_id, settings, condition)
    found = analysis_cache.fetch(engine, key)
    if found is not None:
        return Look(found, True)
    with _LOCK:
        failed = _JOBS.get(key)
    if failed is not None and failed.error is not None and not failed.running and not retry:
        return _meanwhile(engine, key, error=failed.error)
    job = submit(engine, key)
    deadline = time.monotonic() + wait
    while job.running and time.monotonic() < deadline:  # polled, never a blocking wait on the job's future
        time.sleep(0.05)
    found = analysis_cache.fetch(engine, key)  # it may have ended meanwhile
    if found is not None:
        return Look(found, True)
    return _meanwhile(engine, key, running=job.running, fraction=job.fraction, text=job.text, error=job.error)


def _meanwhile(engine: Engine, key: AnalysisKey, **job) -> Look:
    """What to show while ``key`` is computed: the newest whole analysis of fewer votes, else the first
    answers of the study as it is now, else those of fewer votes, else nothing."""
    older = analysis_cache.fetch_newest(engine, key)
    if older is not None:
        return Look(older, False, **job)
    first = key.first()
    if first == key:  # no resamples asked for: there is nothing cheaper
        return Look(None, False, **job)
    found = analysis_cache.fetch(engine, first)
    if found is not None:
        return Look(found, False, first=True, **job)
    older = analysis_cache.fetch_newest(engine, first)
    return Look(older, False, first=older is not None, **job)


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
POLL_SECONDS = 5.0  # the warmer reads the wanted studies' fingerprints this often (two cheap queries each)
SETTLE_SECONDS = 60.0  # a wanted study is analysed once its inputs were still this long ...


@dataclass
class _Seen:
    inputs: Inputs  # the study's inputs (``analysis_cache.inputs_version``) at the last round
    since: float  # when they were first seen so (monotonic)


def warm_once(engine: Engine, settled: dict[int, _Seen], now: float | None = None) -> int:
    """One round: each open study wanted in the last ``DST_JUDGE_ANALYSIS_WANTED_MINUTES`` (:func:`want`),
    with votes, whose stored settings' analysis is not current and not under way, gets a job once its
    inputs were still for ``SETTLE_SECONDS`` or its last job started ``DST_JUDGE_ANALYSIS_REFRESH_SECONDS``
    ago (``settled``: study -> inputs seen and since when).  Returns the number of jobs started."""
    now = time.monotonic() if now is None else now
    chosen = settings()
    url = engine.url.render_as_string(hide_password=False)
    with _LOCK:
        wanted = [s for (u, s), when in _WANTED.items() if u == url and now - when <= 60 * chosen.analysis_wanted_minutes]
    for study_id in [s for s in settled if s not in wanted]:
        del settled[study_id]
    if not wanted:
        return 0  # nobody looks: nothing read, nothing computed
    from annotate.analysis.study_data import stored_settings

    started = 0
    with read_session(engine) as session:
        studies = session.execute(select(Study.id, Study.settings).where(Study.archived.is_(False), Study.id.in_(wanted))).all()
    for study_id, stored in studies:
        key = analysis_cache.analysis_key(engine, study_id, stored_settings(stored), None)  # what the page opens with
        seen = settled.get(study_id)
        if seen is None or seen.inputs != key.inputs:
            seen = settled[study_id] = _Seen(key.inputs, now)
        if not key.has_votes or analysis_cache.held(engine, key):
            continue
        with _LOCK:
            known = _JOBS.get(key)
            last = _STARTED.get(key.study)
        if known is not None:
            continue  # under way, done (and since evicted: the next look computes it) or failed
        still = now - seen.since >= SETTLE_SECONDS
        due = last is None or now - last >= chosen.analysis_refresh_seconds
        if still or due:
            submit(engine, key, now=now)
            started += 1
    return started


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
        settled: dict[int, _Seen] = {}
        try:
            # the analysis process at once, ready before the first look (~3 s of imports, at its own lower
            # priority: the login form is served meanwhile)
            prepare(engine)
        except Exception:
            log.warning("analysis warmer: the analysis process did not start", exc_info=True)
        time.sleep(POLL_SECONDS)
        while True:
            try:
                warm_once(engine, settled)
            except Exception:  # a database away for a while: try again next round
                log.warning("analysis warmer: this round failed", exc_info=True)
            time.sleep(POLL_SECONDS)

    threading.Thread(target=loop, name="dst-judge-analysis-warmer", daemon=True).start()
    return True
