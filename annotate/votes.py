"""The vote store: append-only vote events; the current vote is the latest event.

``cast_vote`` never updates or deletes an event; changing a vote appends one.  It
refuses a live vote that would give an item more than k holders (see assignment); imported
votes (source ``import``: past judgements, e.g. the FGA study's 11 raters per dialogue) are
taken whatever the overlap, and count as done.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import NamedTuple

from sqlalchemy import and_, bindparam, func, insert, select, update
from sqlalchemy.orm import Session

from annotate.assignment import ACTIVE, DONE, SKIPPED, claim, cutoff, holding, reclaim_expired_item, study_row
from annotate.auth import find_annotator
from annotate.models import Annotator, Assignment, CrowdWorker, Item, Study, VoteEvent, utcnow
from annotate.prepared import Prepared
from annotate.studies import StudyError, check_value, required_questions
from exports.tables import VOTE_COLUMNS as EXPORT_COLUMNS  # one list of the votes columns
from formats.errors import ReaderError, csv_rows
from formats.safety import unneutralise


class CapacityError(StudyError):
    """The item already has its k annotators."""


_MY_PLACE = select(Assignment.id, Assignment.status, Assignment.assigned_at).where(
    Assignment.item_id == bindparam("item"), Assignment.annotator_id == bindparam("annotator")
)
_ITEM_AND_PLACE = (  # the item, and the voter's place on it if any: one read
    select(Item.study_id, Item.key, Item.questions, Item.extra_capacity,
           Assignment.id, Assignment.status, Assignment.assigned_at)
    .outerjoin(Assignment, and_(Assignment.item_id == Item.id, Assignment.annotator_id == bindparam("annotator")))
    .where(Item.id == bindparam("item"))
)  # fmt: skip
_ANSWERED = select(VoteEvent.question).where(
    VoteEvent.item_id == bindparam("item"), VoteEvent.annotator_id == bindparam("annotator")
)
_EVENT = insert(VoteEvent).values(
    {name: bindparam(name) for name in
     ("item_id", "annotator_id", "question", "value", "comment", "seconds", "source", "created_at")}
)  # fmt: skip
_DONE = update(Assignment).where(Assignment.id == bindparam("assignment")).values(status=DONE, completed_at=bindparam("now"))
_DONE_KEEP = (
    update(Assignment)
    .where(Assignment.id == bindparam("assignment"))
    .values(status=DONE, completed_at=func.coalesce(Assignment.completed_at, bindparam("now")))
)


_MY_PLACE, _ITEM_AND_PLACE, _ANSWERED, _EVENT, _DONE, _DONE_KEEP = map(
    Prepared, (_MY_PLACE, _ITEM_AND_PLACE, _ANSWERED, _EVENT, _DONE, _DONE_KEEP)
)


class _Place(NamedTuple):
    id: int
    status: str
    assigned_at: datetime


class CastVote(NamedTuple):
    """The vote event just stored (the columns of a ``VoteEvent`` row)."""

    id: int
    item_id: int
    annotator_id: int
    question: str
    value: str
    comment: str
    seconds: float | None
    source: str
    created_at: datetime


class ItemRow(NamedTuple):
    """What a vote reads of its item (``check_value`` takes it like an Item)."""

    id: int
    study_id: int
    key: str
    questions: list
    extra_capacity: int


def cast_vote(
    session: Session,
    annotator: Annotator,
    item_id: int,
    question: str,
    value: str,
    *,
    comment: str = "",
    seconds: float | None = None,
    source: str = "human",
    now: datetime | None = None,
) -> CastVote:
    """Append one vote event (in the caller's write transaction); returns what was stored.

    A handful of prepared statements on the session's connection (issue 16): the item and study read,
    the voter's place, the event inserted, the place marked done when every required question has an
    answer.  A voter without a place takes one by the conditional update of ``claim`` (refused when
    the item is full, unless the vote is imported)."""
    now = now or utcnow()
    session.flush()
    connection = session.connection()
    keys = {"item": item_id, "annotator": annotator.id}
    found = _ITEM_AND_PLACE.first(connection, keys)
    if found is None:
        raise StudyError(f"no item {item_id}")
    item = ItemRow(item_id, *found[:4])
    place = _Place(*found[4:]) if found[4] is not None else None
    study = study_row(session, item.study_id)
    value = check_value(study, item, question, value)
    holds = place is not None and (place.status == DONE or (place.status == ACTIVE and place.assigned_at >= cutoff(study, now)))
    if not holds:
        # Places held past the timeout go back first (the voter's own, too), then one is taken.
        reclaim_expired_item(session, study, item_id, now)
        # Overlap governs live assignment only: imported (past) judgements are taken as they are.
        if not claim(session, study, item_id, annotator, now, force=source == "import"):
            taken = connection.execute(select(func.count()).where(Assignment.item_id == item_id,
                                                                  holding(study, now))).scalar()  # fmt: skip
            raise CapacityError(
                f"item {item.key} already has {taken} annotators (overlap {study.overlap}); an admin can re-open it"
            )
        place = _Place(*_MY_PLACE.first(connection, keys))
    values = dict(item_id=item_id, annotator_id=annotator.id, question=question, value=value, comment=comment or "",
                  seconds=seconds, source=source, created_at=now)  # fmt: skip
    event_id = _EVENT.insert(connection, values)
    if source == "import":  # an imported judgement counts as done, whatever it answered
        _DONE_KEEP.run(connection, {"assignment": place.id, "now": now})
    elif place.status != DONE:
        required = set(required_questions(study, item))
        if not required - {question} or required <= {question for (question,) in _ANSWERED.rows(connection, keys)}:
            _DONE.run(connection, {"assignment": place.id, "now": now})
    return CastVote(event_id, **values)


def cast_votes(session: Session, annotator: Annotator, item_id: int, answers: dict[str, str], **kwargs) -> list[CastVote]:
    """Several questions of one item at once (one judgement)."""
    return [cast_vote(session, annotator, item_id, q, v, **kwargs) for q, v in answers.items()]


def _latest_ids(study_id: int):
    return (
        select(func.max(VoteEvent.id))
        .join(Item, Item.id == VoteEvent.item_id)
        .where(Item.study_id == study_id)
        .group_by(VoteEvent.item_id, VoteEvent.annotator_id, VoteEvent.question)
    )


def vote_rows(session: Session, study_id: int, *, history: bool = False, annotator_id: int | None = None) -> list[dict]:
    """Current votes (or every event with ``history``) as export rows, oldest first.

    ``annotator_kind`` keeps crowd workers (``crowd``: ``annotator`` is ``<platform>:<worker id>``,
    ``platform_id`` the platform's worker id) apart from named accounts (``account``)."""
    query = (
        select(
            Item.key,
            Item.condition,
            Annotator.name,
            VoteEvent.question,
            VoteEvent.value,
            VoteEvent.comment,
            VoteEvent.created_at,
            VoteEvent.seconds,
            CrowdWorker.platform,
            CrowdWorker.worker_id,
        )
        .join(Item, Item.id == VoteEvent.item_id)
        .join(Annotator, Annotator.id == VoteEvent.annotator_id)
        .outerjoin(CrowdWorker, CrowdWorker.annotator_id == Annotator.id)
        .where(Item.study_id == study_id)
        .order_by(VoteEvent.id)
    )
    if not history:
        query = query.where(VoteEvent.id.in_(_latest_ids(study_id)))
    if annotator_id is not None:
        query = query.where(VoteEvent.annotator_id == annotator_id)
    return [
        {
            "item": key,
            "condition": condition,
            "annotator": f"{platform}:{worker_id}" if platform else name,  # a crowd worker: apart from accounts
            "question": question,
            "value": value,
            "comment": comment,
            "created_at": created.isoformat(timespec="microseconds"),
            "seconds": seconds,
            "annotator_kind": "crowd" if platform else "account",
            "platform": platform or "",
            "platform_id": worker_id or "",
        }
        for key, condition, name, question, value, comment, created, seconds, platform, worker_id in session.execute(query)
    ]


def current_answers(session: Session, annotator: Annotator, item_id: int) -> dict[str, VoteEvent]:
    """This annotator's current vote per question on one item."""
    events = session.scalars(
        select(VoteEvent).where(VoteEvent.item_id == item_id, VoteEvent.annotator_id == annotator.id).order_by(VoteEvent.id)
    )
    return {event.question: event for event in events}


def skipped_items(session: Session, study_id: int, annotator: Annotator) -> list[Item]:
    """Items this annotator skipped and has not judged since, oldest skip first."""
    return list(
        session.scalars(
            select(Item).join(Assignment, Assignment.item_id == Item.id)
            .where(Assignment.study_id == study_id, Assignment.annotator_id == annotator.id, Assignment.status == SKIPPED)
            .order_by(Assignment.assigned_at, Item.id)
        )
    )  # fmt: skip


def judged_items(session: Session, study_id: int, annotator: Annotator) -> list[Item]:
    """Items this annotator has voted on, most recent first (for going back)."""
    last = (
        select(VoteEvent.item_id, func.max(VoteEvent.id).label("last"))
        .join(Item, Item.id == VoteEvent.item_id)
        .where(Item.study_id == study_id, VoteEvent.annotator_id == annotator.id)
        .group_by(VoteEvent.item_id)
        .subquery()
    )
    return list(session.scalars(select(Item).join(last, last.c.item_id == Item.id).order_by(last.c.last.desc())))


def rows_to_csv(rows: Iterable[dict], columns=EXPORT_COLUMNS) -> str:
    """Vote rows as spreadsheet-safe CSV (the exports package's writer)."""
    from exports.tables import csv_bytes

    return csv_bytes(rows, columns).decode()


class _ImportRows:
    """What a votes file's rows refer to: the study's items by key, and annotators by name (unknown
    annotators are created without a login)."""

    def __init__(self, session: Session, study: Study, path):
        self.session, self.study, self.path = session, study, path
        self.items: dict[str, list[Item]] = {}
        for item in session.scalars(select(Item).where(Item.study_id == study.id)):
            self.items.setdefault(item.key, []).append(item)
        self.annotators: dict[str, Annotator] = {}

    def item(self, line: int, row: dict) -> Item:
        key = unneutralise(row["item"] or "")
        condition = unneutralise(row.get("condition") or "")
        matches = self.items.get(key, [])
        if condition or len(matches) > 1:
            matches = [m for m in matches if m.condition == condition]
        if len(matches) != 1:
            raise ReaderError(
                self.path, f"line {line}", f"no single item {key!r} (condition {condition!r}) in study {self.study.name!r}"
            )
        return matches[0]

    def annotator(self, line: int, row: dict) -> Annotator:
        name = unneutralise(row["annotator"] or "").strip()
        if not name:
            raise ReaderError(self.path, f"line {line}", "empty annotator name")
        if name not in self.annotators:
            annotator = find_annotator(self.session, name)
            if annotator is None:
                annotator = Annotator(name=name, role="annotator", password_hash=None)
                self.session.add(annotator)
                self.session.flush()
            self.annotators[name] = annotator
        return self.annotators[name]


def import_votes(session: Session, study: Study, path, text: str) -> int:
    """Tidy CSV (item, annotator, question, value[, comment, condition, seconds]) into the study.

    Imported votes are past judgements: stored whatever the overlap, counted as done (``cast_vote``
    with source ``import``).  One transaction: the first bad row raises a ReaderError naming its
    line, and the caller rolls everything back.
    """
    rows = csv_rows(path, text, {"item", "annotator", "question", "value"}, "a votes file has item, annotator, question, value")
    refer = _ImportRows(session, study, path)
    count = 0
    for line, row in rows:
        item, annotator = refer.item(line, row), refer.annotator(line, row)
        seconds = row.get("seconds")
        try:
            cast_vote(
                session, annotator, item.id, unneutralise(row["question"] or ""), unneutralise(row["value"] or ""),
                comment=unneutralise(row.get("comment") or ""), seconds=float(seconds) if seconds else None, source="import",
            )  # fmt: skip
        except (StudyError, ValueError) as err:
            raise ReaderError(path, f"line {line}", str(err)) from None
        count += 1
    return count
