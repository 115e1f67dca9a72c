"""Who judges what next: choosing, claiming and releasing places on items.

Each item goes to k distinct annotators (+ what an admin re-opened): its designed k (``items.k``, a
designed study: issue 29), else the study's ``overlap``; every capacity is :func:`capacity`.
``claim_next`` picks, among items the annotator has not had and that still have room:
least-annotated first; then the condition this annotator has seen least (conditions
balanced); then a per-annotator shuffled order that is seeded and reproducible
(sha256 of study seed, annotator name, item key and condition: ``_ranks``), among the ``WINDOW``
least-held open items of each condition (ties in the count broken by the item's position).  An
assignment left active past the study's timeout is reclaimed: its place goes to someone else.  An
item never gets more than its k (+ extra) holders (annotators who finished it or hold it unexpired).

An automatic judge (``annotators.kind = judge``, issue 28) is given every item of the study once, in
the study's order, on places of its own (status ``judging`` then ``judged``): they never take one of
an item's k places, never count in ``holders``, in a study's progress or in its budget, never time
out, and every query above that counts places (``active``/``done``) passes them over by their status.

What the places add up to (a study's progress) is ``annotate.analysis.reports``'s.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timedelta
from typing import NamedTuple

from sqlalchemy import Text, and_, bindparam, func, or_, select, true, type_coerce, update
from sqlalchemy.orm import Session

from annotate.store.models import DEFAULT_TIMEOUT_MINUTES, JUDGE, Annotator, Assignment, Item, Study, utcnow
from annotate.store.prepared import Prepared

ACTIVE, DONE, SKIPPED, RECLAIMED = "active", "done", "skipped", "reclaimed"
JUDGING, JUDGED = "judging", "judged"  # an automatic judge's place: held, then judged (never one of the k)


def cutoff(study: Study, now: datetime) -> datetime:
    return now - timedelta(minutes=float(study.settings.get("timeout_minutes", DEFAULT_TIMEOUT_MINUTES)))


def holding(study: Study, now: datetime):
    """SQL condition: an assignment that takes one of an item's k places."""
    return or_(Assignment.status == DONE, and_(Assignment.status == ACTIVE, Assignment.assigned_at >= cutoff(study, now)))


_RANKS: dict[tuple, dict[tuple[str, str], bytes]] = {}  # (seed, annotator) -> (key, condition) -> digest
_RANKS_KEPT = 200_000  # digests remembered in all (some tens of MB); past that the memory starts again


def _ranks(study, annotator: Annotator, rows) -> dict[tuple[str, str], bytes]:
    """The shuffled rank of every (key, condition) in ``rows`` (``(id, key, condition, ...)``): the
    sha256 digest of ``seed \x1f annotator \x1f key \x1f condition``, in a dict that also holds those
    ranked before for this annotator: the least-held window an annotator is offered moves slowly, so
    most of it was ranked last time."""
    seed = study.settings.get("seed", 0)
    if sum(map(len, list(_RANKS.values()))) > _RANKS_KEPT:
        _RANKS.clear()
    known = _RANKS.setdefault((seed, annotator.name), {})
    prefix = None
    for row in rows:
        if (row[1], row[2]) not in known:
            if prefix is None:  # the study's and annotator's part hashed once
                prefix = hashlib.sha256(f"{seed}\x1f{annotator.name}\x1f".encode())
            digest = prefix.copy()
            digest.update(f"{row[1]}\x1f{row[2]}".encode())
            known[(row[1], row[2])] = digest.digest()
    return known


def lock_study(session: Session, study_id: int) -> Study:
    """The study row, locked for this transaction on PostgreSQL (SQLite: BEGIN IMMEDIATE does it), and
    read afresh: a Study this session loaded before the lock keeps its old attributes otherwise (the
    identity map), and writing its ``settings`` back would undo a change committed in between."""
    return session.scalars(
        select(Study).where(Study.id == study_id).with_for_update().execution_options(populate_existing=True)
    ).one()


def lock_item(session: Session, item_id: int) -> Item:
    return session.scalars(select(Item).where(Item.id == item_id).with_for_update()).one()


WINDOW = 64  # candidates fetched per condition, least held first; ranked in Python


def _release_rows(session: Session, condition) -> int:
    """Turn the ACTIVE assignments matching ``condition`` into RECLAIMED and give their places back to
    the items' ``holders`` counters; the items are locked first, in id order (no deadlock with a claim,
    which locks its item first too).  Returns how many places were given back."""
    rows = session.execute(select(Assignment.item_id).where(Assignment.status == ACTIVE, *condition)).scalars().all()
    if not rows:
        return 0
    per_item: dict[int, int] = {}
    for item_id in rows:
        per_item[item_id] = per_item.get(item_id, 0) + 1
    session.execute(select(Item.id).where(Item.id.in_(sorted(per_item))).order_by(Item.id).with_for_update()).all()
    session.execute(update(Assignment).where(Assignment.status == ACTIVE, *condition).values(status=RECLAIMED))
    for item_id, count in per_item.items():
        session.execute(update(Item).where(Item.id == item_id).values(holders=Item.holders - count))
    return len(rows)


def reclaim_expired(session: Session, study: Study, now: datetime) -> int:
    """Places held past the study's timeout go back (an indexed query: usually it finds nothing)."""
    return _release_rows(session, (Assignment.study_id == study.id, Assignment.assigned_at < cutoff(study, now)))


def capacity(overlap):
    """SQL: an item's places, ``coalesce(k, overlap) + extra_capacity`` (``k``: its designed votes,
    issue 29; None: the study's ``overlap``, a bound parameter or a column)."""
    return func.coalesce(Item.k, overlap) + Item.extra_capacity


# The judgement path runs prepared Core statements on the session's connection: it is what every
# annotator waits for, and on SQLite what holds the single write lock (issue 16).  Built once here,
# compiled once by SQLAlchemy's cache; ``bindparam`` names are the parameters.
# The study's JSON read as stored (text on SQLite), decoded only when it changed (``study_row``).
_STUDY = select(Study.overlap, type_coerce(Study.settings, Text), type_coerce(Study.questions, Text)).where(
    Study.id == bindparam("study")
)
_CURRENT = (
    select(Assignment.item_id, Assignment.assigned_at)
    .where(
        Assignment.study_id == bindparam("study"), Assignment.annotator_id == bindparam("annotator"), Assignment.status == ACTIVE
    )
    .order_by(Assignment.assigned_at)
)
_EXPIRED_ANY = (
    select(Assignment.id)
    .where(Assignment.study_id == bindparam("study"), Assignment.status == ACTIVE, Assignment.assigned_at < bindparam("cutoff"))
    .limit(1)
)
_MINE = select(Assignment.item_id).where(
    Assignment.study_id == bindparam("study"), Assignment.annotator_id == bindparam("annotator"), Assignment.status != RECLAIMED
)
_SEEN = (
    select(Item.condition, func.count())
    .join(Assignment, Assignment.item_id == Item.id)
    .where(
        Assignment.study_id == bindparam("study"),
        Assignment.annotator_id == bindparam("annotator"),
        Assignment.status != RECLAIMED,
    )
    .group_by(Item.condition)
)
_CANDIDATES = (
    select(Item.id, Item.key, Item.condition, Item.holders)
    .where(
        Item.study_id == bindparam("study"),
        Item.condition == bindparam("condition"),
        Item.included == true(),
        Item.holders < capacity(bindparam("overlap")),
        Item.id.not_in(_MINE),
    )
    .order_by(Item.holders, Item.position)
    .limit(WINDOW)
)
_SKIPPED = (
    select(Item.id, Item.key, Assignment.assigned_at)
    .join(Assignment, Assignment.item_id == Item.id)
    .where(
        Assignment.study_id == bindparam("study"),
        Assignment.annotator_id == bindparam("annotator"),
        Assignment.status == SKIPPED,
        Item.holders < capacity(bindparam("overlap")),
    )
    .order_by(Assignment.assigned_at, Item.id)
)
# the item given last, of those not given back (released on a logout or a switch, timed out): the last one
# judged, skipped or held, whatever was given back since (issue 38: the CoCo rule across a new login)
_LAST_KEY = (
    select(Item.key)
    .join(Assignment, Assignment.item_id == Item.id)
    .where(
        Assignment.study_id == bindparam("study"),
        Assignment.annotator_id == bindparam("annotator"),
        Assignment.status != RECLAIMED,
    )
    .order_by(Assignment.assigned_at.desc(), Assignment.id.desc())
    .limit(1)
)
# a place is taken only on an item the design judges (a draw may leave out an item someone held or can
# name: an admin's vote, a place reclaimed when the design was fixed)
_OPEN_ITEM = select(Item.id).where(
    Item.id == bindparam("item"), Item.included == true(), Item.holders < capacity(bindparam("overlap"))
)
_OPEN_ITEM_SKIP, _OPEN_ITEM_WAIT = _OPEN_ITEM.with_for_update(skip_locked=True), _OPEN_ITEM.with_for_update()
_TAKE_PLACE = (
    update(Item)
    .where(Item.id == bindparam("item"), Item.included == true(), Item.holders < capacity(bindparam("overlap")))
    .values(holders=Item.holders + 1)
)
_ADD_PLACE = update(Item).where(Item.id == bindparam("item")).values(holders=Item.holders + 1)


def _upsert_place(dialect: str):
    """INSERT the annotator's assignment row, or make their old (skipped/reclaimed) row active again."""
    from sqlalchemy.dialects import postgresql, sqlite

    insert_ = (sqlite if dialect == "sqlite" else postgresql).insert
    statement = insert_(Assignment).values(
        study_id=bindparam("study"),
        item_id=bindparam("item"),
        annotator_id=bindparam("annotator"),
        status=ACTIVE,
        assigned_at=bindparam("now"),
    )
    return statement.on_conflict_do_update(
        index_elements=["item_id", "annotator_id"],
        set_={"status": ACTIVE, "assigned_at": statement.excluded.assigned_at, "completed_at": None},
    )


_HOLD = {"sqlite": Prepared(_upsert_place("sqlite")), "postgresql": Prepared(_upsert_place("postgresql"))}
_STUDY, _CURRENT, _EXPIRED_ANY, _SEEN, _CANDIDATES, _SKIPPED, _LAST_KEY, _TAKE_PLACE, _ADD_PLACE = map(
    Prepared, (_STUDY, _CURRENT, _EXPIRED_ANY, _SEEN, _CANDIDATES, _SKIPPED, _LAST_KEY, _TAKE_PLACE, _ADD_PLACE)
)


class StudyRow(NamedTuple):
    """What choosing and voting read of a study (``cutoff`` and ``check_value`` take it like a Study)."""

    id: int
    overlap: int
    settings: dict
    questions: list


_DECODED: dict[int, tuple[tuple, StudyRow]] = {}  # study id -> (the row as stored, decoded)


def study_row(session: Session, study_id: int) -> StudyRow:
    """The study's overlap, settings and questions, read once per transaction (the session).  The
    row is read every time; its JSON is decoded again only when the stored text differs from what
    was decoded last (any process may have changed it).  Treat the result as read-only: it is
    shared."""
    cache = session.info.setdefault("study_rows", {})
    if study_id not in cache:
        stored = _STUDY.first(session.connection(), {"study": study_id})
        known = _DECODED.get(study_id)
        if known is None or known[0] != stored:
            overlap, settings, questions = (_json(value) for value in stored)
            known = _DECODED[study_id] = (stored, StudyRow(study_id, overlap, settings or {}, questions or []))
        cache[study_id] = known[1]
    return cache[study_id]


def _json(value):
    """A value of ``_STUDY``'s row: JSON text decoded (SQLite); already decoded (PostgreSQL's driver)."""
    return json.loads(value) if isinstance(value, str) else value


def reclaim_expired_item(session: Session, study, item_id: int, now: datetime) -> int:
    """Places on one item held past the study's timeout go back."""
    return _release_rows(session, (Assignment.item_id == item_id, Assignment.assigned_at < cutoff(study, now)))


def claim_next(session: Session, study_id: int, annotator: Annotator, now: datetime | None = None) -> int | None:
    """The id of the item this annotator should judge next, claimed for them; None when done.

    Cost does not grow with the study: each item keeps ``holders`` (places taken: done or held), kept by
    the transactions that change them, so the choice reads a few least-held open items per condition
    through the index (study, condition, holders) instead of every item and assignment.  A place is
    taken by one conditional update (``holders = holders + 1 WHERE holders < coalesce(k, overlap) +
    extra``), so
    the counter can never pass the item's capacity.  No study-wide lock: on PostgreSQL each candidate
    is first taken ``FOR UPDATE SKIP LOCKED``, so two annotators claim different items at once (one
    being claimed is passed over, and waited for only when nothing else is left).  The whole choice is
    a handful of prepared statements.  The annotator's page reads the claimed item (its dialogue, one
    indexed row) in the same write transaction, to return the next screen with the vote
    (``annotate.judging.loop.answer``, issue 25)."""
    now = now or utcnow()
    session.flush()
    if getattr(annotator, "kind", None) == JUDGE:
        return claim_next_judge(session, study_id, annotator, now)
    connection = session.connection()
    study = study_row(session, study_id)
    keys = {"study": study_id, "annotator": annotator.id, "overlap": study.overlap}
    limit = cutoff(study, now)
    for item_id, assigned_at in _CURRENT.rows(connection, keys):
        if assigned_at >= limit:
            return item_id
    if _EXPIRED_ANY.first(connection, {"study": study_id, "cutoff": limit}) is not None:
        reclaim_expired(session, study, now)
    conditions = study.settings.get("conditions") or [""]
    seen_by_condition = dict(_SEEN.rows(connection, keys)) if len(conditions) > 1 else {}
    rows = []
    for condition in conditions:
        rows += _CANDIDATES.rows(connection, {**keys, "condition": condition})
    rank = _ranks(study, annotator, rows)
    candidates = sorted(
        (holders_now, seen_by_condition.get(condition, 0), rank[key, condition], item_id, key)
        for item_id, key, condition, holders_now in rows
    )
    if len(conditions) > 1:  # keys are shared only across conditions (a CoCo original and its counterfactual)
        candidates = _not_twice_in_a_row((_LAST_KEY.first(connection, keys) or (None,))[0], candidates)
    busy = _claim_first(session, study, annotator, [c[-2] for c in candidates], now)
    if isinstance(busy, int):
        return busy
    # Skipped items come back, oldest skip first, once nothing else is left for this annotator.
    skipped = [item_id for item_id, _key, _at in _SKIPPED.rows(connection, keys)]
    more = _claim_first(session, study, annotator, skipped, now)
    if isinstance(more, int):
        return more
    for item_id in busy + more:  # only those left: wait for them (SQLite never gets here: one writer at a time)
        if _take_place(session, study, annotator, item_id, now, wait=True):
            return item_id
    return None


_JUDGE_CURRENT = (
    select(Assignment.item_id)
    .where(
        Assignment.study_id == bindparam("study"), Assignment.annotator_id == bindparam("annotator"), Assignment.status == JUDGING
    )
    .order_by(Assignment.assigned_at, Assignment.id)
    .limit(1)
)
_JUDGE_NEXT = (
    select(Item.id)
    .where(
        Item.study_id == bindparam("study"),
        Item.included == true(),
        Item.id.not_in(
            select(Assignment.item_id).where(
                Assignment.study_id == bindparam("study"), Assignment.annotator_id == bindparam("annotator")
            )
        ),
    )
    .order_by(Item.position, Item.id)
    .limit(1)
)


def _judge_place(dialect: str):
    """INSERT a judge's place on an item (nothing when it has one already: two clients of one judge)."""
    from sqlalchemy.dialects import postgresql, sqlite

    insert_ = (sqlite if dialect == "sqlite" else postgresql).insert
    return (
        insert_(Assignment)
        .values(
            study_id=bindparam("study"),
            item_id=bindparam("item"),
            annotator_id=bindparam("annotator"),
            status=JUDGING,
            assigned_at=bindparam("now"),
        )
        .on_conflict_do_nothing(index_elements=["item_id", "annotator_id"])
    )


_JUDGE_HOLD = {"sqlite": Prepared(_judge_place("sqlite")), "postgresql": Prepared(_judge_place("postgresql"))}
_JUDGE_CURRENT, _JUDGE_NEXT = Prepared(_JUDGE_CURRENT), Prepared(_JUDGE_NEXT)


def claim_next_judge(session: Session, study_id: int, judge: Annotator, now: datetime | None = None) -> int | None:
    """An automatic judge's next item: the one it holds, else the study's next item (in position order)
    it has not had, on a place of its own; None once it had every item the study judges.  No capacity:
    a judge labels every item, whatever the humans' k."""
    now = now or utcnow()
    connection = session.connection()
    keys = {"study": study_id, "annotator": judge.id}
    for _attempt in range(20):  # a second client of the same judge took the item meanwhile: the next one
        held = _JUDGE_CURRENT.first(connection, keys)
        if held is not None:
            return held[0]
        found = _JUDGE_NEXT.first(connection, keys)
        if found is None:
            return None
        if _JUDGE_HOLD[connection.dialect.name].run(connection, {**keys, "item": found[0], "now": now}) == 1:
            return found[0]
    return None


def judge_place(connection, study_id: int, item_id: int, judge_id: int, now: datetime) -> None:
    """A judge's place on an item it votes on without having been given it (nothing if it has one)."""
    _JUDGE_HOLD[connection.dialect.name].run(connection, {"study": study_id, "item": item_id, "annotator": judge_id, "now": now})


def _claim_first(session: Session, study, annotator: Annotator, item_ids: list[int], now: datetime) -> int | list[int]:
    """The id of the first of ``item_ids`` that could be claimed, else the list of ids another
    transaction is claiming right now (PostgreSQL: passed over, not waited for)."""
    busy = []
    for item_id in item_ids:
        taken = _take_place(session, study, annotator, item_id, now, wait=False)
        if taken:
            return item_id
        if taken is None:
            busy.append(item_id)
    return busy


def _take_place(session: Session, study, annotator: Annotator, item_id: int, now: datetime, *, wait: bool):
    """Claim a place on the item if it still has one: True; False when it is full; None when another
    transaction holds it (PostgreSQL, ``wait=False``: ``SKIP LOCKED``).  The place is taken by a
    conditional update of the item's counter, so two claims can never both take the last place."""
    connection = session.connection()
    keys = {"item": item_id, "overlap": study.overlap}
    if connection.dialect.name != "sqlite":
        locked = connection.execute(_OPEN_ITEM_WAIT if wait else _OPEN_ITEM_SKIP, keys).first()
        if locked is None:
            # locked by another claim (skip) or full: only a second look, waiting, can tell
            return None if not wait else False
    if _TAKE_PLACE.run(connection, keys) != 1:
        return False
    _hold_row(connection, study.id, item_id, annotator.id, now)
    return True


def _hold_row(connection, study_id: int, item_id: int, annotator_id: int, now: datetime) -> None:
    """The annotator's assignment row on the item made active (an old skipped/reclaimed row re-used)."""
    _HOLD[connection.dialect.name].run(connection, {"study": study_id, "item": item_id, "annotator": annotator_id, "now": now})


def _not_twice_in_a_row(last: str | None, candidates: list) -> list:
    """The candidates, with those that share a key (the same turn under another condition: a CoCo
    original and its counterfactual) with the item this annotator was given last moved behind the
    others, so the two are never shown one after the other while anything else is left."""
    if last is None:
        return candidates
    return [c for c in candidates if c[-1] != last] + [c for c in candidates if c[-1] == last]


def claim(session: Session, study, item_id: int, annotator: Annotator, now: datetime, *, force: bool = False) -> bool:
    """Give the annotator a place on the item; False when it is full (``force``: taken whatever the
    capacity, for imported judgements).  The caller checked that the annotator holds no place on it."""
    connection = session.connection()
    keys = {"item": item_id, "overlap": study.overlap}
    if force:
        _ADD_PLACE.run(connection, keys)
    elif _TAKE_PLACE.run(connection, keys) != 1:
        return False
    _hold_row(connection, study.id, item_id, annotator.id, now)
    return True


def skip_item(session: Session, annotator: Annotator, item_id: int) -> None:
    """The annotator passes on the item: its place is freed for others; it is offered to this
    annotator again only when nothing else is left, and can be opened from their history."""
    assignment = session.scalar(select(Assignment).where(Assignment.item_id == item_id, Assignment.annotator_id == annotator.id))
    if assignment is not None and assignment.status == ACTIVE:
        lock_item(session, item_id)
        assignment.status = SKIPPED
        session.execute(update(Item).where(Item.id == item_id).values(holders=Item.holders - 1))


def reopen_item(session: Session, item_id: int, extra: int = 1) -> Item:
    """Admin: allow ``extra`` more judgements on the item beyond its k (designed, else the overlap)."""
    item = lock_item(session, item_id)
    item.extra_capacity += extra
    return item


def release(session: Session, annotator_id: int, *, keep_study: int | None = None) -> int:
    """Give back the places an annotator holds (logout, or a switch to ``keep_study``): they go to
    others at once instead of after the timeout.  Returns how many were released."""
    condition = [Assignment.annotator_id == annotator_id]
    if keep_study is not None:
        condition.append(Assignment.study_id != keep_study)
    return _release_rows(session, tuple(condition))


def last_study(session: Session, annotator_id: int, study_ids: list[int]) -> int | None:
    """Of ``study_ids``, the study of the item this annotator holds, else of their latest place (any
    state): where a new tab or a new login of theirs starts (issue 38).  One statement, on the index
    (study, annotator)."""
    if not study_ids:
        return None
    return session.scalar(
        select(Assignment.study_id)
        .where(Assignment.study_id.in_(study_ids), Assignment.annotator_id == annotator_id)
        .order_by((Assignment.status == ACTIVE).desc(), Assignment.assigned_at.desc(), Assignment.id.desc())
        .limit(1)
    )


def release_study(session: Session, study_id: int) -> int:
    """Give back every place held in the study (it was archived): how many were released."""
    return _release_rows(session, (Assignment.study_id == study_id,))


def reopen_items(session: Session, study: Study, key: str | None, condition: str | None = None, extra: int = 1) -> int:
    """Admin: ``extra`` more judgements on the item ``key`` (every item when ``key`` is None);
    the number of items re-opened.  An unknown key, or a key with several conditions and none
    chosen, raises ValueError."""
    if extra < 1:
        raise ValueError("--extra must be at least 1")
    query = select(Item.id).where(Item.study_id == study.id)
    if key is not None:
        query = query.where(Item.key == key)
    if condition is not None:
        query = query.where(Item.condition == condition)
    ids = list(session.scalars(query.order_by(Item.id)))
    if key is not None and len(ids) != 1:
        found = "no item" if not ids else f"{len(ids)} items (give --condition)"
        chosen = "" if condition is None else f" with condition {condition!r}"
        raise ValueError(f"{found} {key!r}{chosen} in study {study.name!r}")
    for item_id in ids:
        reopen_item(session, item_id, extra)
    return len(ids)
