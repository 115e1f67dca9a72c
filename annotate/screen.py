"""What one browser tab shows, and where its answers go (issue 23, item 1).

Every vote carries the item its tab showed (the item id names the condition too), and is stored on
that item or refused with a message — never redirected to another item:

- A tab remembers the item on its screen (in that tab's own session state, ``state``) until its
  annotator acts on it (answers it completely, skips it, leaves a review).  Every run of the page —
  including the run a click or key press starts — shows that same item; only an action of the tab
  moves it on.  So an answer is stored on the item the annotator was looking at.
- When that item's place timed out and the item went to someone else meanwhile, the store refuses
  the answer (``votes.Reassigned``): the tab is told "this item was reassigned" and shows its next item.
- Two tabs of one annotator each keep their own screen: an answer in the second tab to the item the
  first tab already judged is stored on that item (a change of answer, a new event), not on the item
  the first tab moved on to.
- Two tabs told apart (issue 38): a tab remembers the answers it showed on its item (:func:`drawn`).
  When the item's stored answers differ from what the tab knew of them (another tab of the same person
  answered it), the tab says so and shows them; a press made before it said so stores nothing
  (``loop.AnsweredElsewhere``: "answered in another tab"), and a press made after is an explicit change.
- The pages key every answer button by the item id (``ItemContext.key``): a press that reaches the
  server after its tab moved on (a quick double press) matches no button on the new screen and stores
  nothing.

No Streamlit here: ``state`` is any mutable mapping (the page passes ``st.session_state``), so
``tests/store/test_screen_properties.py`` drives tabs exactly as the page does.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import dataclass, replace
from datetime import datetime

from sqlalchemy import Engine

from annotate import service
from annotate.judging.loop import AnsweredElsewhere, Judgement, NotLoggedIn, Screen
from annotate.judging.votes import Reassigned
from annotate.people.auth import PermissionDenied, StudyClosed
from annotate.store.db import unreachable, was_sent
from annotate.store.models import Annotator, Item, utcnow

REASSIGNED = "This item was reassigned to another annotator; here is your next one."
ELSEWHERE = "Not stored: this item was answered in another tab meanwhile."  # the page then shows that answer


def screen_key(study_id: int) -> str:
    return f"screen-{study_id}"


def review_key(study_id: int) -> str:
    return f"review-{study_id}"


@dataclass(frozen=True)
class Outcome:
    """What became of an answer: stored or not, and what the annotator is told about it."""

    stored: bool
    message: str = ""
    detail: str = ""
    screen: Screen | None = None  # the screen to show next (a stored answer)


def _handed(state: MutableMapping, study_id: int) -> Screen | None:
    """The screen the tab's last write returned, once: the run after a vote shows it without reading."""
    return state.pop(f"handed-{study_id}", None)


def _remember(state: MutableMapping, study_id: int, screen: Screen) -> Screen:
    """The item of a screen a write returned becomes the tab's screen (unless the tab is reviewing)."""
    if screen.item is not None and state.get(review_key(study_id)) is None:
        state[screen_key(study_id)] = screen.item.id
    state[f"handed-{study_id}"] = screen
    return screen


def current(engine: Engine, user: Annotator | None, study_id: int, state: MutableMapping, *, token: str | None = None) -> Screen:
    """The screen this tab shows in this run: of the item under review, else of the item already on its
    screen, else of the annotator's next item (claimed), which becomes the screen.  A run right after
    this tab's vote or skip shows the screen that write returned (no read); any other run reads once."""
    review = state.get(review_key(study_id))
    shown_id = review if review is not None else state.get(screen_key(study_id))
    handed = _handed(state, study_id)
    if handed is not None and (handed.item.id == shown_id if handed.item is not None else shown_id is None):
        return handed
    if shown_id is not None:
        try:
            return service.screen(engine, user, study_id, shown_id, token=token)
        except PermissionDenied as err:  # no longer theirs to see (removed from the study): start afresh
            if isinstance(err, (StudyClosed, NotLoggedIn)):
                raise
            state.pop(review_key(study_id), None)
            state.pop(screen_key(study_id), None)
    screen = service.claim_screen(engine, user, study_id, token=token)
    if screen.item is not None:
        state[screen_key(study_id)] = screen.item.id
    return screen


def shown(engine: Engine, user: Annotator, study_id: int, state: MutableMapping) -> Item | None:
    """The item this tab shows in this run (:func:`current`'s item).  None: nothing left."""
    return current(engine, user, study_id, state).item


def _displayed(item_id: int) -> str:
    return f"displayed-{item_id}"  # the answers on the tab's screen in its last run: a press's "expected"


def _known(item_id: int) -> str:
    return f"known-{item_id}"  # the answers this tab knew: on its first drawing of the item, then its own


def drawn(state: MutableMapping, item_id: int, answers: dict[str, str]) -> dict[str, str] | None:
    """The page draws the item with its stored ``answers``: remembered as the tab's screen (the next
    press expects them).  Returns them when they are not what this tab knew (another tab answered the
    item since this one first drew it, and this tab stored nothing since): the page says so."""
    state[_displayed(item_id)] = dict(answers)
    known = state.setdefault(_known(item_id), dict(answers))
    if answers == known:
        return None
    state.pop(LAST_PRESS, None)  # a key here now is a change of the other tab's answer, never a "repeat"
    return dict(answers)


def leave(state: MutableMapping, study_id: int, item_id: int | None = None) -> None:
    """The tab is done with its item (judged, skipped, review left): the next run shows the next one."""
    state.pop(review_key(study_id), None)
    state.pop(PRESSED, None)
    if item_id is None or state.get(screen_key(study_id)) == item_id:
        state.pop(screen_key(study_id), None)
    if item_id is not None:
        state.pop(f"shown-{item_id}", None)
        state.pop(f"view-{item_id}", None)  # the page's rendered view of the item (annotate.pages.views)
        state.pop(_displayed(item_id), None)
        state.pop(_known(item_id), None)


def vote(
    engine: Engine,
    user: Annotator | None,
    study_id: int,
    state: MutableMapping,
    judgement: Judgement,
    *,
    token: str | None = None,
) -> Outcome:
    """Store the tab's answers on the judgement's item (the item it showed), or refuse them; its
    ``then`` and ``expected`` come from the tab (the item left for a review, the answers it showed).
    One write transaction stores the answers and returns the next screen (``Outcome.screen``; the next
    run shows it).  Refusals other than a reassigned item (``PermissionDenied``, ``ValueError``)
    propagate for the page to show."""
    item_id, done = judgement.item_id, judgement.done
    state.pop(PRESSED, None)
    state[PENDING] = Pending(study_id, item_id, dict(judgement.answers), utcnow(), done)
    reviewing = state.get(review_key(study_id)) == item_id
    then = state.get(screen_key(study_id)) if reviewing else None
    try:
        screen = service.judge(
            engine, user, study_id, replace(judgement, then=then, expected=state.get(_displayed(item_id))), token=token
        )
    except Reassigned as err:
        state.pop(PENDING, None)
        leave(state, study_id, item_id)
        return Outcome(False, REASSIGNED, str(err))
    except AnsweredElsewhere:  # the item stays; the next run shows its answers now, and says so
        state.pop(PENDING, None)
        return Outcome(False, ELSEWHERE)
    except Exception as err:
        if not unreachable(err):  # refused: nothing pending
            state.pop(PENDING, None)
        elif not was_sent(err):  # the database could not be reached before it was sent
            state.pop(PENDING, None)
            state[PRESSED] = item_id
        raise  # sent, not acknowledged: pending until the database can tell (settle)
    state.pop(PENDING, None)
    state[LAST_SAVED] = item_id
    if done:
        leave(state, study_id, item_id)
    else:  # the item stays (one of CoCo's two questions): this tab's own answer is known, not "elsewhere"
        state[_displayed(item_id)] = state[_known(item_id)] = dict(screen.answers)
    _remember(state, study_id, screen)
    return Outcome(True, screen=screen)


def showing(state: MutableMapping, study_id: int) -> int | None:
    """The id of the item this tab shows: the item under review, else the item on its screen."""
    review = state.get(review_key(study_id))
    return review if review is not None else state.get(screen_key(study_id))


LAST_PRESS = "last-stored-press"  # (item id, answers) of this tab's last stored answer


def press(
    engine: Engine,
    user: Annotator | None,
    study_id: int,
    state: MutableMapping,
    judgement: Judgement,
    *,
    token: str | None = None,
) -> Outcome | None:
    """An answer button's press, as the page's callback gets it: :func:`vote`, unless the press is late
    or repeated, and then nothing is stored (None).  Late: the tab no longer shows ``item_id`` (a complete
    judgement moved it on).  Repeated: an incomplete judgement (``done`` False: the item stays, e.g. one
    of CoCo's two questions) with the same answers as this tab's last stored one, which would store
    nothing new.  Streamlit keeps a button's press when a run is interrupted by the next request and
    replays it in the run that follows, where the button's callback is still registered although its
    item has left the screen (found by ``tests/scaleout``: one vote event more than presses)."""
    item_id, answers = judgement.item_id, dict(judgement.answers)
    if showing(state, study_id) != item_id:
        return None
    if not judgement.done and state.get(LAST_PRESS) == (item_id, answers):
        return None
    outcome = vote(engine, user, study_id, state, judgement, token=token)
    if outcome.stored:
        state[LAST_PRESS] = (item_id, answers)
    return outcome


# --- when the database goes away -------------------------------------------------------------

PENDING = "pending-answer"  # an answer sent when the database could not be reached
LAST_SAVED = "last-saved"  # the item of the last answer the database acknowledged


@dataclass(frozen=True)
class Pending:
    study_id: int
    item_id: int
    answers: dict[str, str]
    sent_at: datetime
    done: bool = True  # the judgement was complete: once stored, the tab moves on


PRESSED = "answer-pressed"  # an answer was pressed but could not be sent (the item id)


OUTAGE = "database-outage-seen"  # this tab was told the database could not be reached


def note_outage(state: MutableMapping) -> None:
    state[OUTAGE] = True


def last_answer(state: MutableMapping) -> str:
    """What the tab can say about its last answer while the database cannot be reached:
    ``"not saved"`` (pressed, never sent), ``"pending"`` (sent, not acknowledged: stored only if its
    commit got through), ``"saved"`` (acknowledged before the outage) or ``""`` (no answer yet)."""
    if state.get(PENDING) is not None:
        return "pending"
    if state.get(PRESSED) is not None:
        return "not saved"
    return "saved" if state.get(LAST_SAVED) is not None else ""


def settle(engine: Engine, user: Annotator, state: MutableMapping) -> Outcome | None:
    """Once the database answers again: was the pending answer stored?  An answer whose commit was cut
    off may or may not have got through; the vote events say which.  None when nothing was pending."""
    if not state.pop(OUTAGE, False):
        return None
    pending, pressed = state.pop(PENDING, None), state.pop(PRESSED, None)
    if pending is None:
        if pressed is not None:
            return Outcome(False, "The database is back. Your last answer was not saved: please answer this item again.")
        return None
    stored = service.answers_since(engine, user, pending.item_id, pending.sent_at)
    if all(stored.get(question) == value for question, value in pending.answers.items()):
        state[LAST_SAVED] = pending.item_id
        if pending.done:
            leave(state, pending.study_id, pending.item_id)
        else:  # this tab's own answer, stored: known, not "answered in another tab"
            mine = {**state.get(_known(pending.item_id), {}), **pending.answers}
            state[_known(pending.item_id)] = state[_displayed(pending.item_id)] = mine
        return Outcome(True, "The database is back. Your last answer was saved.")
    return Outcome(False, "The database is back. Your last answer was not saved: please answer this item again.")


def skip(engine: Engine, user: Annotator | None, study_id: int, state: MutableMapping, item_id: int, *, token=None) -> Screen:
    """Pass on the item; the next item is claimed in the same write and shown by the next run."""
    screen = service.skip_to_next(engine, user, study_id, item_id, token=token)
    leave(state, study_id, item_id)
    return _remember(state, study_id, screen)
