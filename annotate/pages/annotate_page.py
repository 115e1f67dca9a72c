"""The annotator's page: one item at a time, for every task kind (the kind draws its item).

Everything from the data is shown with ``st.text`` (plain text, never Markdown or HTML).
The item area is an ``st.fragment``: a vote re-runs only the item, not the page.
"""

from __future__ import annotations

import time
from dataclasses import replace

import streamlit as st

from annotate import screen, service
from annotate.judging.loop import Judgement, NotLoggedIn, answer_words
from annotate.kinds import KINDS
from annotate.pages import join, outage
from annotate.pages.context import (
    app_engine,
    keep_study_in_url,
    require_user,
    scroll_to_top,
    show_refusal,
    study_in_url,
    tab_events,
)
from annotate.pages.views import VIEWS, ItemContext, key_rows, question_specs
from annotate.people.auth import PermissionDenied, StudyClosed
from annotate.service import StudySummary
from annotate.store.db import unreachable
from annotate.store.models import WORKER


def render() -> None:
    user = require_user()
    engine = app_engine()
    studies = [s for s in service.list_studies(engine, user) if s.items]  # only the studies this person is on
    with st.container(horizontal=True, vertical_alignment="center", gap="small"):  # the title, the guideline and the keys
        st.title("Annotate", width="stretch")
        st.button("Guideline", icon=":material/menu_book:", key="guideline", on_click=_show, args=("guideline",))
        st.button("Keys (?)", icon=":material/keyboard:", key="keys", on_click=_show, args=("keys",))
    st.html(NARROW_CSS)  # a phone's first screen holds the answer controls (issue 38)
    tab_events()
    if not studies:
        if user.role == WORKER:  # their study closed (budget spent, archived, link closed)
            st.info("This study has closed.")
            join.finished(user)  # the completion code, if they qualify
        else:
            st.info("There is no study open for you now.")
        return
    if user.role == WORKER:  # a crowd worker has the one study of their join link
        study = studies[0]
        st.text(study.name)  # an admin's text: plain, never Markdown
    else:
        study = st.selectbox(
            "Study",
            studies,
            label_visibility="collapsed",  # the box names the study and its kind: "Study" above it says nothing more
            index=_first_choice(engine, user, studies),
            format_func=lambda s: f"{s.name} — {KINDS[s.kind].label}",
            key="study-choice",
        )
        keep_study_in_url(study)  # a reload, a copied link, a new tab: this study (issue 38)
    if st.session_state.get("annotating-study") != study.id:  # a switch (or a new visit): free the other studies' items
        service.release_places(engine, user, keep_study=study.id)
        for key in [k for k in st.session_state if isinstance(k, str) and k.startswith("screen-")]:
            if key != screen.screen_key(study.id):  # their places went back: the next visit claims afresh
                del st.session_state[key]
        st.session_state["annotating-study"] = study.id
    shown = st.session_state.pop("annotate-dialog", None)  # Guideline, Keys or "?": whatever the item area shows
    if shown == "guideline":
        _guideline_dialog(study.guideline)
    elif shown == "keys":
        _keys_dialog(study.kind, study.questions)
    item_panel(study)


# On a narrow screen (a phone, 400 px) Streamlit's top padding and the page title take a quarter of the
# first screen: both smaller there, so that every kind's answer controls are on the first screen at 400x800
# (tests/browser/test_browser_fold.py).  Our own fixed CSS; nothing from the data goes in.
NARROW_CSS = """<style>
.st-key-tab-shown { display: none; }
@media (max-width: 640px) {
  [data-testid="stMainBlockContainer"] { padding-top: 3.25rem; }
  [data-testid="stMain"] h1 { font-size: 1.6rem; padding: 0 0 0.25rem 0; }
}
</style>"""


def _first_choice(engine, user, studies: list[StudySummary]) -> int:
    """Where the Study box starts when it has no choice of its own (a reload, a new tab, a new login, a
    return from another page): the study in the address, else the one this session was in, else the one
    the person was last working in (their held item's), else the first (issue 38: not the first study,
    perhaps finished, while their item waits in another)."""
    if "study-choice" in st.session_state:
        return 0  # the box keeps its own choice
    chosen = study_in_url(
        studies, st.session_state.get("annotating-study"), lambda: service.last_study(engine, user, [s.id for s in studies])
    )
    return next((i for i, s in enumerate(studies) if s.id == chosen), 0)


def _rerun_item() -> None:
    """Re-run only the item fragment; a full run when not inside a fragment rerun (e.g. AppTest)."""
    from streamlit.errors import StreamlitAPIException

    try:
        st.rerun(scope="fragment")
    except StreamlitAPIException:
        st.rerun()


def _seconds(item_id: int) -> float:
    return round(time.time() - st.session_state.get(f"shown-{item_id}", time.time()), 3)


def _outcome_note(study: StudySummary) -> None:
    """What became of this tab's last answer, when there is something to say (a refused answer)."""
    outcome = st.session_state.pop(f"outcome-{study.id}", None)  # an Outcome not stored
    if st.session_state.get(screen.OUTAGE):  # an answer sent during an outage: was it stored?
        settled = screen.settle(app_engine(), require_user(), st.session_state)
        if settled is not None:
            (st.success if settled.stored else st.warning)(settled.message)
    if outcome is not None:
        st.warning(outcome.message, icon=":material/move_down:")
        if outcome.detail:
            st.text(outcome.detail)  # names the item: plain text
    refusal = st.session_state.pop(f"refusal-{study.id}", None)
    if refusal is not None:
        show_refusal(*refusal)


@st.fragment
def item_panel(study: StudySummary) -> None:
    outage.shielded(lambda: _item_panel(study))  # a vote re-runs only this fragment: shield it too


def _item_panel(study: StudySummary) -> None:
    """One item: the screen comes from one read, or from the write of this tab's last answer (the run
    after a vote reads nothing: ``annotate.screen``)."""
    state = st.session_state
    if state.pop("rerun-app", False) or state.pop(LOGGED_OUT, False):  # a study chosen inside the item area; login gone
        st.rerun()
    failed = state.pop(CALLBACK_OUTAGE, None)
    if failed is not None:  # the last answer's write found the database unreachable
        raise failed
    engine, token = app_engine(), state.get("token")
    _outcome_note(study)
    try:
        now = screen.current(engine, None, study.id, state, token=token)
    except NotLoggedIn:
        st.error("Please log in.")
        state[LOGGED_OUT] = True
        return
    except StudyClosed:
        _closed(study)
        return
    except PermissionDenied as err:
        show_refusal("Not allowed.", str(err))
        return
    user, item = now.user, now.item
    if now.closed:
        _closed(study, user)
        return
    _tab_events()
    if _first_visit(study, now):
        return
    progress = now.progress  # after this tab's vote, M is not counted (the write path): the last read's M
    kept = f"for-you-{study.id}"
    if progress.open is None and not progress.quota and kept in state:
        progress = replace(progress, open=max(0, state[kept] - progress.mine))
    if progress.open is not None:
        state[kept] = progress.mine + progress.open
    fraction, words = progress.bar()
    st.progress(fraction, text=words)
    _toolbar(study)
    if item is None:
        if user.role == WORKER:
            join.finished(user)  # the completion code
        else:
            st.success("No more items for you in this study. Thank you!")
            _offer_next_study(study, user)
        _go_back(study, user, now.has_history)
        return
    elsewhere = screen.drawn(state, item.id, now.answers)
    if elsewhere is not None and state.get(f"told-{item.id}") != elsewhere:  # once per answer given elsewhere:
        state[f"told-{item.id}"] = elsewhere  # the tab's own boxes (SLU acts, transcription, comment) start again
        prefixes = tuple(f"{name}-{item.id}" for name in ("act", "transcription", "status", "comment"))
        for key in [k for k in state if isinstance(k, str) and k.startswith(prefixes)]:
            del state[key]
    review_id = state.get(screen.review_key(study.id))
    if review_id == item.id:
        if state.get(f"review-state-{item.id}") == "skipped":
            st.info("You skipped this item earlier; judge it now, or go back to new items.")
        else:
            st.info("You are changing an earlier judgement; your new answer is stored as a new vote.")
        st.button("Back to new items", key=f"leave-review-{item.id}", on_click=screen.leave, args=(state, study.id, item.id))
    if elsewhere is not None:  # the answer's words name the questions, an SLU act's from the data: plain text
        st.warning("Answered in another tab. A key here changes that answer (stored as a change).", icon=":material/tab:")
        st.text(f"Answered in another tab: {answer_words(elsewhere)}")
    scroll_to_top(f"item {int(item.id)}")  # every item starts at its top
    state.setdefault(f"shown-{item.id}", time.time())
    comment_key = f"comment-{item.id}"
    if comment_key not in state:
        state[comment_key] = now.comment
    context = ItemContext(
        item=item,
        answers=now.answers,
        state=state,
        vote=lambda chosen, done: (_answer(study.id, item.id, chosen, done, item.key), _rerun_item()),
        skip_button=lambda: st.button(
            "Skip", shortcut="s", key=f"skip-{item.id}", help="Pass on this item (s)", on_click=_skip, args=(study.id, item.id)
        ),
        comment_box=lambda: st.text_input("Comment (optional)", key=comment_key),
        finish=lambda: (screen.leave(state, study.id, item.id), _rerun_item()),
        audio=lambda: service.item_audio(engine, user, item.id),
        # The buttons' callbacks: Streamlit keeps a widget's callback for as long as the session lives,
        # and the item's buttons are new widgets per item, so these hold ids, never the item (issue 37)
        on_answer=_on_answer(study.id, item.id, item.key),
        on_finish=_on_finish(study.id, item.id),
        # the study's question specs, read with the study (the Study box's list), not again per run: a
        # question that offers "unsure" gets its Unsure button and key
        questions=question_specs(study.questions),
    )
    VIEWS[study.kind](st, context)
    _go_back(study, user, now.has_history)


def _on_answer(study_id: int, item_id: int, item_key: str):
    """An answer button's on_click: it holds the ids and the key of the item, not the item (Streamlit
    keeps every callback of the session's widgets: issue 37's soak)."""
    return lambda chosen, done: _answer(study_id, item_id, chosen, done, item_key)


def _on_finish(study_id: int, item_id: int):
    """Go on without storing anything (an on_click), holding the ids only (see :func:`_on_answer`)."""
    return lambda: screen.leave(st.session_state, study_id, item_id)


# --- the annotator's own view (issue 38, items 4 and 5) -------------------------------------------------

SAVED = "saved-mark"  # (study id, item id, item key, answers) of this tab's last stored answer


def _first_visit(study: StudySummary, now) -> bool:
    """On a person's first visit to a study that has a guideline (nothing judged or skipped there yet, and
    not started in this session) the guideline takes the main column, at a readable width, with one
    button to start; True while it is shown (the item waits, held for them).  A study without a guideline
    starts with its first item."""
    state = st.session_state
    started = f"guideline-read-{study.id}"
    if now.has_history or state.get(started) or now.item is None or not (study.guideline or "").strip():
        return False
    with st.container(border=True, width=760):
        st.subheader("Before you start: the guideline")
        with st.container(height=340, border=False):  # scrolls inside, so the button below stays on the first screen
            st.text(study.guideline or "No guideline was given for this study.")  # an admin's text: never Markdown
        st.button("Start judging", type="primary", key=f"start-{study.id}", on_click=state.__setitem__, args=(started, True))
        st.caption("The guideline stays one click away (Guideline, beside the title); press ? for the keys.")
    return True


def _toolbar(study: StudySummary) -> None:
    """Under the progress bar: the saved mark of this tab's last answer with its undo (u); and the
    guideline or the key overview when asked for (the buttons beside the title, or "?")."""
    state = st.session_state
    saved = state.get(SAVED)
    if saved is not None and saved[0] == study.id:
        with st.container(horizontal=True, vertical_alignment="center", gap="small"):
            st.text(f"✓ Saved: {answer_words(saved[3])}")  # the questions' names (an SLU act's from the data): plain text
            st.button(
                "Undo (u)",
                shortcut="u",
                key=f"undo-{study.id}",
                help="Reopen the item you answered last, with your answer shown, to change it",
                on_click=_undo,
                args=(study.id, saved[1]),
            )


def _show(what: str) -> None:
    st.session_state["annotate-dialog"] = what


@st.dialog("Guideline", width="large")
def _guideline_dialog(guideline: str) -> None:
    st.text(guideline or "No guideline was given for this study.")  # an admin's text: never Markdown


@st.dialog("Keys")
def _keys_dialog(kind: str, questions: tuple[dict, ...]) -> None:
    rows = key_rows(kind, questions)  # an "unsure" key only where the study offers "unsure"
    st.markdown("\n".join(f"- **{key}** {what}" for key, what in rows))  # our own words only
    st.caption("Keys act on the page, not while you type in a box (click outside it first).")


def _undo(study_id: int, item_id: int) -> None:
    """*Undo* (u): the item answered last comes back on the screen with the answer shown, as a change
    (the go-back list's *Open it* for that item); a late press on another study does nothing."""
    state = st.session_state
    saved = state.get(SAVED)
    if saved is None or saved[:2] != (study_id, item_id):
        return
    state[screen.review_key(study_id)] = item_id
    state[f"review-state-{item_id}"] = "judged"


def _tab_events() -> None:
    """The item area's hidden button for ``context.TAB_EVENTS`` (a press re-runs the item area only)."""
    st.button("Read the item again", key="tab-shown")


def _offer_next_study(study: StudySummary, user) -> None:
    """The next open study of this person (another one, with items), one click away; or a word that
    there is none."""
    others = [s for s in service.list_studies(app_engine(), user) if s.items and s.id != study.id]
    if not others:
        st.text("No other study is open for you now. Thank you!")
        return
    st.text(f"Next open study: {others[0].name}")  # an admin's text: plain
    st.button(
        "Go on with the next open study", type="primary", key=f"next-study-{study.id}", on_click=_choose_study, args=(others[0],)
    )


def _go_back(study: StudySummary, user, has_history: bool) -> None:
    """The go-back list, read only while its expander is open."""
    box = st.expander("Go back to an earlier item", key=f"back-box-{study.id}", on_change="rerun")
    with box:
        if not has_history:
            st.caption("You have not judged or skipped anything in this study yet.")
        elif box.open:
            try:
                earlier = {e.item_id: e for e in service.history(app_engine(), user, study.id)}
            except PermissionDenied as err:  # the study closed (or they left it) since the screen was read
                show_refusal("This list cannot be shown.", str(err))
                return
            choice = st.selectbox(
                "Item you skipped or judged (skipped first, then newest first)",
                list(earlier),
                format_func=lambda item_id: earlier[item_id].label,
                key=f"back-{study.id}",
            )
            if choice is not None:
                st.button("Open it", key=f"open-{study.id}", on_click=_open_earlier, args=(study.id, earlier[choice]))


def _open_earlier(study_id: int, earlier) -> None:
    """*Open it* (a callback): the chosen item comes on the screen for review, and the box closes so the
    item's buttons stay on the first screen."""
    state = st.session_state
    state[screen.review_key(study_id)] = earlier.item_id
    state[f"review-state-{earlier.item_id}"] = earlier.state
    state[f"back-box-{study_id}"] = False


def _answer(study_id: int, item_id: int, answers: dict[str, str], done: bool, item_key: str = "") -> None:
    """An answer button's callback: the answers stored on ``item_id`` (the item the tab showed) in one
    write that returns the next screen, before the item fragment runs; what went wrong is kept for
    that run to show."""
    state = st.session_state
    comment = state.get(f"comment-{item_id}", "")
    try:
        judgement = Judgement(item_id, answers, done=done, comment=comment, seconds=_seconds(item_id))
        outcome = screen.press(app_engine(), None, study_id, state, judgement, token=state.get("token"))
    except Exception as err:
        _keep_failure(study_id, err, answering=True)
        return
    if outcome is None:  # a late or repeated press (the tab moved on): nothing stored, nothing to say
        return
    if not outcome.stored:  # reassigned or answered in another tab meanwhile: said above the item
        state[f"outcome-{study_id}"] = outcome
        return
    known = state.get(SAVED)
    before = known[3] if known is not None and known[:2] == (study_id, item_id) else {}
    state[SAVED] = (study_id, item_id, item_key, {**before, **answers})  # the saved mark (and what undo reopens)


def _skip(study_id: int, item_id: int) -> None:
    """The Skip button's callback: one write passes on the item and claims the next (a late press, the
    item no longer on the tab's screen, does nothing)."""
    if screen.showing(st.session_state, study_id) != item_id:
        return
    try:
        screen.skip(app_engine(), None, study_id, st.session_state, item_id, token=st.session_state.get("token"))
    except Exception as err:
        _keep_failure(study_id, err)


def _keep_failure(study_id: int, err: Exception, *, answering: bool = False) -> None:
    """A callback's failure, for the run that follows to show (a callback draws nothing itself)."""
    state = st.session_state
    if isinstance(err, NotLoggedIn):
        state[LOGGED_OUT] = True
    elif isinstance(err, StudyClosed):  # closed before the answer arrived: not stored; the run says so
        state[CLOSED_REFUSED] = answering
    elif isinstance(err, PermissionDenied):
        state[f"refusal-{study_id}"] = ("Not allowed.", str(err))
    elif isinstance(err, ValueError):
        state[f"refusal-{study_id}"] = ("Refused; nothing was changed.", str(err))
    elif unreachable(err):
        state[CALLBACK_OUTAGE] = err
    else:
        raise err


LOGGED_OUT = "login-ended"
CALLBACK_OUTAGE = "callback-database-unreachable"
CLOSED_REFUSED = "answer-refused-study-closed"


def _closed(study: StudySummary, user=None) -> None:
    """The study closed under this annotator (archived, budget spent, crowd link closed): what became of
    their last answer, and where to go on (a worker: the completion code; others: the next open study)."""
    user = user or require_user()
    pressed = st.session_state.pop(screen.PRESSED, None) is not None  # an answer pressed, not sent
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
    _offer_next_study(study, user)


def _choose_study(study: StudySummary) -> None:
    st.session_state["study-choice"] = study
    st.session_state["rerun-app"] = True
