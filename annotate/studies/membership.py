"""Who may annotate which study: access rules only (a study's change log, exports and deletion are
``annotate.studies``'s).

Rule: admins may open every study; an annotator may annotate a study that is not archived and
either has no members (open to every annotator, as every study was before membership existed) or
lists them as a member; a crowd worker only the study whose link they joined, while it is open to
the crowd (``annotate.studies.crowd``).  Checked on the server in every annotator action (``annotate.service``).
"""

from __future__ import annotations

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from annotate.people.auth import AuthError, PermissionDenied, StudyClosed, find_annotator
from annotate.store.models import WORKER, Annotator, Study, StudyMember
from annotate.studies import crowd, record


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
