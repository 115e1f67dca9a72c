"""Who may annotate which study, and the record of changes an admin makes to a study.

Rule: admins may open every study; an annotator may annotate a study that is not archived and
either has no members (open to every annotator, as every study was before membership existed) or
lists them as a member; a crowd worker only the study whose link they joined, while it is open to
the crowd (``annotate.crowd``).  Checked on the server in every annotator action (``annotate.service``).
"""

from __future__ import annotations

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from annotate import crowd
from annotate.assignment import lock_study
from annotate.auth import AuthError, PermissionDenied, StudyClosed, find_annotator
from annotate.store.models import WORKER, Annotator, CrowdWorker, Item, Study, StudyChange, StudyMember, VoteEvent


def members(session: Session, study_id: int) -> list[str]:
    return list(
        session.scalars(
            select(Annotator.name)
            .join(StudyMember, StudyMember.annotator_id == Annotator.id)
            .where(StudyMember.study_id == study_id)
            .order_by(Annotator.name)
        )
    )


def open_studies(session: Session, user: Annotator) -> set[int]:
    """The ids of the studies this person may annotate now."""
    if user.role == WORKER:  # a crowd worker: the one study their join link opened
        return crowd.open_study(session, user)
    studies = session.execute(select(Study.id, Study.archived)).all()
    if user.role == "admin":
        return {sid for sid, archived in studies if not archived}
    with_members = set(session.scalars(select(StudyMember.study_id).distinct()))
    mine = set(session.scalars(select(StudyMember.study_id).where(StudyMember.annotator_id == user.id)))
    return {sid for sid, archived in studies if not archived and (sid not in with_members or sid in mine)}


def require_access(session: Session, user: Annotator, study_id: int) -> None:
    """Refuse a person who may not annotate the study now: ``StudyClosed`` when it was closed (archived,
    its budget spent, or its crowd link closed, for a worker), else ``PermissionDenied``."""
    if user.role == "admin":
        return
    if study_id not in open_studies(session, user):
        archived = session.scalar(select(Study.archived).where(Study.id == study_id))
        row = crowd.worker_row(session, user) if user.role == WORKER else None
        if archived or (row is not None and row.study_id == study_id):
            raise StudyClosed("this study has closed")
        raise PermissionDenied("you are not on this study")


CLI = "cli"  # who made a change from the command line (it has no login)


def record(session: Session, study_id: int, by: Annotator | str, what: str, old, new) -> None:
    session.add(StudyChange(study_id=study_id, by=by if isinstance(by, str) else by.name, what=what, old=str(old), new=str(new)))


def change(session: Session, study: Study, by: Annotator | str, field: str, value) -> None:
    """Set one of the study's own fields (overlap, guideline, archived), recording a real change."""
    old = getattr(study, field)
    if old != value:
        record(session, study.id, by, field, old, value)
    setattr(study, field, value)


def set_members(session: Session, study: Study, names: list[str], by: Annotator | str) -> list[str]:
    """Make exactly ``names`` the members (an empty list opens the study to everybody); recorded."""
    people = []
    for name in dict.fromkeys(n.strip() for n in names if n.strip()):
        person = find_annotator(session, name)
        if person is None:
            raise AuthError(f"no annotator named {name!r}")
        people.append(person)
    before = members(session, study.id)
    session.execute(delete(StudyMember).where(StudyMember.study_id == study.id))
    session.add_all(StudyMember(study_id=study.id, annotator_id=p.id) for p in people)
    after = sorted(p.name for p in people)
    if after != before:
        record(session, study.id, by, "members", ", ".join(before) or "(everybody)", ", ".join(after) or "(everybody)")
    return after


def changes(session: Session, study_id: int) -> list[dict]:
    rows = session.scalars(select(StudyChange).where(StudyChange.study_id == study_id).order_by(StudyChange.id))
    return [{"at": c.at.isoformat(timespec="seconds"), "by": c.by, "what": c.what, "old": c.old, "new": c.new} for c in rows]


def last_vote(session: Session, study_id: int) -> int:
    """The id of the study's newest vote event (0: none)."""
    return int(
        session.scalar(select(func.max(VoteEvent.id)).join(Item, Item.id == VoteEvent.item_id).where(Item.study_id == study_id))
        or 0
    )


def record_export(session: Session, study: Study, by: Annotator | str, what: str, through: int) -> None:
    """The votes of the study up to event ``through`` were exported (downloaded, or written by the CLI):
    recorded, and remembered for :func:`delete_study`.

    The study row is locked (and read again) here, whatever the caller read before: the settings are
    written back whole, so a copy read without the lock would undo an admin's change committed in
    between (issue 23: crowd secrets reverted by exports)."""
    study = lock_study(session, study.id)
    record(session, study.id, by, "export", "", f"{what}, vote events up to #{through}")
    settings = dict(study.settings or {})
    settings["exported_through"] = max(int(settings.get("exported_through", 0)), int(through))
    study.settings = settings


def delete_study(session: Session, study: Study, confirm: str) -> None:
    """Delete the study with its items, votes, adjudications and change log.

    Refused unless ``confirm`` is the study's name, and, while the study has votes, unless every
    vote event was exported first (:func:`record_export`): a delete cannot lose a vote nobody kept.
    """
    study = lock_study(session, study.id)  # its exports read under the lock (see record_export)
    if confirm.strip() != study.name:
        raise ValueError(f"type the study's name ({study.name!r}) to confirm the delete")
    newest = last_vote(session, study.id)
    through = int((study.settings or {}).get("exported_through", 0))
    if newest and not through:
        raise ValueError(f"study {study.name!r} has votes: export the votes first (a votes download in the app, or votes export)")
    if newest > through:
        since = session.scalar(
            select(func.count(VoteEvent.id))
            .join(Item, Item.id == VoteEvent.item_id)
            .where(Item.study_id == study.id, VoteEvent.id > through)
        )
        raise ValueError(f"{since} vote event{'s' if since != 1 else ''} since the last export: export the votes again")
    # The study's crowd workers exist for it alone; the database cascades do the rest (items, votes,
    # places, audio, adjudications, members, the change log).
    session.execute(
        delete(Annotator).where(Annotator.id.in_(select(CrowdWorker.annotator_id).where(CrowdWorker.study_id == study.id)))
    )
    session.execute(delete(Study).where(Study.id == study.id))
    session.expunge(study)
