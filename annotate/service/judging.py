"""The annotator's loop through the door: one read or one write transaction per screen (``annotate.judging.loop``).

A press is one :class:`annotate.judging.loop.Judgement` (the page makes it once; :func:`answer` makes it from
keywords for scripts, benchmarks and tests); :func:`judge` stores it and returns the screen to show next.
"""

from __future__ import annotations

from sqlalchemy import Engine, select

from annotate.judging import loop
from annotate.kinds import KINDS
from annotate.people.auth import PermissionDenied
from annotate.store.db import not_sent, read_session, write_session
from annotate.store.models import Annotator, Item, ItemAudio, VoteEvent
from annotate.studies import StudyError, assignment


def screen(engine: Engine, user: Annotator | None, study_id: int, item_id: int, *, token: str | None = None) -> loop.Screen:
    """The screen of an item on the annotator's screen (or under review): one read transaction."""
    with read_session(engine) as session:
        return loop.read_screen(session, user, study_id, item_id, token=token)


def claim_screen(engine: Engine, user: Annotator | None, study_id: int, *, token: str | None = None) -> loop.Screen:
    """The annotator's next item, claimed, and its screen: one write transaction."""
    with write_session(engine) as session:
        return loop.claim_screen(session, user, study_id, token=token)


def answer(
    engine: Engine,
    user: Annotator | None,
    study_id: int,
    item_id: int,
    answers: dict[str, str],
    *,
    done: bool,
    comment: str = "",
    seconds: float | None = None,
    then: int | None = None,
    token: str | None = None,
    expected: dict[str, str] | None = None,
) -> loop.Screen:
    """One judgement, and the screen to show next: :func:`judge` with the :class:`loop.Judgement` made
    of these keywords (for scripts, benchmarks and tests; the page makes its Judgement itself)."""
    judgement = loop.Judgement(item_id, answers, done, comment, seconds, then, expected)
    return judge(engine, user, study_id, judgement, token=token)


def judge(
    engine: Engine, user: Annotator | None, study_id: int, judgement: loop.Judgement, *, token: str | None = None
) -> loop.Screen:
    """One judgement, and the screen to show next (the next item claimed when it is ``done``; its
    ``then``: an item to show instead, the one a tab left for a review): one write transaction.  The
    stored answers differ from its ``expected``: ``loop.AnsweredElsewhere``.  The transaction never
    began: the error raised is marked as not sent (``store.db.not_sent``)."""
    if not judgement.answers:
        raise StudyError("nothing to save")
    began = False
    try:
        with write_session(engine) as session:
            began = True
            return loop.answer(session, user, study_id, judgement, token=token)
    except Exception as err:
        if not began:  # the transaction never opened (SQLite: BEGIN IMMEDIATE failed): nothing was sent
            not_sent(err)
        raise


def skip_to_next(engine: Engine, user: Annotator | None, study_id: int, item_id: int, *, token: str | None = None) -> loop.Screen:
    """Pass on an item and claim the next, with its screen: one write transaction."""
    with write_session(engine) as session:
        return loop.skip(session, user, study_id, item_id, token=token)


def history(engine: Engine, user: Annotator, study_id: int) -> list[loop.Earlier]:
    """The go-back list (read when it is opened): skipped items first (oldest skip first), then judged
    ones (newest first), each with a line a person recognises."""
    with read_session(engine) as session:
        loop_access = loop.access(session, user, study_id)
        return loop.history(session, user, study_id, KINDS[loop_access.kind].preview)


def next_item(engine: Engine, user: Annotator, study_id: int) -> Item | None:
    """The user's next item (claimed for them), or None: nothing left, or a crowd worker's quota reached."""
    return claim_screen(engine, user, study_id).item


def item_for(engine: Engine, user: Annotator, item_id: int) -> Item:
    """An item the user holds or held; anything else is refused."""
    with read_session(engine) as session:
        study_id = session.scalar(select(Item.study_id).where(Item.id == item_id))
        if study_id is None:
            raise PermissionDenied("no such item")
        return loop.read_screen(session, user, study_id, item_id).item


def item_audio(engine: Engine, user: Annotator, item_id: int) -> tuple[str, str, bytes] | None:
    """The recording of an item the user holds or held: (file name, MIME type, bytes), or None."""
    item_for(engine, user, item_id)
    with read_session(engine) as session:
        audio = session.get(ItemAudio, item_id)
        return None if audio is None else (audio.file_name, audio.mime, audio.data)


def submit(
    engine: Engine, user: Annotator, item_id: int, answers: dict[str, str], *, comment: str = "", seconds: float | None = None
) -> None:
    """One judgement: the answers to an item's questions, in one transaction (the tab stays on it)."""
    if not answers:
        raise StudyError("nothing to save")
    with write_session(engine) as session:
        study_id = session.scalar(select(Item.study_id).where(Item.id == item_id))
        if study_id is None:
            raise PermissionDenied("no such item")
        loop.answer(session, user, study_id, loop.Judgement(item_id, answers, False, comment, seconds))


def release_places(engine: Engine, user: Annotator, *, keep_study: int | None = None) -> int:
    """Give back the user's held items (all of them, or all but those of ``keep_study``)."""
    with write_session(engine) as session:
        return assignment.release(session, user.id, keep_study=keep_study)


def skip(engine: Engine, user: Annotator, item_id: int) -> None:
    with write_session(engine) as session:
        assignment.skip_item(session, user, item_id)


def last_study(engine: Engine, user: Annotator, study_ids: list[int]) -> int | None:
    """Of ``study_ids``, the study this person was last working in: the one where they hold an item, else
    the one of their latest place (judged, skipped or given back).  A new tab or a new login opens it
    (issue 38)."""
    with read_session(engine) as session:
        return assignment.last_study(session, user.id, list(study_ids))


def my_answers(engine: Engine, user: Annotator, item_id: int) -> dict[str, str]:
    with read_session(engine) as session:
        return loop.answers_of(session, user, item_id)[0]


def my_comment(engine: Engine, user: Annotator, item_id: int) -> str:
    with read_session(engine) as session:
        return loop.answers_of(session, user, item_id)[1]


def answers_since(engine: Engine, user: Annotator, item_id: int, since) -> dict[str, str]:
    """The user's answers on the item stored at or after ``since`` (latest per question): whether an
    answer sent while the database was unreachable got through (``annotate.screen.settle``)."""
    with read_session(engine) as session:
        rows = session.execute(
            select(VoteEvent.question, VoteEvent.value)
            .where(VoteEvent.item_id == item_id, VoteEvent.annotator_id == user.id, VoteEvent.created_at >= since)
            .order_by(VoteEvent.id)
        ).all()
    return dict(rows)


def my_history(engine: Engine, user: Annotator, study_id: int) -> list[tuple[int, str, str]]:
    """(item id, a label without the condition, ``"skipped"`` or ``"judged"``) of the items this user
    skipped (oldest skip first) and then of those they judged (newest first)."""
    return [(e.item_id, e.key, e.state) for e in history(engine, user, study_id)]


def my_progress(engine: Engine, user: Annotator, study_id: int) -> dict:
    with read_session(engine) as session:
        progress = loop.progress_of(session, user, study_id)
    return {"mine": progress.mine, "items": progress.items, "study_fraction": progress.study_fraction}
