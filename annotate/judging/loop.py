"""The annotator's loop in one read and one write (issue 25).

An annotator's screen — the item, their answers and comment on it, the progress line, whether there is
anything to go back to, a crowd worker's quota — is read in ONE transaction with a fixed number of
statements (:func:`read_screen`: the login, the access rule with the study's settings, the item with
the annotator's place on it, their answers, the progress counts), whatever the study's size and however
many items they judged.  A vote is ONE write transaction (:func:`answer`) that stores it, claims the
next item and returns the next screen, so the page shows the next item without reading again; a skip
(:func:`skip`) and a first visit (:func:`claim_screen`) likewise.  The go-back list (:func:`history`)
is read only when the annotator opens it.  Nothing on a read path writes (a tab with no item on its
screen claims one: that is a write, :func:`claim_screen`).

The login is checked inside the same transaction (``annotate.people.sessions.user_in``) when the caller gives
the session token (the pages do); callers that established the annotator otherwise (tests, scripts)
pass ``token=None``.  The bound is in docs/architecture.md (*The store*) and held by
``tests/store/test_loop_statements.py``.

No Streamlit here; ``annotate.screen`` keeps what one browser tab shows and calls these through
``annotate.service``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import Integer, and_, bindparam, exists, func, or_, select, true
from sqlalchemy.orm import Session

from annotate.judging import votes
from annotate.people.auth import PermissionDenied
from annotate.people.sessions import user_in
from annotate.store.db import not_sent
from annotate.store.models import WORKER, Annotator, Assignment, CrowdWorker, Item, Study, StudyMember, VoteEvent, utcnow
from annotate.studies import allocation, assignment, membership
from formats.tidy import UNSURE


class NotLoggedIn(PermissionDenied):
    """The session token is unknown, expired or revoked: the page asks to log in again."""


class AnsweredElsewhere(Exception):  # noqa: N818 (an outcome, like votes.Reassigned)
    """The item's answers changed since this tab drew them (another tab of the same person answered it):
    nothing was stored; ``answers`` are the answers stored now.  The tab shows them and says so, and only
    a press made with them on the screen changes them (issue 38: never silently)."""

    def __init__(self, answers: dict[str, str]):
        super().__init__("answered in another tab")
        self.answers = answers


@dataclass(frozen=True)
class Progress:
    """The progress line: items this annotator judged, the study's items, how much of the study's
    judgements (or budget) is done, a crowd worker's quota (None: no quota), and the items still open to
    this annotator (``open``: the item they hold, those they skipped, and those they never had that still
    have a free place; None: not counted).

    "N of M for you" (issue 38): M is what this person judged plus what is still open to them, so M is
    the most they can still reach; it falls when others fill the places first and grows when an admin
    adds places.  The bar is theirs; the study's share is said apart, in words."""

    mine: int
    items: int
    study_fraction: float
    quota: int | None = None
    open: int | None = None

    @property
    def for_you(self) -> int | None:
        """M of "N of M for you": the quota of a crowd worker, else judged + still open (None: unknown)."""
        if self.quota:
            return self.quota
        return None if self.open is None else self.mine + self.open

    def bar(self) -> tuple[float, str]:
        """The progress bar's fraction (this person's) and its words (theirs, then the study's apart)."""
        if self.quota:
            return min(1.0, self.mine / self.quota), f"You have judged {self.mine} of {self.quota} items"
        study = f"study {100 * self.study_fraction:.0f}% complete"
        total = self.for_you
        if not total:  # not counted (a write's screen), or nothing open and nothing judged
            return self.study_fraction, f"You have judged {self.mine} · {study}"
        fraction = self.mine / total if total else 1.0
        return fraction, f"You have judged {self.mine} of {total} for you · {study}"


@dataclass(frozen=True)
class Screen:
    """Everything an annotator's screen shows for one study.  ``item`` None: nothing left for them
    (or a crowd worker's quota reached); ``closed``: the study closed with this annotator's last vote
    (its budget spent), which was stored."""

    user: Annotator
    study_id: int
    item: Item | None
    answers: dict[str, str] = field(default_factory=dict)
    comment: str = ""
    progress: Progress = Progress(0, 0, 0.0)
    has_history: bool = False
    closed: bool = False


# --- the pieces of a screen: one statement each ------------------------------------------------


@dataclass(frozen=True)
class Access:
    """What the access check read of the study: its kind, overlap and settings."""

    kind: str
    overlap: int
    settings: dict


def _login(session: Session, user: Annotator | None, token: str | None, now: datetime) -> Annotator:
    if token is None:
        if user is None:
            raise NotLoggedIn("please log in")
        return user
    try:
        found = user_in(session, token, now)
    except Exception as err:  # the transaction's first statement: nothing of an answer was sent yet
        not_sent(err)
        raise
    if found is None or (user is not None and found.id != user.id):
        raise NotLoggedIn("your login has ended: please log in again")
    return found


# The loop's statements, built once (issue 38: building a statement, and SQLAlchemy's cache key of a
# new one, were a fifth of a vote's time in the serving process); a built statement keeps its cache key,
# so each execution only binds its parameters (``bindparam`` names).  ``assignment`` does the same for
# the claim.
_STUDY_ID = bindparam("study", type_=Integer)
_USER_ID = bindparam("user", type_=Integer)
_ITEM_ID = bindparam("item", type_=Integer)
_ACCESS = select(
    Study.kind,
    Study.archived,
    Study.overlap,
    Study.settings,
    exists().where(StudyMember.study_id == Study.id),
    exists().where(StudyMember.study_id == Study.id, StudyMember.annotator_id == _USER_ID),
    select(CrowdWorker.study_id).where(CrowdWorker.annotator_id == _USER_ID).scalar_subquery(),
).where(Study.id == _STUDY_ID)
_ITEM = (
    select(Item, Assignment.id)
    .outerjoin(Assignment, and_(Assignment.item_id == Item.id, Assignment.annotator_id == _USER_ID))
    .where(Item.id == _ITEM_ID)
    .execution_options(populate_existing=True)
)
_ALLOWED = (
    select(Item.study_id, Assignment.id)
    .outerjoin(Assignment, and_(Assignment.item_id == Item.id, Assignment.annotator_id == _USER_ID))
    .where(Item.id == _ITEM_ID)
)
_LOCK_PLACE = select(Assignment.id).where(Assignment.item_id == _ITEM_ID, Assignment.annotator_id == _USER_ID).with_for_update()
_ANSWERS = (
    select(VoteEvent.question, VoteEvent.value, VoteEvent.comment)
    .where(VoteEvent.item_id == _ITEM_ID, VoteEvent.annotator_id == _USER_ID)
    .order_by(VoteEvent.id)
)


def _progress_statement(count_open: bool):
    """The progress counts in one statement (:func:`_progress`); parameters study, user, overlap."""
    mine = (
        select(func.count())
        .select_from(Assignment)
        .where(
            Assignment.study_id == _STUDY_ID,
            Assignment.annotator_id == _USER_ID,
            Assignment.status.in_((assignment.DONE, assignment.JUDGED)),  # a judge's own places (issue 28)
        )
        .scalar_subquery()
    )
    skipped = exists().where(
        Assignment.study_id == _STUDY_ID, Assignment.annotator_id == _USER_ID, Assignment.status == assignment.SKIPPED
    )
    voted = exists(
        select(VoteEvent.id)
        .join(Item, Item.id == VoteEvent.item_id)
        .where(VoteEvent.annotator_id == _USER_ID, Item.study_id == _STUDY_ID)
    )
    # items to judge (an adaptive design leaves some out) and their places, each its k (designed, else
    # the overlap) and its extra places: from ix_items_capacity
    overlap = bindparam("overlap", type_=Integer)
    total = select(func.count()).where(Item.study_id == _STUDY_ID, Item.included == true()).scalar_subquery()
    places = (
        select(func.sum(assignment.capacity(overlap)))
        .where(Item.study_id == _STUDY_ID, Item.included == true())
        .scalar_subquery()
    )
    judged = (
        select(func.count())
        .select_from(Assignment)
        .where(Assignment.study_id == _STUDY_ID, Assignment.status == assignment.DONE)
        .scalar_subquery()
    )
    columns = [mine, skipped, voted, total, places, judged]
    if count_open:
        # still open to this person (as claim_next offers them): the item they hold; those they skipped,
        # and those they never had (no place of theirs but a reclaimed one), while they have a free place
        theirs = select(Assignment.item_id).where(Assignment.study_id == _STUDY_ID, Assignment.annotator_id == _USER_ID)
        held = theirs.where(Assignment.status == assignment.ACTIVE)
        skipped_items = theirs.where(Assignment.status == assignment.SKIPPED)
        had = theirs.where(Assignment.status != assignment.RECLAIMED)
        free = Item.holders < assignment.capacity(overlap)
        columns.append(
            select(func.count())
            .where(
                Item.study_id == _STUDY_ID,
                Item.included == true(),
                or_(Item.id.in_(held), and_(free, or_(Item.id.in_(skipped_items), Item.id.not_in(had)))),
            )
            .scalar_subquery()
        )
    return select(*columns)


_PROGRESS = _progress_statement(False)
_PROGRESS_OPEN = _progress_statement(True)


def access(session: Session, user: Annotator, study_id: int) -> Access:
    """The rule of ``membership.require_access`` in one statement, with the study's overlap and
    settings; a refusal is explained by ``require_access`` itself (the rare path)."""
    row = session.execute(_ACCESS, {"study": study_id, "user": user.id}).first()
    if row is None:
        raise PermissionDenied("no such study")
    kind, archived, overlap, settings, has_members, member, worker_study = row
    settings = settings or {}
    if user.role == "admin":
        allowed = True
    elif archived:
        allowed = False
    elif user.role == WORKER:
        allowed = worker_study == study_id and bool((settings.get("crowd") or {}).get("enabled"))
    else:
        allowed = not has_members or bool(member)
    if not allowed:
        membership.require_access(session, user, study_id)  # raises StudyClosed or PermissionDenied
        raise PermissionDenied("you are not on this study")
    return Access(kind, int(overlap), settings)


def _item(session: Session, user: Annotator, study_id: int, item_id: int) -> Item:
    """An item of the study that the user holds or held (an admin: any), loaded whole."""
    found = session.execute(_ITEM, {"item": item_id, "user": user.id}).first()
    if found is None:
        raise PermissionDenied("no such item")
    item, place = found
    if place is None and user.role != "admin":
        raise PermissionDenied("this item is not assigned to you")
    if item.study_id != study_id:
        raise PermissionDenied("this item is not in this study")
    return item


def answers_of(session: Session, user: Annotator, item_id: int) -> tuple[dict[str, str], str]:
    """The user's current answer per question on the item, and the comment of their latest event."""
    rows = session.execute(_ANSWERS, {"item": item_id, "user": user.id}).all()
    return {question: value for question, value, _ in rows}, (rows[-1][2] or "") if rows else ""


def _progress(
    session: Session, user: Annotator, study_id: int, study: Access, *, count_open: bool = True
) -> tuple[Progress, bool]:
    """The progress line and whether the user has anything to go back to, in one statement.
    ``count_open`` False (the write path: a vote, a skip) leaves out the items still open to the person,
    which reads every item of the study: the page keeps the M of its last read (a judgement moves one
    item from open to judged, so M stays)."""
    statement = _PROGRESS_OPEN if count_open else _PROGRESS
    row = session.execute(statement, {"study": study_id, "user": user.id, "overlap": study.overlap}).one()
    done, skipped_any, voted_any, total, places, judged, *open_count = row
    # against the budget when the study has one (it closes once that is spent): issue 24
    needed = allocation.judgements_total(allocation.design_of(study.settings), int(places or 0))
    quota = (study.settings.get("crowd") or {}).get("quota") if user.role == WORKER else None
    fraction = min(1.0, (judged or 0) / needed) if needed else 1.0
    still = int(open_count[0] or 0) if open_count else None
    return Progress(int(done or 0), int(total), fraction, quota, still), bool(skipped_any or voted_any)


def _screen(
    session: Session, user: Annotator, study_id: int, item_id: int | None, study: Access, progress=None, *, closed=False
) -> Screen:
    progress, has_history = progress or _progress(session, user, study_id, study)
    if item_id is None:
        return Screen(user, study_id, None, progress=progress, has_history=has_history, closed=closed)
    item = _item(session, user, study_id, item_id)
    answers, comment = answers_of(session, user, item_id)
    return Screen(user, study_id, item, answers, comment, progress, has_history, closed)


def progress_of(session: Session, user: Annotator, study_id: int) -> Progress:
    """The progress line alone (``service.my_progress``): counts only, so also once the study closed."""
    kind, overlap, settings = session.execute(select(Study.kind, Study.overlap, Study.settings).where(Study.id == study_id)).one()
    return _progress(session, user, study_id, Access(kind, int(overlap), settings or {}))[0]


def _claim(session: Session, user: Annotator, study_id: int, progress: Progress, now: datetime) -> int | None:
    """The user's next item, claimed; None when nothing is left or a crowd worker's quota is reached."""
    if progress.quota is not None and progress.mine >= progress.quota:
        return None
    return assignment.claim_next(session, study_id, user, now)


# --- the screen, the vote, the skip ------------------------------------------------------------------


def read_screen(
    session: Session, user: Annotator | None, study_id: int, item_id: int, *, token: str | None = None, now=None
) -> Screen:
    """The screen of an item already on the annotator's screen (or under review): one read."""
    user = _login(session, user, token, now or utcnow())
    return _screen(session, user, study_id, item_id, access(session, user, study_id))


def claim_screen(session: Session, user: Annotator | None, study_id: int, *, token: str | None = None, now=None) -> Screen:
    """A tab with nothing on its screen (a first visit, a switch of study): claims the next item and
    returns its screen, in the caller's write transaction."""
    now = now or utcnow()
    user = _login(session, user, token, now)
    found = access(session, user, study_id)
    progress = _progress(session, user, study_id, found)
    return _screen(session, user, study_id, _claim(session, user, study_id, progress[0], now), found, progress)


@dataclass(frozen=True)
class Judgement:
    """One press's answers on the item a tab showed, as every layer of a vote passes it on (the page
    makes it once; ``annotate.screen``, ``service.judge`` and :func:`answer` read it; issue 39).

    ``done``: the judgement is complete (the tab moves on); False keeps the item (one of CoCo's two
    questions).  ``seconds``: the time the item was on the screen.  ``then``: an item to show next
    instead of claiming one (the item a tab left for a review).  ``expected``: the answers the tab
    showed on the item; when the stored ones differ, another tab answered it meanwhile and nothing is
    stored (:class:`AnsweredElsewhere`).  None: not compared (the HTTP API, the CLI)."""

    item_id: int
    answers: dict[str, str]
    done: bool
    comment: str = ""
    seconds: float | None = None
    then: int | None = None
    expected: dict[str, str] | None = None


def answer(
    session: Session, user: Annotator | None, study_id: int, judgement: Judgement, *, token: str | None = None, now=None
) -> Screen:
    """One judgement on the item the tab showed, in the caller's write transaction: the answers stored
    (or refused: ``votes.Reassigned``, ``votes.CapacityError``, ``StudyError``), then the screen to show
    next: the same item while the judgement is incomplete; else its ``then`` (the item the tab left for
    a review, when it is still the annotator's), else the next item, claimed."""
    item_id, answers, expected, then = judgement.item_id, judgement.answers, judgement.expected, judgement.then
    now = now or utcnow()
    user = _login(session, user, token, now)
    # The study's access rule first: a person who is not on the study gets its refusal whatever the
    # item, so an existing item and an unknown one answer alike (issue 37: 403 vs 404 told item ids).
    found = access(session, user, study_id)
    allowed = session.execute(_ALLOWED, {"item": item_id, "user": user.id}).first()
    if allowed is None or allowed[0] != study_id:
        raise PermissionDenied("no such item in this study")
    if allowed[1] is None and user.role != "admin":
        raise PermissionDenied("this item is not assigned to you")
    if expected is not None:
        # the person's place on the item, locked first (PostgreSQL): two tabs pressing at once are one
        # after the other here, and the second sees the first's answer (SQLite: one writer at a time)
        session.execute(_LOCK_PLACE, {"item": item_id, "user": user.id})
        stored_now = answers_of(session, user, item_id)[0]
        if stored_now != expected:
            raise AnsweredElsewhere(stored_now)
    allocation.before_judgement(session, study_id, item_id)
    votes.cast_votes(session, user, item_id, answers, comment=judgement.comment, seconds=judgement.seconds, now=now)
    closed = allocation.after_judgement(session, study_id, item_id)  # True: this judgement spent the budget
    progress = _progress(session, user, study_id, found, count_open=False)
    if closed and user.role != "admin":
        return _screen(session, user, study_id, None, found, progress, closed=True)
    if not judgement.done:
        return _screen(session, user, study_id, item_id, found, progress)
    if then is not None and then != item_id:
        try:  # the vote is stored whatever happens here: a refusal only means claiming afresh
            return _screen(session, user, study_id, then, found, progress)
        except PermissionDenied:
            pass
    return _screen(session, user, study_id, _claim(session, user, study_id, progress[0], now), found, progress)


def skip(session: Session, user: Annotator | None, study_id: int, item_id: int, *, token: str | None = None, now=None) -> Screen:
    """Pass on the item (it comes back once nothing else is left) and claim the next: one write."""
    now = now or utcnow()
    user = _login(session, user, token, now)
    found = access(session, user, study_id)
    assignment.skip_item(session, user, item_id)
    progress = _progress(session, user, study_id, found, count_open=False)
    return _screen(session, user, study_id, _claim(session, user, study_id, progress[0], now), found, progress)


# --- going back ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Earlier:
    """An item the annotator can go back to: skipped (oldest skip first) or judged (newest first)."""

    item_id: int
    key: str
    state: str  # "skipped" or "judged"
    label: str  # a line a person recognises: position, key, a preview of the item, the current answer


def history(session: Session, user: Annotator, study_id: int, preview) -> list[Earlier]:
    """The go-back list, read only when it is opened: three statements whatever its length.
    ``preview(payload)`` gives the short text that recalls an item (the kind's ``preview``)."""
    skipped = session.execute(
        select(Item.id, Item.key, Item.payload)
        .join(Assignment, Assignment.item_id == Item.id)
        .where(Assignment.study_id == study_id, Assignment.annotator_id == user.id, Assignment.status == assignment.SKIPPED)
        .order_by(Assignment.assigned_at, Item.id)
    ).all()
    last = (
        select(VoteEvent.item_id, func.max(VoteEvent.id).label("last"))
        .join(Item, Item.id == VoteEvent.item_id)
        .where(Item.study_id == study_id, VoteEvent.annotator_id == user.id)
        .group_by(VoteEvent.item_id)
        .subquery()
    )
    judged = session.execute(
        select(Item.id, Item.key, Item.payload).join(last, last.c.item_id == Item.id).order_by(last.c.last.desc())
    ).all()
    answers: dict[int, dict[str, str]] = {}
    for item_id, question, value in session.execute(
        select(VoteEvent.item_id, VoteEvent.question, VoteEvent.value)
        .join(Item, Item.id == VoteEvent.item_id)
        .where(Item.study_id == study_id, VoteEvent.annotator_id == user.id)
        .order_by(VoteEvent.id)
    ):
        answers.setdefault(item_id, {})[question] = value
    rows = [(i, k, p, "skipped") for i, k, p in skipped] + [(i, k, p, "judged") for i, k, p in judged]
    return [
        Earlier(item_id, key, state, _label(position, key, preview(payload), state, answers.get(item_id, {})))
        for position, (item_id, key, payload, state) in enumerate(rows)
    ]


def _label(position: int, key: str, preview: str, state: str, answers: dict[str, str]) -> str:
    """``3. PMUL4648.json — “I need a train…” — satisfied yes``"""
    preview = " ".join(preview.split())
    preview = preview if len(preview) <= 70 else preview[:69] + "…"
    answer_text = "(skipped)" if state == "skipped" else answer_words(answers)
    return f"{position + 1}. {key} — “{preview}” — {answer_text}"


def answer_words(answers: dict[str, str]) -> str:
    """An annotator's answers on one item in a few words: ``satisfied yes``, ``human_like yes, correct
    no``, ``5 of 6 marked correct`` (an SLU turn's acts); the go-back list, the saved mark and the
    answered-in-another-tab note say them alike.  A declared "unsure" (a study that offers it) is said so.

    >>> answer_words({"satisfied": "unsure"}), answer_words({"human_like": "1", "correct": "unsure"})
    ('satisfied unsure', 'human_like yes, correct unsure')
    """
    said = {q: ANSWER_WORDS[v] for q, v in answers.items() if v in ANSWER_WORDS}
    if len(said) <= 2:
        return ", ".join(f"{q} {words}" for q, words in said.items()) or "no answer"
    binary = [v for v in answers.values() if v in ("0", "1")]
    return f"{sum(v == '1' for v in binary)} of {len(binary)} marked correct"


ANSWER_WORDS = {"1": "yes", "0": "no", UNSURE: "unsure"}
