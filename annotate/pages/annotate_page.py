"""The annotator's page: one item at a time, for every task kind (the kind draws its item).

Everything from the data is shown with ``st.text`` (plain text, never Markdown or HTML).
The item area is an ``st.fragment``: a vote re-runs only the item, not the page.
"""

from __future__ import annotations

import time

import streamlit as st

from annotate import screen, service
from annotate.auth import StudyClosed
from annotate.kinds import KINDS, ItemContext
from annotate.pages import join, outage
from annotate.pages.context import app_engine, guard, require_user, scroll_to_top
from annotate.service import StudySummary
from annotate.store.models import WORKER


def render() -> None:
    user = require_user()
    engine = app_engine()
    studies = [s for s in service.list_studies(engine, user) if s.items]  # only the studies this person is on
    st.title("Annotate")
    if not studies:
        if user.role == WORKER:  # their study closed (budget spent, archived, link closed)
            st.info("This study has closed.")
            join.finished(user)  # the completion code, if they qualify
        else:
            st.info("There is no study open for you now.")
        return
    if user.role == WORKER:  # a crowd worker has the one study of their join link
        study = studies[0]
        st.caption(study.name)
    else:
        study = st.selectbox("Study", studies, format_func=lambda s: f"{s.name} — {KINDS[s.kind].label}", key="study-choice")
    if st.session_state.get("annotating-study") != study.id:  # a switch (or a new visit): free the other studies' items
        service.release_places(engine, user, keep_study=study.id)
        for key in [k for k in st.session_state if isinstance(k, str) and k.startswith("screen-")]:
            if key != screen.screen_key(study.id):  # their places went back: the next visit claims afresh
                del st.session_state[key]
        st.session_state["annotating-study"] = study.id
    with st.sidebar.expander("Guideline", icon=":material/menu_book:"):  # beside the item, never pushing it down
        st.text(study.guideline or "No guideline was given for this study.")
    item_panel(study, user.id)


def _rerun_item() -> None:
    """Re-run only the item fragment; a full run when not inside a fragment rerun (e.g. AppTest)."""
    from streamlit.errors import StreamlitAPIException

    try:
        st.rerun(scope="fragment")
    except StreamlitAPIException:
        st.rerun()


def _finish(study: StudySummary, item_id: int) -> None:
    screen.leave(st.session_state, study.id, item_id)
    _rerun_item()


def _seconds(item_id: int) -> float:
    return round(time.time() - st.session_state.get(f"shown-{item_id}", time.time()), 3)


def _outcome_note(study: StudySummary) -> None:
    """What became of this tab's last answer, when there is something to say (a refused answer)."""
    outcome = st.session_state.pop(f"outcome-{study.id}", None)
    settled = screen.settle(app_engine(), require_user(), st.session_state)  # an answer sent during an outage
    if settled is not None:
        (st.success if settled.stored else st.warning)(settled.message)
    if outcome is not None:
        st.warning(outcome.message, icon=":material/move_down:")
        st.text(outcome.detail)  # names the item: plain text


@st.fragment
def item_panel(study: StudySummary, user_id: int) -> None:
    outage.shielded(lambda: _item_panel(study))  # a vote re-runs only this fragment: shield it too


def _item_panel(study: StudySummary) -> None:
    if st.session_state.pop("rerun-app", False):  # another study was chosen from inside the item area
        st.rerun()
    user = require_user()
    engine = app_engine()
    progress = service.my_progress(engine, user, study.id)
    quota = service.crowd_status(engine, user)["quota"] if user.role == WORKER else None
    if quota:
        st.progress(min(1.0, progress["mine"] / quota), text=f"You have judged {progress['mine']} of {quota} items")
    else:
        st.progress(
            progress["study_fraction"],
            text=f"You have judged {progress['mine']} items · the study is {100 * progress['study_fraction']:.0f}% complete",
        )
    history = service.my_history(engine, user, study.id)
    review_key = screen.review_key(study.id)
    with st.expander("Go back to an earlier item"):
        if history:
            labels = service.history_labels(engine, user, study.id, history)
            choice = st.selectbox(
                "Item you skipped or judged (skipped first, then newest first)",
                list(labels),
                format_func=labels.get,
                key=f"back-{study.id}",
            )
            if st.button("Open it", key=f"open-{study.id}"):
                st.session_state[review_key] = choice
        else:
            st.caption("You have not judged or skipped anything in this study yet.")
    _outcome_note(study)
    review_id = st.session_state.get(review_key)
    # The item on this tab's screen stays until this tab acts on it, so every answer lands on the item
    # the annotator saw (annotate.screen).
    try:
        item = guard(lambda: screen.shown(engine, user, study.id, st.session_state), keep=StudyClosed)
    except StudyClosed:
        _closed(study, user)
        return
    if not item or item is True:
        if user.role == WORKER:
            join.finished(user)  # the completion code
        else:
            st.success("No more items for you in this study. Thank you!")
        return
    if review_id:
        if any(item_id == review_id and state == "skipped" for item_id, _key, state in history):
            st.info("You skipped this item earlier; judge it now, or go back to new items.")
        else:
            st.info("You are changing an earlier judgement; your new answer is stored as a new vote.")
        if st.button("Back to new items", key=f"leave-review-{item.id}"):
            _finish(study, item.id)
    scroll_to_top(f"item {int(item.id)}")  # every item starts at its top
    st.session_state.setdefault(f"shown-{item.id}", time.time())
    answers = service.my_answers(engine, user, item.id)
    comment_key = f"comment-{item.id}"
    if comment_key not in st.session_state:
        st.session_state[comment_key] = service.my_comment(engine, user, item.id)
    context = ItemContext(
        item=item,
        answers=answers,
        state=st.session_state,
        vote=lambda chosen, done: _vote(study, item, chosen, done=done),
        skip_button=lambda: _skip_button(study, item),
        comment_box=lambda: st.text_input("Comment (optional)", key=f"comment-{item.id}"),
        finish=lambda: _finish(study, item.id),
        audio=lambda: service.item_audio(engine, user, item.id),
    )
    KINDS[study.kind].render(st, context)
    st.session_state.pop(screen.PRESSED, None)  # this run reached the database: nothing left unsent


def _vote(study: StudySummary, item, answers: dict[str, str], *, done: bool) -> None:
    """The answers given to ``item``, the item this run shows (the tab's screen), stored on it or refused."""
    engine, user = app_engine(), require_user()
    comment = st.session_state.get(f"comment-{item.id}", "")
    try:
        outcome = guard(
            lambda: screen.vote(
                engine, user, study.id, st.session_state, item.id, answers, done=done, comment=comment, seconds=_seconds(item.id)
            ),
            keep=StudyClosed,
        )
    except StudyClosed:  # closed before the answer arrived: not stored; the rerun says the study has closed
        st.session_state[CLOSED_REFUSED] = True
        _rerun_item()
    if not outcome:  # refused for another reason: shown by guard, the item stays
        return
    if not outcome.stored:  # reassigned meanwhile: say so above the next item
        st.session_state[f"outcome-{study.id}"] = outcome
    _rerun_item()


CLOSED_REFUSED = "answer-refused-study-closed"


def _closed(study: StudySummary, user) -> None:
    """The study closed under this annotator (archived, budget spent, crowd link closed): what became of
    their last answer, and where to go on (a worker: the completion code; others: the next open study)."""
    pressed = st.session_state.pop(screen.PRESSED, None) is not None  # an answer key in this run, not sent
    screen.leave(st.session_state, study.id)
    st.info("This study has closed.", icon=":material/lock:")
    st.text(study.name)  # an admin's text: never Markdown
    if st.session_state.pop(CLOSED_REFUSED, False) or pressed:
        st.warning("Your last answer was not stored: the study closed before it arrived.")
    elif screen.last_answer(st.session_state) == "saved":
        st.success("Your last answer was saved.")
    if user.role == WORKER:
        join.finished(user)
        return
    others = [s for s in service.list_studies(app_engine(), user) if s.items and s.id != study.id]
    if not others:
        st.text("No other study is open for you now. Thank you!")
        return
    st.text(f"Next open study: {others[0].name}")
    st.button(
        "Go on with the next open study", type="primary", key=f"next-study-{study.id}", on_click=_choose_study, args=(others[0],)
    )


def _choose_study(study: StudySummary) -> None:
    st.session_state["study-choice"] = study
    st.session_state["rerun-app"] = True


def _skip_button(study: StudySummary, item) -> None:
    if st.button("Skip", shortcut="s", key=f"skip-{item.id}", help="Pass on this item (s)"):
        guard(lambda: screen.skip(app_engine(), require_user(), study.id, st.session_state, item.id))
        _rerun_item()
