"""The annotator's page: one item at a time, for all three task kinds.

Everything from the data is shown with ``st.text`` (plain text, never Markdown or HTML).
The item area is an ``st.fragment``: a vote re-runs only the item, not the page.
"""

from __future__ import annotations

import time

import streamlit as st

from annotate import service
from annotate.pages.context import app_engine, guard, require_user, scroll_to_top
from annotate.service import StudySummary
from annotate.views import coco_view, satisfaction_view, slu_view, turn_status
from formats.dstc import TRANSCRIPTION_STATUSES

KIND_LABELS = {"satisfaction": "dialogue satisfaction", "coco": "user-turn judgements", "slu": "SLU labels"}
YES_NO = {"1": "yes", "0": "no"}


def render() -> None:
    user = require_user()
    engine = app_engine()
    studies = [s for s in service.list_studies(engine) if s.items]
    st.title("Annotate")
    if not studies:
        st.info("There is no study to work on yet.")
        return
    study = st.selectbox("Study", studies, format_func=lambda s: f"{s.name} — {KIND_LABELS[s.kind]}", key="study-choice")
    if st.session_state.get("annotating-study") != study.id:  # a switch (or a new visit): free the other studies' items
        service.release_places(engine, user, keep_study=study.id)
        st.session_state["annotating-study"] = study.id
    with st.expander("Guideline"):
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
    st.session_state.pop(f"review-{study.id}", None)
    st.session_state.pop(f"shown-{item_id}", None)
    _rerun_item()


def _seconds(item_id: int) -> float:
    return round(time.time() - st.session_state.get(f"shown-{item_id}", time.time()), 3)


@st.fragment
def item_panel(study: StudySummary, user_id: int) -> None:
    user = require_user()
    engine = app_engine()
    progress = service.my_progress(engine, user, study.id)
    st.progress(
        progress["study_fraction"],
        text=f"You have judged {progress['mine']} items · the study is {100 * progress['study_fraction']:.0f}% complete",
    )
    history = service.my_history(engine, user, study.id)
    review_key = f"review-{study.id}"
    with st.expander("Go back to an earlier item"):
        if history:
            labels = {item_id: f"{key} (skipped)" if state == "skipped" else f"{position + 1}. {key}"
                      for position, (item_id, key, state) in enumerate(history)}  # fmt: skip
            choice = st.selectbox("Item you skipped or judged (skipped first, then newest first)", list(labels),
                                  format_func=labels.get, key=f"back-{study.id}")  # fmt: skip
            if st.button("Open it", key=f"open-{study.id}"):
                st.session_state[review_key] = choice
        else:
            st.caption("You have not judged or skipped anything in this study yet.")
    review_id = st.session_state.get(review_key)
    item = guard(lambda: service.item_for(engine, user, review_id)) if review_id else service.next_item(engine, user, study.id)
    if not item or item is True:
        st.success("No more items for you in this study. Thank you!")
        return
    if review_id:
        if any(item_id == review_id and state == "skipped" for item_id, _key, state in history):
            st.info("You skipped this item earlier; judge it now, or go back to new items.")
        else:
            st.info("You are changing an earlier judgement; your new answer is stored as a new vote.")
        if st.button("Back to new items", key="leave-review"):
            _finish(study, item.id)
    scroll_to_top(f"item {int(item.id)}")  # every item starts at its top
    st.session_state.setdefault(f"shown-{item.id}", time.time())
    answers = service.my_answers(engine, user, item.id)
    comment_key = f"comment-{item.id}"
    if comment_key not in st.session_state:
        st.session_state[comment_key] = service.my_comment(engine, user, item.id)
    {"satisfaction": satisfaction_item, "coco": coco_item, "slu": slu_item}[study.kind](study, item, answers)


def _vote(study: StudySummary, item, answers: dict[str, str], *, done: bool) -> None:
    engine, user = app_engine(), require_user()
    comment = st.session_state.get(f"comment-{item.id}", "")
    saved = guard(lambda: service.submit(engine, user, item.id, answers, comment=comment, seconds=_seconds(item.id)))
    if saved and done:
        _finish(study, item.id)
    elif saved:
        _rerun_item()


def _skip_button(study: StudySummary, item) -> None:
    if st.button("Skip", shortcut="s", key="skip", help="Pass on this item (s)"):
        service.skip(app_engine(), require_user(), item.id)
        _finish(study, item.id)


# --- satisfaction -------------------------------------------------------------------------


def satisfaction_item(study: StudySummary, item, answers: dict[str, str]) -> None:
    turns, first_error = satisfaction_view(item.payload)
    st.subheader("How well did the model track the user's intent?")
    st.caption("All turns match exactly." if first_error is None else f"The first error entered at turn {first_error}.")
    for turn in turns:
        with st.container(border=True):
            colour = "green" if turn.exact else ("orange" if turn.local else "red")
            st.markdown(f":{colour}[**{turn_status(turn)}**]")
            st.text(f"Sys  {turn.system}\nUsr  {turn.user}")
            st.text(f"GT   {turn.gold}\nPR   {turn.pred}\nMatched: {turn.exact}")
            if not turn.exact:
                st.text(f"     missing: {turn.missing}\n     extra: {turn.extra}\n     wrong value: {turn.wrong}")
            st.text(f"     new this turn  GT: {turn.new_gold}   PR: {turn.new_pred}")
    current = answers.get("satisfied")
    if current is not None:
        st.caption(f"Your current answer: {'satisfied' if current == '1' else 'not satisfied'}")
    st.text_input("Comment (optional)", key=f"comment-{item.id}")
    left, middle, right = st.columns(3)
    if left.button("Satisfied (1)", shortcut="1", key="sat-1", type="primary" if current == "1" else "secondary"):
        _vote(study, item, {"satisfied": "1"}, done=True)
    if middle.button("Not satisfied (0)", shortcut="0", key="sat-0", type="primary" if current == "0" else "secondary"):
        _vote(study, item, {"satisfied": "0"}, done=True)
    with right:
        _skip_button(study, item)


# --- coco ---------------------------------------------------------------------------------


def _context_turns(turns) -> None:
    """Earlier or later turns as plain text: ``[index] Sys ...`` / ``[index] Usr ...``."""
    for index, system, user_turn in turns:
        st.text(f"[{index}] Sys  {system}\n[{index}] Usr  {user_turn}")


def coco_item(study: StudySummary, item, answers: dict[str, str]) -> None:
    view = coco_view(item.payload)
    st.subheader("Dialogue so far")
    if not view["history"]:
        st.caption("(this is the first turn)")
    _context_turns(view["history"])
    with st.container(border=True):
        st.caption("System")
        st.text(view["system"])
        st.caption("User turn to judge")
        st.text(view["user"])
        st.caption("Turn-level belief state it should express")
        st.text(view["turn_label"])
    st.text_input("Comment (optional)", key=f"comment-{item.id}")
    shown = {q: YES_NO.get(answers.get(q, ""), "—") for q in ("human_like", "correct")}
    st.caption(f"Your answers: human-like {shown['human_like']}, correct {shown['correct']}")
    columns = st.columns(5)
    buttons = (
        ("Human-like: yes (1)", "1", "human_like", "1"), ("Human-like: no (2)", "2", "human_like", "0"),
        ("Correct: yes (3)", "3", "correct", "1"), ("Correct: no (4)", "4", "correct", "0"),
    )  # fmt: skip
    for column, (label, key, question, value) in zip(columns, buttons):
        chosen = answers.get(question) == value
        if column.button(label, shortcut=key, key=f"coco-{key}", type="primary" if chosen else "secondary"):
            other = "correct" if question == "human_like" else "human_like"
            _vote(study, item, {question: value}, done=other in answers)
    with columns[4]:
        _skip_button(study, item)


# --- slu ----------------------------------------------------------------------------------


def slu_item(study: StudySummary, item, answers: dict[str, str]) -> None:
    view = slu_view(item.payload)
    st.subheader("Context")
    _context_turns(view["before"])
    with st.container(border=True):
        st.caption("System prompt of this turn")
        st.text(view["system"])
        st.caption("What the recogniser heard (ASR N-best)")
        st.text("\n".join(view["asr"]) or "(nothing)")
        transcription_key = f"transcription-{item.id}"
        if transcription_key not in st.session_state:
            st.session_state[transcription_key] = answers.get("transcription", view["transcription"])
        st.text_input("Transcription (what the caller actually said)", key=transcription_key)
        status_now = answers.get("transcription_status", view["transcription_status"])
        status = st.selectbox(
            "Transcription status",
            TRANSCRIPTION_STATUSES,
            index=TRANSCRIPTION_STATUSES.index(status_now),
            key=f"status-{item.id}",
        )
    _context_turns(view["after"])
    st.subheader("Recognised acts: does each capture the complete meaning?")
    choices = {}
    for position, (name, score, auto) in enumerate(view["acts"]):
        current = answers.get(name)
        default = current if current is not None else ("1" if auto else None)
        left, right = st.columns([3, 2])
        with left:
            st.text(
                f"{name}   score {score:.2f}" + ("   (auto: exact match with the label file)" if auto and current is None else "")
            )
        with right:
            choices[name] = st.radio(
                f"act {position + 1}", ["1", "0"], index=None if default is None else ["1", "0"].index(default),
                format_func=lambda v: "correct" if v == "1" else "incorrect", horizontal=True,
                label_visibility="collapsed", key=f"act-{item.id}-{position}",
            )  # fmt: skip
    st.text_input("Comment (optional)", key=f"comment-{item.id}")
    left, right = st.columns(2)
    if left.button("Save and next (Ctrl+Enter)", shortcut="Ctrl+Enter", key="slu-save", type="primary"):
        missing = [name for name, value in choices.items() if value is None]
        if missing:
            st.warning(f"Mark every act correct or incorrect first ({len(missing)} left).")
        else:
            answers_now = {**choices, "transcription": st.session_state[transcription_key], "transcription_status": status}
            # A change adds events only for what changed; a first judgement stores everything.
            changed = {q: v for q, v in answers_now.items() if answers.get(q) != v} if answers else answers_now
            if changed:
                _vote(study, item, changed, done=True)
            else:
                _finish(study, item.id)
    with right:
        _skip_button(study, item)
