"""A study's frozen analysis plan in the store: frozen before the first vote (kept in the study's
settings, ``settings["plan"]``, and recorded in its change log), and the analysis-settings changes logged
after the first vote.  What the plan is and how a study departs from it is ``exports.analysis_plan``
(pure data); this module only reads and writes the store."""

from __future__ import annotations

from datetime import datetime, timezone

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from annotate.analysis.study_data import stored_settings
from annotate.store.models import Annotator, Item, Study, StudyChange, VoteEvent
from annotate.studies import StudyError, record
from annotate.studies.assignment import lock_study
from exports import analysis_plan
from exports.analysis_plan import AnalysisPlan
from metrics import __version__


def vote_count(session: Session, study_id: int) -> int:
    return int(
        session.scalar(select(func.count(VoteEvent.id)).join(Item, Item.id == VoteEvent.item_id).where(Item.study_id == study_id))
        or 0
    )


def late_settings_changes(session: Session, study_id: int) -> list[dict[str, str]]:
    """The study's analysis-settings changes logged at or after its first vote, oldest first (``at``,
    ``by``, ``old``, ``new``; ``at`` ISO UTC to the second)."""
    first = session.scalar(
        select(func.min(VoteEvent.created_at)).join(Item, Item.id == VoteEvent.item_id).where(Item.study_id == study_id)
    )
    if first is None:
        return []
    rows = session.scalars(
        select(StudyChange)
        .where(StudyChange.study_id == study_id, StudyChange.what == analysis_plan.SETTINGS_CHANGE, StudyChange.at >= first)
        .order_by(StudyChange.id)
    )
    return [{"at": c.at.isoformat(timespec="seconds"), "by": c.by, "old": c.old, "new": c.new} for c in rows]


def plan_of(session: Session, study: Study) -> AnalysisPlan:
    """Where the study stands against its plan (the settings in use: ``study_data.stored_settings``)."""
    current = stored_settings(study.settings).to_dict()
    return analysis_plan.plan_status(
        study.settings, current, late_settings_changes(session, study.id), vote_count(session, study.id)
    )


def freeze(session: Session, study_id: int, by: Annotator | str) -> AnalysisPlan:
    """Freeze the study's analysis settings as its plan: refused once the study has a vote, or when the
    plan is frozen already; recorded in the change log."""
    study = lock_study(session, study_id)
    existing = analysis_plan.stored_plan(study.settings)
    if existing is not None:
        raise StudyError(
            f"the analysis plan of {study.name!r} is already frozen (at {existing['frozen_at']} by {existing.get('frozen_by')}); "
            "nothing changed"
        )
    votes = vote_count(session, study.id)
    if votes:
        raise StudyError(f"the plan can be frozen only before the first vote; {votes} vote{'s' if votes != 1 else ''} exist")
    name = by if isinstance(by, str) else by.name
    frozen_at = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    plan = analysis_plan.new_plan(stored_settings(study.settings).to_dict(), frozen_at, name, __version__)
    study.settings = {**(study.settings or {}), analysis_plan.PLAN_KEY: plan}
    record(
        session, study.id, name, analysis_plan.PLAN_CHANGE, "not frozen", f"frozen, settings SHA-256 {plan['settings_sha256']}"
    )
    return plan_of(session, study)
