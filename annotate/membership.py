"""Who may annotate which study, and the record of changes an admin makes to a study.

Rule: admins may open every study; an annotator may annotate a study that is not archived and
either has no members (open to every annotator, as every study was before membership existed) or
lists them as a member.  Checked on the server in every annotator action (``annotate.service``).
"""

from __future__ import annotations

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from annotate.auth import AuthError, PermissionDenied, find_annotator
from annotate.models import Annotator, Study, StudyChange, StudyMember


def members(session: Session, study_id: int) -> list[str]:
    return list(
        session.scalars(
            select(Annotator.name).join(StudyMember, StudyMember.annotator_id == Annotator.id)
            .where(StudyMember.study_id == study_id).order_by(Annotator.name)
        )
    )  # fmt: skip


def open_studies(session: Session, user: Annotator) -> set[int]:
    """The ids of the studies this person may annotate now."""
    studies = session.execute(select(Study.id, Study.archived)).all()
    if user.role == "admin":
        return {sid for sid, archived in studies if not archived}
    with_members = set(session.scalars(select(StudyMember.study_id).distinct()))
    mine = set(session.scalars(select(StudyMember.study_id).where(StudyMember.annotator_id == user.id)))
    return {sid for sid, archived in studies if not archived and (sid not in with_members or sid in mine)}


def require_access(session: Session, user: Annotator, study_id: int) -> None:
    if user.role == "admin":
        return
    if study_id not in open_studies(session, user):
        raise PermissionDenied("you are not on this study")


def record(session: Session, study_id: int, by: Annotator, what: str, old, new) -> None:
    session.add(StudyChange(study_id=study_id, by=by.name, what=what, old=str(old), new=str(new)))


def change(session: Session, study: Study, by: Annotator, field: str, value) -> None:
    """Set one of the study's own fields (overlap, guideline, archived), recording a real change."""
    old = getattr(study, field)
    if old != value:
        record(session, study.id, by, field, old, value)
    setattr(study, field, value)


def set_members(session: Session, study: Study, names: list[str], by: Annotator) -> list[str]:
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
