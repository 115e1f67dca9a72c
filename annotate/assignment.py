"""Who judges what next.

Each item goes to ``overlap`` (k) distinct annotators (+ what an admin re-opened).
``next_item`` picks, among items the annotator has not had and that still have room:
least-annotated first; then the condition this annotator has seen least (conditions
balanced); then a per-annotator shuffled order that is seeded and reproducible
(sha256 of study seed, annotator name and item key), among the ``WINDOW`` least-held open
items of each condition (ties in the count broken by the item's position).  An assignment left active past
the study's timeout is reclaimed: its place goes to someone else.  An item never gets
more than k holders (annotators who finished it or hold it unexpired).
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta

from sqlalchemy import and_, func, or_, select, update
from sqlalchemy.orm import Session

from annotate import crowd
from annotate.models import DEFAULT_TIMEOUT_MINUTES, Annotator, Assignment, Item, Study, VoteEvent, utcnow

ACTIVE, DONE, SKIPPED, RECLAIMED = "active", "done", "skipped", "reclaimed"


def cutoff(study: Study, now: datetime) -> datetime:
    return now - timedelta(minutes=float(study.settings.get("timeout_minutes", DEFAULT_TIMEOUT_MINUTES)))


def holding(study: Study, now: datetime):
    """SQL condition: an assignment that takes one of an item's k places."""
    return or_(Assignment.status == DONE, and_(Assignment.status == ACTIVE, Assignment.assigned_at >= cutoff(study, now)))


def shuffle_rank(study: Study, annotator: Annotator, item_key: str, condition: str) -> str:
    seed = study.settings.get("seed", 0)
    return hashlib.sha256(f"{seed}\x1f{annotator.name}\x1f{item_key}\x1f{condition}".encode()).hexdigest()


def lock_study(session: Session, study_id: int) -> Study:
    """The study row, locked for this transaction on PostgreSQL (SQLite: BEGIN IMMEDIATE does it)."""
    return session.scalars(select(Study).where(Study.id == study_id).with_for_update()).one()


def lock_item(session: Session, item_id: int) -> Item:
    return session.scalars(select(Item).where(Item.id == item_id).with_for_update()).one()


def holders(session: Session, study: Study, item_id: int, now: datetime) -> set[int]:
    rows = session.scalars(select(Assignment.annotator_id).where(Assignment.item_id == item_id, holding(study, now)))
    return set(rows)


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


def next_item(session: Session, study_id: int, annotator: Annotator, now: datetime | None = None) -> Item | None:
    """The item this annotator should judge next (claimed for them), or None when done.

    Cost does not grow with the study: each item keeps ``holders`` (places taken: done or held), kept by
    the transactions that change them, so the choice reads a few least-held open items per condition
    through the index (study, condition, holders) instead of every item and assignment.  No study-wide
    lock: on PostgreSQL each candidate is taken ``FOR UPDATE SKIP LOCKED`` in turn, so two annotators
    claim different items at once (one being claimed is passed over, and waited for only when nothing
    else is left); the chosen item's places are counted again under its lock before the claim.
    """
    now = now or utcnow()
    study = session.get(Study, study_id)
    current = session.scalars(
        select(Assignment)
        .where(Assignment.study_id == study.id, Assignment.annotator_id == annotator.id, Assignment.status == ACTIVE)
        .order_by(Assignment.assigned_at)
    ).all()
    for assignment in current:
        if assignment.assigned_at >= cutoff(study, now):
            return session.get(Item, assignment.item_id)
    reclaim_expired(session, study, now)
    mine = select(Assignment.item_id).where(
        Assignment.study_id == study.id, Assignment.annotator_id == annotator.id, Assignment.status != RECLAIMED
    )
    seen_by_condition = dict(
        session.execute(
            select(Item.condition, func.count()).join(Assignment, Assignment.item_id == Item.id)
            .where(Assignment.study_id == study.id, Assignment.annotator_id == annotator.id, Assignment.status != RECLAIMED)
            .group_by(Item.condition)
        ).all()
    )  # fmt: skip
    conditions = (study.settings or {}).get("conditions") or [""]
    rows = []
    for condition in conditions:
        rows += session.execute(
            select(Item.id, Item.key, Item.condition, Item.holders)
            .where(Item.study_id == study.id, Item.condition == condition,
                   Item.holders < study.overlap + Item.extra_capacity, Item.id.not_in(mine))
            .order_by(Item.holders, Item.position).limit(WINDOW)
        ).all()  # fmt: skip
    candidates = sorted(
        (holders_now, seen_by_condition.get(condition, 0), shuffle_rank(study, annotator, key, condition), item_id, key)
        for item_id, key, condition, holders_now in rows
    )
    # Skipped items come back, oldest skip first, once nothing else is left for this annotator.
    skipped = session.execute(
        select(Item.id, Item.key, Assignment.assigned_at).join(Assignment, Assignment.item_id == Item.id)
        .where(Assignment.study_id == study.id, Assignment.annotator_id == annotator.id, Assignment.status == SKIPPED,
               Item.holders < study.overlap + Item.extra_capacity)
        .order_by(Assignment.assigned_at, Item.id)
    ).all()  # fmt: skip
    candidates += [(at, 0, "", item_id, key) for item_id, key, at in skipped]
    ordered = [item_id for *_, item_id, _key in _not_twice_in_a_row(session, study, annotator, candidates)]
    busy = []
    for item_id in ordered:  # an item another annotator is claiming right now is passed over, not waited for
        item = _try_claim(session, study, annotator, item_id, now, wait=False)
        if item is True:
            continue
        if item is None:
            busy.append(item_id)
        else:
            return item
    for item_id in busy:  # only those left: wait for them (SQLite never gets here: one writer at a time)
        item = _try_claim(session, study, annotator, item_id, now, wait=True)
        if item not in (None, True):
            return item
    return None


def _try_claim(session: Session, study: Study, annotator: Annotator, item_id: int, now: datetime, *, wait: bool):
    """Lock the item and claim it if it still has a place (counted again under the lock: a concurrent vote
    may have filled it).  The item, None when another transaction holds it (``wait=False``), or True when
    it is full.  A full item's lock is given back at once (a savepoint), so a transaction never sits on
    items it does not take while it waits for another: no deadlock between annotators."""
    with session.begin_nested() as attempt:
        item = session.scalars(select(Item).where(Item.id == item_id).with_for_update(skip_locked=not wait)).first()
        if item is None:
            attempt.rollback()
            return None
        if len(holders(session, study, item.id, now)) >= study.overlap + item.extra_capacity:
            attempt.rollback()
            return True
        claim(session, study, item, annotator, now)
        return item


def _not_twice_in_a_row(session: Session, study: Study, annotator: Annotator, candidates: list) -> list:
    """The candidates, with those that share a key (the same turn under another condition: a CoCo
    original and its counterfactual) with the item this annotator was given last moved behind the
    others, so the two are never shown one after the other while anything else is left."""
    last = session.scalar(
        select(Item.key).join(Assignment, Assignment.item_id == Item.id)
        .where(Assignment.study_id == study.id, Assignment.annotator_id == annotator.id)
        .order_by(Assignment.assigned_at.desc(), Assignment.id.desc()).limit(1)
    )  # fmt: skip
    if last is None:
        return candidates
    return [c for c in candidates if c[-1] != last] + [c for c in candidates if c[-1] == last]


def claim(session: Session, study: Study, item: Item, annotator: Annotator, now: datetime) -> Assignment:
    """Give the annotator a place on the item (re-using an old skipped/reclaimed row)."""
    assignment = session.scalar(select(Assignment).where(Assignment.item_id == item.id, Assignment.annotator_id == annotator.id))
    if assignment is None:
        assignment = Assignment(study_id=study.id, item_id=item.id, annotator_id=annotator.id, status=SKIPPED)
        session.add(assignment)
    if assignment.status not in (ACTIVE, DONE):  # a new place on the item (the caller holds the item's lock)
        session.execute(update(Item).where(Item.id == item.id).values(holders=Item.holders + 1))
    assignment.status, assignment.assigned_at, assignment.completed_at = ACTIVE, now, None
    session.flush()
    return assignment


def skip_item(session: Session, annotator: Annotator, item_id: int) -> None:
    """The annotator passes on the item: its place is freed for others; it is offered to this
    annotator again only when nothing else is left, and can be opened from their history."""
    assignment = session.scalar(select(Assignment).where(Assignment.item_id == item_id, Assignment.annotator_id == annotator.id))
    if assignment is not None and assignment.status == ACTIVE:
        lock_item(session, item_id)
        assignment.status = SKIPPED
        session.execute(update(Item).where(Item.id == item_id).values(holders=Item.holders - 1))


def reopen_item(session: Session, item_id: int, extra: int = 1) -> Item:
    """Admin: allow ``extra`` more judgements on the item beyond the study's overlap."""
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


FAST_SECONDS = 2.0  # a median below this, or below a quarter of the study's median, is flagged
FAST_SHARE = 0.25


def _time_per_item(session: Session, study_id: int) -> dict[str, dict]:
    """Each voter's median seconds on an item (the first vote event of each item: the time from the
    item shown to the judgement) and ``fast``: implausibly quick judging, a median under 2 s or under a
    quarter of the study's median."""
    import statistics

    first = (
        select(func.min(VoteEvent.id)).join(Item, Item.id == VoteEvent.item_id)
        .where(Item.study_id == study_id).group_by(VoteEvent.item_id, VoteEvent.annotator_id)
    )  # fmt: skip
    rows = session.execute(
        select(Annotator.name, VoteEvent.seconds).join(Annotator, Annotator.id == VoteEvent.annotator_id)
        .where(VoteEvent.id.in_(first), VoteEvent.seconds.is_not(None))
    ).all()  # fmt: skip
    seconds: dict[str, list[float]] = {}
    for name, value in rows:
        seconds.setdefault(name, []).append(float(value))
    overall = statistics.median([s for values in seconds.values() for s in values]) if seconds else None
    timing = {}
    for name, values in sorted(seconds.items()):
        median = statistics.median(values)
        fast = median < FAST_SECONDS or (overall is not None and median < FAST_SHARE * overall)
        timing[name] = {"median_seconds": round(median, 1), "fast": fast}
    return timing


def attention_checks(session: Session, study_id: int) -> dict[str, dict[str, int]]:
    """Each voter's attention checks: current answers to gold questions (``checked``) and how many
    differ from the gold answer (``failed``)."""
    gold_items = dict(session.execute(select(Item.id, Item.gold).where(Item.study_id == study_id, Item.gold.is_not(None))).all())
    if not gold_items:
        return {}
    latest = (
        select(func.max(VoteEvent.id)).where(VoteEvent.item_id.in_(list(gold_items)))
        .group_by(VoteEvent.item_id, VoteEvent.annotator_id, VoteEvent.question)
    )  # fmt: skip
    checks: dict[str, dict[str, int]] = {}
    for name, item_id, question, value in session.execute(
        select(Annotator.name, VoteEvent.item_id, VoteEvent.question, VoteEvent.value)
        .join(Annotator, Annotator.id == VoteEvent.annotator_id).where(VoteEvent.id.in_(latest))
    ):  # fmt: skip
        expected = (gold_items[item_id] or {}).get(question)
        if expected is not None:
            counts = checks.setdefault(name, {"checked": 0, "failed": 0})
            counts["checked"] += 1
            counts["failed"] += value != expected
    return dict(sorted(checks.items()))


def progress(session: Session, study_id: int, now: datetime | None = None) -> dict:
    """Items, finished judgements, and per-annotator and per-item counts.

    ``annotators`` lists only people with at least one vote in the study (``done`` judgements,
    ``active`` places they hold now); ``held`` counts the places held now by anyone, voters or not
    (someone looking at an item), apart from the votes; ``time_per_item`` gives each voter's median
    seconds per item and ``fast`` (see :func:`_time_per_item`); ``attention`` each voter's attention
    checks (:func:`attention_checks`); ``workers`` the crowd workers (``annotate.crowd.workers``).
    """
    now = now or utcnow()
    study = session.get(Study, study_id)
    items = session.execute(select(Item.id, Item.key, Item.condition, Item.extra_capacity).where(Item.study_id == study_id)).all()
    done = session.execute(
        select(Assignment.item_id, Annotator.name)
        .join(Annotator, Annotator.id == Assignment.annotator_id)
        .where(Assignment.study_id == study_id, Assignment.status == DONE)
    ).all()
    active = session.execute(
        select(Assignment.item_id, Annotator.name)
        .join(Annotator, Annotator.id == Assignment.annotator_id)
        .where(Assignment.study_id == study_id, Assignment.status == ACTIVE, Assignment.assigned_at >= cutoff(study, now))
    ).all()
    voters = set(
        session.scalars(
            select(Annotator.name)
            .join(VoteEvent, VoteEvent.annotator_id == Annotator.id)
            .join(Item, Item.id == VoteEvent.item_id)
            .where(Item.study_id == study_id)
            .distinct()
        )
    )
    per_item_done: dict[int, int] = {}
    per_annotator: dict[str, dict[str, int]] = {name: {"done": 0, "active": 0} for name in voters}
    held: dict[str, int] = {}
    for item_id, name in done:
        per_item_done[item_id] = per_item_done.get(item_id, 0) + 1
        per_annotator.setdefault(name, {"done": 0, "active": 0})["done"] += 1
    for _item_id, name in active:
        held[name] = held.get(name, 0) + 1
        if name in per_annotator:
            per_annotator[name]["active"] += 1
    needed = sum(study.overlap + extra for _, _, _, extra in items)
    finished = sum(min(per_item_done.get(i, 0), study.overlap + extra) for i, _, _, extra in items)
    n_votes = session.scalar(select(func.count()).select_from(VoteEvent).join(Item).where(Item.study_id == study_id))
    # Crowd workers are shown as <platform>:<worker id> (annotate.crowd), here as in the exports.
    shown = crowd.display_names(session, study_id)
    rename = lambda counts: {shown.get(name, name): value for name, value in counts.items()}  # noqa: E731
    attention = rename(attention_checks(session, study_id))
    return {
        "study": study.name,
        "kind": study.kind,
        "overlap": study.overlap,
        "items": len(items),
        "judgements_done": finished,
        "judgements_needed": needed,
        "fraction_done": finished / needed if needed else 1.0,
        "items_complete": sum(1 for i, _, _, extra in items if per_item_done.get(i, 0) >= study.overlap + extra),
        "vote_events": int(n_votes or 0),
        "annotators": dict(sorted(rename(per_annotator).items())),
        "held": dict(sorted(rename(held).items())),
        "time_per_item": rename(_time_per_item(session, study_id)),
        "attention": attention,
        "workers": crowd.workers(session, study_id, attention),
        "per_item": [
            {"key": key, "condition": condition, "done": per_item_done.get(i, 0), "needed": study.overlap + extra}
            for i, key, condition, extra in items
        ],
    }
