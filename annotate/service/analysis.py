"""What the Analysis and Progress pages read, through the door: the analysis (``annotate.analysis.analysis_jobs``:
computed once per study state and settings, in the background, kept in ``annotate.analysis.analysis_cache``),
progress and allocation status, the annotators left out of the analysis (recorded, reversible),
annotator quality, adjudication and automatic judges.

The analysis stack is imported by the functions that run it (``annotate.analysis.reports``, ``annotate.analysis.study_data``):
``start_background_analysis`` is on the login path, which stays light (issue 36).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from sqlalchemy import Engine, select

from annotate import studies
from annotate.analysis import analysis_jobs
from annotate.judging import votes
from annotate.kinds import KINDS
from annotate.people.auth import require_admin
from annotate.service.studies import study_settings
from annotate.store.db import read_session, write_session
from annotate.store.models import Adjudication, AnalysisExclusion, Annotator, Item, Study
from annotate.studies import StudyError, allocation, assignment, crowd

if TYPE_CHECKING:
    from annotate.analysis import reports
    from annotate.analysis.study_data import Exclusion
    from metrics.analysis import AnalysisSettings


def allocation_status(engine: Engine, user: Annotator, study_id: int, *, progress=None) -> reports.AllocationStatus:
    """The design, judgements spent, the main question's current interval and width, the judgements
    projected to reach the target; a study whose target width is reached is closed here (archived;
    ``closed_now`` says so).

    The interval is the Analysis page's own: the same analysis (``analysis_jobs.study_analysis``),
    with the study's stored settings and the system (condition) the page opens with; ``progress`` as
    there (called only when it is computed)."""
    from annotate.analysis import reports

    require_admin(user)
    with read_session(engine) as session:
        kind = session.get(Study, study_id).kind
    analysis = None
    if KINDS[kind].rates_metrics:  # a main question to estimate (annotate.analysis.reports)
        conditions = study_conditions(engine, user, study_id)
        condition = conditions[0] if len(conditions) > 1 else None  # as the Analysis page's System box
        analysis = analysis_jobs.study_analysis(
            engine, user, study_id, study_settings(engine, user, study_id), condition=condition, progress=progress
        )
    with read_session(engine) as session:
        report = reports.allocation_status(session, session.get(Study, study_id), analysis)
    if report.reached:
        with write_session(engine) as session:
            study = assignment.lock_study(session, study_id)
            closed_now = allocation.close_when_reached(session, study, report.reached, report.target_width)
        report = replace(report, closed=report.closed or closed_now, closed_now=closed_now)
    return report


def _voter(session, study_id: int, name: str) -> Annotator:
    """The annotator ``name`` names in a study (an account's name, or a crowd worker's
    ``<platform>:<worker id>``, as the exports show them); an unknown one is a StudyError."""
    shown = crowd.display_names(session, study_id)
    internal = {v: k for k, v in shown.items()}.get(name, name)
    found = session.scalar(select(Annotator).where(Annotator.name == internal))
    if found is None:
        raise StudyError(f"no annotator named {name!r}")
    return found


def _set_excluded(engine: Engine, user: Annotator, study_id: int, name: str, excluded: bool, reason: str) -> bool:
    from annotate.analysis.study_data import exclusions

    require_admin(user)
    with write_session(engine) as session:
        study = assignment.lock_study(session, study_id)
        annotator = _voter(session, study_id, name)
        name = crowd.display_names(session, study_id).get(annotator.name, annotator.name)  # as exclusions name them
        now = {e.annotator for e in exclusions(session, study_id)}
        if (name in now) == excluded:
            return False
        session.add(
            AnalysisExclusion(study_id=study.id, annotator_id=annotator.id, excluded=excluded, by=user.name, reason=reason)
        )
        if excluded:
            studies.record(session, study_id, user, "excluded from analysis", "", f"{name}: {reason}" if reason else name)
        else:
            studies.record(session, study_id, user, "included in analysis", name, f"{name}: {reason}" if reason else name)
        return True


def exclude_annotator(engine: Engine, user: Annotator, study_id: int, name: str, reason: str = "") -> bool:
    """Leave an annotator's votes out of the study's analysis (agreement, majority and model labels,
    correlations, λ, the analysis exports and the report, which say so); their votes stay in the store
    and in the votes exports.  Recorded (who, when, why) here and in the study's change log; undone by
    :func:`include_annotator`.  Idempotent: True when this call changed the state."""
    return _set_excluded(engine, user, study_id, name, True, reason.strip())


def include_annotator(engine: Engine, user: Annotator, study_id: int, name: str, reason: str = "") -> bool:
    """Take an excluded annotator back into the study's analysis; recorded like the exclusion.
    True when this call changed the state."""
    return _set_excluded(engine, user, study_id, name, False, reason.strip())


def analysis_exclusions(engine: Engine, user: Annotator, study_id: int) -> list[Exclusion]:
    """The annotators left out of the study's analysis now: who, by whom, when, why."""
    from annotate.analysis.study_data import exclusions

    require_admin(user)
    with read_session(engine) as session:
        return exclusions(session, study_id)


def annotator_quality(engine: Engine, user: Annotator, study_id: int) -> list[reports.AnnotatorQuality]:
    """Each voter's Dawid-Skene competence and spammer flag (``reports.annotator_quality``), for the
    Progress page; the excluded annotators are listed too (``excluded``)."""
    from annotate.analysis import reports

    require_admin(user)
    return reports.annotator_quality(engine, study_id)


def study_conditions(engine: Engine, user: Annotator, study_id: int) -> list[str]:
    """The conditions (systems, variants) of a study's items, in item order."""
    from annotate.analysis.study_data import study_conditions as conditions_of

    return conditions_of(engine, user, study_id)


def study_analysis(
    engine: Engine,
    user: Annotator,
    study_id: int,
    settings: AnalysisSettings,
    *,
    condition: str | None = None,
    progress=None,
) -> dict:
    """Everything the Analysis page shows (``analysis_jobs.study_analysis``: one
    computation per study state and settings); ``progress(fraction, text)`` is called between steps
    when it is computed.  The result is shared: callers must not change it.  The study is wanted: the
    background keeps its analysis current for a while (``analysis_jobs.want``, issue 38)."""
    found = analysis_jobs.study_analysis(engine, user, study_id, settings, condition=condition, progress=progress)
    analysis_jobs.want(engine, study_id)
    return found


def analysis_look(
    engine: Engine,
    user: Annotator,
    study_id: int,
    settings: AnalysisSettings,
    *,
    condition: str | None = None,
    retry: bool = False,
    wait: float = 0.0,
):
    """What the Analysis page can show at once (``annotate.analysis.analysis_jobs.look``): the current analysis,
    or the newest one of fewer votes while the current one is computed in the background."""
    return analysis_jobs.look(engine, user, study_id, settings, condition=condition, retry=retry, wait=wait)


def start_background_analysis(engine: Engine) -> bool:
    """Compute each open study's analysis in the background as votes arrive (``analysis_jobs.start_warmer``)."""
    return analysis_jobs.start_warmer(engine)


def judge_study(
    engine: Engine, user: Annotator, study_id: int, file_name: str, data: bytes, question: str | None = None, seed: int = 0
) -> dict:
    """An uploaded file of automatic judges' labels against the study's human majority
    (``study_data.judge_study``); the judges are never stored as votes."""
    from annotate.analysis.study_data import judge_study as judged

    return judged(engine, user, study_id, file_name, data, question, seed=seed)


def adjudicate(
    engine: Engine, user: Annotator, study_id: int, key: str, condition: str, question: str, value: str, note: str = ""
) -> None:
    """An adjudicator's (admin's) final label for an item's question: its own event, apart from the votes."""
    require_admin(user)
    with write_session(engine) as session:
        study = session.get(Study, study_id)
        item = session.scalar(select(Item).where(Item.study_id == study_id, Item.key == key, Item.condition == condition))
        if item is None:
            raise StudyError(f"no item {key!r} (condition {condition!r}) in study {study.name!r}")
        session.add(
            Adjudication(
                item_id=item.id,
                question=question,
                value=studies.check_value(study, item, question, value),
                by=user.name,
                note=note,
            )
        )


def item_votes(engine: Engine, user: Annotator, study_id: int, key: str, condition: str) -> list[dict]:
    """Drill-down: every vote event on an item, with its annotator, time, time spent and comment: the
    rows of ``votes.vote_rows`` (the votes export's columns, a table on the page) with ``current``."""
    require_admin(user)
    with read_session(engine) as session:
        rows = [
            row
            for row in votes.vote_rows(session, study_id, history=True)
            if row["item"] == key and (row["condition"] or "") == condition
        ]
    # "current": the annotator's latest answer to the question (what the analysis counts); the
    # earlier events it superseded are kept and listed, marked False (issue 24).
    latest = {(r["annotator_kind"], r["annotator"], r["question"]): i for i, r in enumerate(rows)}
    return [{**r, "current": latest[(r["annotator_kind"], r["annotator"], r["question"])] == i} for i, r in enumerate(rows)]


def study_progress(engine: Engine, user: Annotator, study_id: int) -> reports.StudyProgress:
    from annotate.analysis import reports

    require_admin(user)
    with read_session(engine) as session:
        return reports.progress(session, study_id)
