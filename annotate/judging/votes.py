"""The vote store: append-only vote events; the current vote is the latest event.

``cast_vote`` never updates or deletes an event; changing a vote appends one.  It
refuses a live vote that would give an item more than k holders (see assignment); imported
votes (source ``import``: past judgements, e.g. the FGA study's 11 raters per dialogue) are
taken whatever the overlap, and count as done.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime
from itertools import islice
from types import SimpleNamespace
from typing import NamedTuple

from sqlalchemy import (
    Boolean,
    Column,
    DateTime,
    Float,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    and_,
    bindparam,
    exists,
    false,
    func,
    insert,
    literal,
    null,
    or_,
    select,
    update,
)
from sqlalchemy.orm import Session

from annotate.people.auth import name_problem
from annotate.store.models import (
    DEFAULT_TIMEOUT_MINUTES,
    JUDGE,
    Annotator,
    Assignment,
    CrowdWorker,
    Item,
    Study,
    VoteEvent,
    utcnow,
)
from annotate.store.prepared import Prepared
from annotate.studies import StudyError, check_value, required_questions
from annotate.studies.assignment import (
    ACTIVE,
    DONE,
    JUDGED,
    JUDGING,
    RECLAIMED,
    SKIPPED,
    claim,
    cutoff,
    holding,
    judge_place,
    reclaim_expired_item,
    study_row,
)
from exports.tables import VOTE_COLUMNS as EXPORT_COLUMNS  # one list of the votes columns
from formats.errors import ReaderError, csv_rows
from formats.safety import unneutralise


class CapacityError(StudyError):
    """The item already has its k annotators."""


class Reassigned(CapacityError):
    """The voter held a place on the item, it timed out, and the item went to others meanwhile: the
    answer is refused (never stored on another item); the page says so and shows the next item."""


_MY_PLACE = select(Assignment.id, Assignment.status, Assignment.assigned_at).where(
    Assignment.item_id == bindparam("item"), Assignment.annotator_id == bindparam("annotator")
)
_ITEM_AND_PLACE = (  # the item, and the voter's place on it if any: one read
    select(Item.study_id, Item.key, Item.questions, Item.extra_capacity, Assignment.id, Assignment.status, Assignment.assigned_at)
    .outerjoin(Assignment, and_(Assignment.item_id == Item.id, Assignment.annotator_id == bindparam("annotator")))
    .where(Item.id == bindparam("item"))
)
_ANSWERED = select(VoteEvent.question).where(
    VoteEvent.item_id == bindparam("item"), VoteEvent.annotator_id == bindparam("annotator")
)
_EVENT = insert(VoteEvent).values(
    {
        name: bindparam(name)
        for name in ("item_id", "annotator_id", "question", "value", "comment", "seconds", "source", "created_at")
    }
)
_DONE = update(Assignment).where(Assignment.id == bindparam("assignment")).values(status=DONE, completed_at=bindparam("now"))
_JUDGED = update(Assignment).where(Assignment.id == bindparam("assignment")).values(status=JUDGED, completed_at=bindparam("now"))
_DONE_KEEP = (
    update(Assignment)
    .where(Assignment.id == bindparam("assignment"))
    .values(status=DONE, completed_at=func.coalesce(Assignment.completed_at, bindparam("now")))
)


_MY_PLACE, _ITEM_AND_PLACE, _ANSWERED, _EVENT, _DONE, _JUDGED, _DONE_KEEP = map(
    Prepared, (_MY_PLACE, _ITEM_AND_PLACE, _ANSWERED, _EVENT, _DONE, _JUDGED, _DONE_KEEP)
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
    judge = getattr(annotator, "kind", None) == JUDGE and source != "import"
    if judge:  # an automatic judge: a place of its own, never one of the item's k (annotate.studies.assignment)
        source = "judge"  # an automatic judge's vote (vote_events.source: human | import | judge)
        if place is None or place.status not in (JUDGING, JUDGED):
            judge_place(connection, item.study_id, item_id, annotator.id, now)
            place = _Place(*_MY_PLACE.first(connection, keys))
        holds = True
    else:
        live = place is not None and place.status == ACTIVE and place.assigned_at >= cutoff(study, now)
        holds = place is not None and (place.status == DONE or live)
    if not holds:
        # Places held past the timeout go back first (the voter's own, too), then one is taken.
        reclaim_expired_item(session, study, item_id, now)
        # Overlap governs live assignment only: imported (past) judgements are taken as they are.
        if not claim(session, study, item_id, annotator, now, force=source == "import"):
            taken = connection.execute(select(func.count()).where(Assignment.item_id == item_id, holding(study, now))).scalar()
            # its places: designed k (issue 29), else the overlap; none when the design left it out
            k, included = connection.execute(select(Item.k, Item.included).where(Item.id == item_id)).one()
            if not included:
                raise CapacityError(f"item {item.key} is not judged in this study's design; your answer was not stored")
            if place is not None:  # they had it on their screen: their place timed out and went to others
                minutes = float(study.settings.get("timeout_minutes", DEFAULT_TIMEOUT_MINUTES))
                why = "you had skipped it" if place.status == SKIPPED else f"your place on it timed out after {minutes:g} minutes"
                raise Reassigned(f"Item {item.key} went to another annotator ({why}); your answer was not stored.")
            raise CapacityError(
                f"item {item.key} already has {taken} annotators "
                f"({'overlap' if k is None else 'designed k'} {study.overlap if k is None else k}); an admin can re-open it"
            )
        place = _Place(*_MY_PLACE.first(connection, keys))
    values = dict(
        item_id=item_id,
        annotator_id=annotator.id,
        question=question,
        value=value,
        comment=comment or "",
        seconds=seconds,
        source=source,
        created_at=now,
    )
    event_id = _EVENT.insert(connection, values)
    if source == "import":  # an imported judgement counts as done, whatever it answered
        _DONE_KEEP.run(connection, {"assignment": place.id, "now": now})
    elif place.status not in (DONE, JUDGED):
        required = set(required_questions(study, item))
        if not required - {question} or required <= {question for (question,) in _ANSWERED.rows(connection, keys)}:
            (_JUDGED if judge else _DONE).run(connection, {"assignment": place.id, "now": now})
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
    ``platform_id`` the platform's worker id) and automatic judges (``judge``, issue 28) apart from
    named accounts (``account``)."""
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
            Annotator.kind,
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
            "annotator_kind": "crowd" if platform else ("judge" if kind == JUDGE else "account"),
            "platform": platform or "",
            "platform_id": worker_id or "",
        }
        for key, condition, name, question, value, comment, created, seconds, platform, worker_id, kind in session.execute(query)
    ]


def rows_to_csv(rows: Iterable[dict], columns=EXPORT_COLUMNS) -> str:
    """Vote rows as spreadsheet-safe CSV (the exports package's writer)."""
    from exports.tables import csv_bytes

    return csv_bytes(rows, columns).decode()


# --- Vote import (issue 23): validate first, stage apart, swap in with one short transaction. ---
#
# ``python -m annotate votes import`` used to cast every row with ``cast_vote`` inside one write
# transaction: on SQLite that held the single write lock for the whole file (a 90,000-row file:
# ~100 s, and annotators got "database is locked"); on PostgreSQL it held the row locks of every item
# it touched as long.  Now an import
#   1. reads the study and its items once (a read-only session), then checks the rows as it goes:
#      item by key, question and value, annotator name, seconds; a bad row is a ReaderError naming
#      its line, and nothing shared has been written;
#   2. writes the checked rows into a TEMPORARY table of its own connection, ``IMPORT_BATCH`` rows at
#      a time (memory stays flat whatever the file's length).  A temporary table belongs to that
#      connection alone: writing it takes no lock that anyone else waits for (SQLite keeps it in the
#      connection's own temp database), and it vanishes with the connection, so a killed import leaves
#      nothing behind;
#   3. once every row is checked and staged, swaps them in with one short transaction of a few
#      set-based statements (new annotators, places taken or kept, every item's ``holders``, the vote
#      events in file order).  That transaction is all that others ever wait for (bench/bench_import.py
#      has the figures).
# All or nothing: an error (or a crash) anywhere before that transaction commits leaves the database
# as it was.

IMPORT_BATCH = 5_000  # rows checked, then written to the staging table, per statement

_IMPORT_META = MetaData()
_STAGED = Table(
    "dst_judge_staged_votes",
    _IMPORT_META,
    Column("seq", Integer, primary_key=True),
    Column("item_id", Integer, nullable=False),
    Column("annotator", String(100), nullable=False),
    Column("question", String(300), nullable=False),
    Column("value", Text, nullable=False),
    Column("comment", Text, nullable=False),
    Column("seconds", Float, nullable=True),
    prefixes=["TEMPORARY"],
)
_PAIRS = Table(
    "dst_judge_staged_places",
    _IMPORT_META,
    Column("item_id", Integer, primary_key=True),
    Column("annotator_id", Integer, primary_key=True),
    Column("needs", Boolean, nullable=False),  # the voter holds no place on the item: one is taken
    prefixes=["TEMPORARY"],
)


class _ImportItem(NamedTuple):
    """What checking a row reads of its item (``check_value`` takes it like an Item)."""

    id: int
    key: str
    condition: str
    questions: list


class StagedVote(NamedTuple):
    item_id: int
    annotator: str
    question: str
    value: str
    comment: str
    seconds: float | None


def check_vote_rows(session: Session, study_id: int, path, text: str) -> Iterator[StagedVote]:
    """Every row of a tidy votes CSV checked against the study, in file order; the first bad row
    raises a ReaderError naming its line.  The study and its items are read now (``session`` is not
    used afterwards); the rows are checked as they are drawn, so a file never sits in memory as rows.
    Unknown annotators are fine (the import creates them, without a login)."""
    study = study_row(session, study_id)
    name = session.scalar(select(Study.name).where(Study.id == study_id))
    items: dict[str, list[_ImportItem]] = {}
    for found in session.execute(select(Item.id, Item.key, Item.condition, Item.questions).where(Item.study_id == study_id)):
        items.setdefault(found.key, []).append(_ImportItem(*found))
    rows = csv_rows(path, text, {"item", "annotator", "question", "value"}, "a votes file has item, annotator, question, value")
    judges = set(session.scalars(select(Annotator.name).where(Annotator.kind == JUDGE)))
    return _checked(rows, study, name, items, path, judges)


def _checked(rows, study, name: str, items: dict, path, judges: set[str] = frozenset()) -> Iterator[StagedVote]:
    for line, row in rows:
        key = unneutralise(row["item"] or "")
        condition = unneutralise(row.get("condition") or "")
        matches = items.get(key, [])
        if condition or len(matches) > 1:
            matches = [m for m in matches if m.condition == condition]
        if len(matches) != 1:
            raise ReaderError(path, f"line {line}", f"no single item {key!r} (condition {condition!r}) in study {name!r}")
        annotator = unneutralise(row["annotator"] or "").strip()
        if not annotator:
            raise ReaderError(path, f"line {line}", "empty annotator name")
        if len(annotator) > 100:
            raise ReaderError(path, f"line {line}", "an annotator name has at most 100 characters")
        problem = name_problem(annotator)  # a new name is made from it: no control or bidi character (issue 37)
        if problem:
            raise ReaderError(path, f"line {line}", problem)
        if annotator in judges:  # its places are its own (never one of the k): its votes come through the API
            raise ReaderError(path, f"line {line}", f"{annotator!r} is an automatic judge: its votes come through the HTTP API")
        question, seconds = unneutralise(row["question"] or ""), row.get("seconds")
        try:
            value = check_value(study, matches[0], question, unneutralise(row["value"] or ""))
            seconds = float(seconds) if seconds else None
        except (StudyError, ValueError) as err:
            raise ReaderError(path, f"line {line}", str(err)) from None
        yield StagedVote(matches[0].id, annotator, question, value, unneutralise(row.get("comment") or ""), seconds)


def _batches(votes: Iterator[StagedVote]) -> Iterator[tuple[int, list[StagedVote]]]:
    """``(first row's number, rows)`` of at most ``IMPORT_BATCH`` rows each."""
    start = 0
    while batch := list(islice(votes, IMPORT_BATCH)):
        yield start, batch
        start += len(batch)


def _stage(connection, votes: list[StagedVote], start: int = 0) -> None:
    """One batch into the staging table (made by ``_make_staging``)."""
    if votes:
        connection.execute(insert(_STAGED), [{"seq": start + i, **vote._asdict()} for i, vote in enumerate(votes)])


def _make_staging(connection) -> None:
    for table in (_STAGED, _PAIRS):
        table.drop(connection, checkfirst=True)
        table.create(connection)


def _drop_staging(connection) -> None:
    for table in (_STAGED, _PAIRS):
        table.drop(connection, checkfirst=True)


def _swap_in(connection, study_id: int, now: datetime) -> int:
    """The staged votes stored, in the caller's (write) transaction, as ``cast_vote`` with source
    ``import`` would have stored them one by one: a voter without a place takes one whatever the
    capacity (places held past the timeout on that item go back first), every voter's place ends
    done, and the events keep the file's order.  Set-based: a handful of statements whatever the size."""
    settings = connection.execute(select(Study.settings).where(Study.id == study_id)).scalar()
    if settings is None:
        raise StudyError("the study was deleted during the import")
    limit = cutoff(SimpleNamespace(settings=settings), now)
    people = Annotator.__table__
    connection.execute(
        insert(people).from_select(
            ["name", "role", "password_hash", "created_at"],
            select(_STAGED.c.annotator, literal("annotator"), null(), literal(now, DateTime))
            .where(~exists().where(people.c.name == _STAGED.c.annotator))
            .distinct(),
        )
    )
    connection.execute(
        insert(_PAIRS).from_select(
            ["item_id", "annotator_id", "needs"],
            select(_STAGED.c.item_id, people.c.id, literal(False)).join(people, people.c.name == _STAGED.c.annotator).distinct(),
        )
    )
    # The events first: on PostgreSQL they lock nothing annotators wait for (the foreign key checks
    # share the items' rows), while the items locked below stay locked only for the places part.
    events = VoteEvent.__table__
    connection.execute(
        insert(events).from_select(
            ["item_id", "annotator_id", "question", "value", "comment", "seconds", "source", "created_at"],
            select(
                _STAGED.c.item_id,
                people.c.id,
                _STAGED.c.question,
                _STAGED.c.value,
                _STAGED.c.comment,
                _STAGED.c.seconds,
                literal("import"),
                literal(now, DateTime),
            )
            .join(people, people.c.name == _STAGED.c.annotator)
            .order_by(_STAGED.c.seq),
        )
    )
    touched = select(_PAIRS.c.item_id)
    if connection.dialect.name != "sqlite":  # lock the items first, in id order, as a claim does (SQLite: BEGIN IMMEDIATE)
        connection.execute(select(Item.id).where(Item.id.in_(touched)).order_by(Item.id).with_for_update()).all()
    places = Assignment.__table__
    holds = or_(places.c.status == DONE, and_(places.c.status == ACTIVE, places.c.assigned_at >= limit))
    connection.execute(
        update(_PAIRS)
        .where(~exists().where(places.c.item_id == _PAIRS.c.item_id, places.c.annotator_id == _PAIRS.c.annotator_id, holds))
        .values(needs=True)
    )
    needing = select(_PAIRS.c.item_id).where(_PAIRS.c.needs)
    expired = and_(places.c.status == ACTIVE, places.c.assigned_at < limit)
    items = Item.__table__
    released = select(func.count()).select_from(places).where(places.c.item_id == items.c.id, expired).scalar_subquery()
    taken = select(func.count()).select_from(_PAIRS).where(_PAIRS.c.item_id == items.c.id, _PAIRS.c.needs).scalar_subquery()
    connection.execute(update(items).where(items.c.id.in_(needing)).values(holders=items.c.holders - released + taken))
    connection.execute(update(places).where(places.c.item_id.in_(needing), expired).values(status=RECLAIMED))
    new = select(
        literal(study_id), _PAIRS.c.item_id, _PAIRS.c.annotator_id, literal(DONE), literal(now, DateTime), literal(now, DateTime)
    ).where(_PAIRS.c.needs)
    upsert = _dialect_insert(connection)(places).from_select(
        ["study_id", "item_id", "annotator_id", "status", "assigned_at", "completed_at"], new
    )
    connection.execute(
        upsert.on_conflict_do_update(
            index_elements=["item_id", "annotator_id"],
            set_={"status": DONE, "assigned_at": upsert.excluded.assigned_at, "completed_at": upsert.excluded.completed_at},
        )
    )
    connection.execute(
        update(places)
        .where(
            exists().where(
                _PAIRS.c.item_id == places.c.item_id, _PAIRS.c.annotator_id == places.c.annotator_id, _PAIRS.c.needs == false()
            )
        )
        .values(status=DONE, completed_at=func.coalesce(places.c.completed_at, literal(now, DateTime)))
    )
    return connection.execute(select(func.count()).select_from(_STAGED)).scalar()


def _dialect_insert(connection):
    from sqlalchemy.dialects import postgresql, sqlite

    return (sqlite if connection.dialect.name == "sqlite" else postgresql).insert


def import_votes(session: Session, study: Study, path, text: str) -> int:
    """Tidy CSV (item, annotator, question, value[, comment, condition, seconds]) into the study, in the
    caller's write transaction (small files, tests; ``import_votes_file`` keeps the write lock short).

    Imported votes are past judgements: stored whatever the overlap, counted as done.  The first bad
    row raises a ReaderError naming its line before anything is written.
    """
    votes = check_vote_rows(session, study.id, path, text)
    session.flush()
    connection = session.connection()
    _make_staging(connection)
    for start, batch in _batches(votes):
        _stage(connection, batch, start)
    count = _swap_in(connection, study.id, utcnow())
    _drop_staging(connection)
    return count


def import_votes_file(engine, study_id: int, path, text: str, *, progress=None) -> int:
    """``import_votes`` for a large file, without holding up annotators: checked in a read session,
    staged in a temporary table of a connection of its own (no lock anyone waits for), swapped in
    by one short write transaction (see the comment above ``IMPORT_BATCH``).  All or nothing.

    ``progress(step)`` is called with ``"staged"`` (every row checked and staged) and ``"swapping"`` (inside the last
    transaction, before its COMMIT): tests kill the process there."""
    from annotate.store.db import read_session

    report = progress or (lambda _step: None)
    with read_session(engine) as session:
        votes = check_vote_rows(session, study_id, path, text)
    connection = engine.connect()
    try:
        with connection.begin():
            _make_staging(connection)
        for start, batch in _batches(votes):  # each batch checked, then staged; a bad row ends it all
            with connection.begin():  # the temporary table only: no lock others wait for
                _stage(connection, batch, start)
        report("staged")
        connection.execution_options(sqlite_immediate=True)  # SQLite: BEGIN IMMEDIATE (see annotate.store.db)
        try:
            with connection.begin():
                count = _swap_in(connection, study_id, utcnow())
                report("swapping")
        finally:
            connection.execution_options(sqlite_immediate=False)
        with connection.begin():
            _drop_staging(connection)
    except BaseException:
        connection.invalidate()  # the temporary tables go with the connection
        raise
    finally:
        connection.close()
    return count
