"""Who judges what next.

Each item goes to ``overlap`` (k) distinct annotators (+ what an admin re-opened).
``next_item`` picks, among items the annotator has not had and that still have room:
least-annotated first; then the condition this annotator has seen least (conditions
balanced); then a per-annotator shuffled order that is seeded and reproducible
(sha256 of study seed, annotator name and item key).  An assignment left active past
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


# A study's items never change after creation, so their list and each annotator's shuffled
# order are cached per process (keyed by database, study and creation time).
_ITEM_CACHE: dict[tuple, tuple[tuple[int, str, str], ...]] = {}
_RANK_CACHE: dict[tuple, dict[int, str]] = {}
_CACHE_LIMIT = 512


def _study_key(session: Session, study: Study) -> tuple:
    return (str(session.get_bind().url), study.id, study.created_at)


def study_items(session: Session, study: Study) -> tuple[tuple[int, str, str], ...]:
    """(id, key, condition) of every item of the study."""
    key = _study_key(session, study)
    if key not in _ITEM_CACHE:
        if len(_ITEM_CACHE) > _CACHE_LIMIT:
            _ITEM_CACHE.clear()
        rows = session.execute(select(Item.id, Item.key, Item.condition).where(Item.study_id == study.id).order_by(Item.id))
        _ITEM_CACHE[key] = tuple(tuple(row) for row in rows)
    return _ITEM_CACHE[key]


def annotator_order(session: Session, study: Study, annotator: Annotator) -> dict[int, str]:
    """Item id -> this annotator's seeded shuffle rank."""
    key = (*_study_key(session, study), annotator.name, study.settings.get("seed", 0))
    if key not in _RANK_CACHE:
        if len(_RANK_CACHE) > _CACHE_LIMIT:
            _RANK_CACHE.clear()
        _RANK_CACHE[key] = {i: shuffle_rank(study, annotator, k, c) for i, k, c in study_items(session, study)}
    return _RANK_CACHE[key]


def lock_study(session: Session, study_id: int) -> Study:
    """The study row, locked for this transaction on PostgreSQL (SQLite: BEGIN IMMEDIATE does it)."""
    return session.scalars(select(Study).where(Study.id == study_id).with_for_update()).one()


def lock_item(session: Session, item_id: int) -> Item:
    return session.scalars(select(Item).where(Item.id == item_id).with_for_update()).one()


def holders(session: Session, study: Study, item_id: int, now: datetime) -> set[int]:
    rows = session.scalars(select(Assignment.annotator_id).where(Assignment.item_id == item_id, holding(study, now)))
    return set(rows)


def next_item(session: Session, study_id: int, annotator: Annotator, now: datetime | None = None) -> Item | None:
    """The item this annotator should judge next (claimed for them), or None when done."""
    now = now or utcnow()
    study = lock_study(session, study_id)
    current = session.scalars(
        select(Assignment)
        .where(Assignment.study_id == study.id, Assignment.annotator_id == annotator.id, Assignment.status == ACTIVE)
        .order_by(Assignment.assigned_at)
    ).all()
    for assignment in current:
        if assignment.assigned_at >= cutoff(study, now):
            return session.get(Item, assignment.item_id)
    # Reclaim every expired place in the study, so counts below are true.
    session.execute(
        update(Assignment)
        .where(Assignment.study_id == study.id, Assignment.status == ACTIVE, Assignment.assigned_at < cutoff(study, now))
        .values(status=RECLAIMED)
    )
    counts = dict(
        session.execute(
            select(Assignment.item_id, func.count())
            .where(Assignment.study_id == study.id, holding(study, now))
            .group_by(Assignment.item_id)
        ).all()
    )
    mine: set[int] = set()
    skipped: dict[int, datetime] = {}
    for item_id, status, assigned_at in session.execute(
        select(Assignment.item_id, Assignment.status, Assignment.assigned_at).where(
            Assignment.study_id == study.id, Assignment.annotator_id == annotator.id, Assignment.status != RECLAIMED
        )
    ):
        mine.add(item_id)
        if status == SKIPPED:
            skipped[item_id] = assigned_at
    extra = dict(
        session.execute(select(Item.id, Item.extra_capacity).where(Item.study_id == study.id, Item.extra_capacity > 0)).all()
    )
    items = study_items(session, study)
    seen_by_condition: dict[str, int] = {}
    for item_id, _key, condition in items:
        if item_id in mine:
            seen_by_condition[condition] = seen_by_condition.get(condition, 0) + 1
    open_items = [
        (counts.get(item_id, 0), seen_by_condition.get(condition, 0), item_id)
        for item_id, _key, condition in items
        if item_id not in mine and counts.get(item_id, 0) < study.overlap + extra.get(item_id, 0)
    ]
    ranks = annotator_order(session, study, annotator)
    candidates = sorted((count, seen, ranks[item_id], item_id) for count, seen, item_id in open_items)
    # Skipped items come back, oldest skip first, once nothing else is left for this annotator.
    candidates += sorted(
        (skipped_at, 0, ranks[item_id], item_id)
        for item_id, skipped_at in skipped.items()
        if counts.get(item_id, 0) < study.overlap + extra.get(item_id, 0)
    )
    for *_, item_id in _not_twice_in_a_row(session, study, annotator, items, candidates):
        item = lock_item(session, item_id)
        if len(holders(session, study, item_id, now)) >= study.overlap + item.extra_capacity:
            continue  # filled by a concurrent vote since the count above
        claim(session, study, item, annotator, now)
        return item
    return None


def _not_twice_in_a_row(session: Session, study: Study, annotator: Annotator, items, candidates: list) -> list:
    """The candidates, with those that share a key (the same turn under another condition: a CoCo
    original and its counterfactual) with the item this annotator was given last moved behind the
    others, so the two are never shown one after the other while anything else is left."""
    last = session.scalar(
        select(Assignment.item_id).where(Assignment.study_id == study.id, Assignment.annotator_id == annotator.id)
        .order_by(Assignment.assigned_at.desc(), Assignment.id.desc()).limit(1)
    )  # fmt: skip
    if last is None:
        return candidates
    key_of = {item_id: key for item_id, key, _condition in items}
    same = key_of.get(last)
    return [c for c in candidates if key_of[c[-1]] != same] + [c for c in candidates if key_of[c[-1]] == same]


def claim(session: Session, study: Study, item: Item, annotator: Annotator, now: datetime) -> Assignment:
    """Give the annotator a place on the item (re-using an old skipped/reclaimed row)."""
    assignment = session.scalar(select(Assignment).where(Assignment.item_id == item.id, Assignment.annotator_id == annotator.id))
    if assignment is None:
        assignment = Assignment(study_id=study.id, item_id=item.id, annotator_id=annotator.id)
        session.add(assignment)
    assignment.status, assignment.assigned_at, assignment.completed_at = ACTIVE, now, None
    session.flush()
    return assignment


def skip_item(session: Session, annotator: Annotator, item_id: int) -> None:
    """The annotator passes on the item: its place is freed for others; it is offered to this
    annotator again only when nothing else is left, and can be opened from their history."""
    assignment = session.scalar(select(Assignment).where(Assignment.item_id == item_id, Assignment.annotator_id == annotator.id))
    if assignment is not None and assignment.status == ACTIVE:
        assignment.status = SKIPPED


def reopen_item(session: Session, item_id: int, extra: int = 1) -> Item:
    """Admin: allow ``extra`` more judgements on the item beyond the study's overlap."""
    item = lock_item(session, item_id)
    item.extra_capacity += extra
    return item


def release(session: Session, annotator_id: int, *, keep_study: int | None = None) -> int:
    """Give back the places an annotator holds (logout, or a switch to ``keep_study``): they go to
    others at once instead of after the timeout.  Returns how many were released."""
    query = update(Assignment).where(Assignment.annotator_id == annotator_id, Assignment.status == ACTIVE)
    if keep_study is not None:
        query = query.where(Assignment.study_id != keep_study)
    return session.execute(query.values(status=RECLAIMED)).rowcount or 0


def release_study(session: Session, study_id: int) -> int:
    """Give back every place held in the study (it was archived): how many were released."""
    query = update(Assignment).where(Assignment.study_id == study_id, Assignment.status == ACTIVE)
    return session.execute(query.values(status=RECLAIMED)).rowcount or 0


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
