"""The SLU item (DSTC handbook, Appendix E): the turn (system prompt, recording, transcription box with
its status, ASR N-best) on the left, one compact row per recognised act (keys 1-9 flip an act) on the
right, *Save and next* (Ctrl+Enter), *Skip* and the comment above both; the turns around it below."""

from __future__ import annotations

from annotate.kinds.slu import item_view
from annotate.pages.views.base import ItemContext, context_turns, register_view
from formats.dstc import TRANSCRIPTION_STATUSES

ACT_KEYS = tuple("123456789")  # act n's shortcut; s is skip, Ctrl+Enter saves


def _flip(state, key: str) -> None:
    """A shortcut press: unmarked or incorrect -> correct, correct -> incorrect."""
    state[key] = "0" if state.get(key) == "1" else "1"


def render(st, ctx: ItemContext) -> None:
    """Everything to act on is on the first screen on arrival at 1400x900 (``tests/browser/test_browser_fold.py``),
    and *Save and next*, *Skip* and the transcription box at 400x800 too: first *Save and next*, *Skip* and
    the comment in one row; then on the left the turn (its system prompt, the recording, the transcription
    box with its status, then the ASR N-best it starts from) and on the right one compact row per
    recognised act.  The two turns before and after are context and come below both columns."""
    item, answers = ctx.item, ctx.answers
    view = item_view(item.payload)
    transcription_key = f"transcription-{item.id}"
    keys = {name: f"act-{item.id}-{position}" for position, (name, _score, _auto) in enumerate(view["acts"])}
    # Save, Skip and the comment first, over both columns: on a phone (the columns one under the other)
    # they are on the first screen too (issue 38)
    with st.container(horizontal=True, gap="small", vertical_alignment="center"):
        st.button(
            "Save and next",
            shortcut="Ctrl+Enter",
            key=ctx.key("slu-save"),
            type="primary",
            on_click=_save,
            # ids and the answers, never the item or ctx: Streamlit keeps a widget's callback arguments for
            # the session's life, and this button is a new widget per item (issue 37)
            args=(ctx.state, item.id, dict(answers), keys, transcription_key, f"status-{item.id}", ctx.on_answer, ctx.on_finish),
        )
        ctx.skip_button()
        with st.popover("Comment (optional)"):
            ctx.comment_box()
    left = ctx.state.pop(f"slu-unmarked-{item.id}", None)
    if left:
        st.warning(f"Mark every act correct or incorrect first ({left} left).")
    turn, acts = st.columns([1, 1], gap="medium")
    with turn:
        with st.container(border=True):
            st.caption("System prompt of this turn")
            st.text(view["system"])
            recording = ctx.cached("audio", ctx.audio) if item.payload.get("audio") else None  # read once per item
            if recording is not None:  # the caller's own words, when the call folder had the audio
                st.audio(recording[2], format=recording[1])
            if transcription_key not in ctx.state:
                ctx.state[transcription_key] = answers.get("transcription", view["transcription_start"])
            box, status_box = st.columns([3, 2])
            box.text_input("Transcription (what the caller actually said)", key=transcription_key)
            status_now = answers.get("transcription_status", view["transcription_status"])
            status_box.selectbox(
                "Transcription status",
                TRANSCRIPTION_STATUSES,
                index=TRANSCRIPTION_STATUSES.index(status_now),
                key=f"status-{item.id}",
            )
            st.caption("What the recogniser heard (ASR N-best)")
            st.text("  ·  ".join(view["asr"]) or "(nothing)")  # one paragraph: a phone keeps Save on its first screen
    with acts:
        for name, _score, auto in view["acts"]:  # the defaults live in the state, so a shortcut can flip them
            if keys[name] not in ctx.state:
                ctx.state[keys[name]] = answers.get(name, "1" if auto else None)
        st.markdown("**Recognised acts: does each capture the complete meaning?**")
        with st.container(gap="xsmall"):  # compact rows: eight acts fit on the first screen
            _act_rows(st, ctx, view, keys)
        if any(auto for _name, _score, auto in view["acts"]) and not answers:
            st.caption("auto: pre-marked correct, it matches the label file")
    if view["before"] or view["after"]:
        st.caption("Context: the turns before and after this one")
        context_turns(st, view["before"])
        st.text(f"[{item.payload['turn_index']}] (this turn)")
        context_turns(st, view["after"])


def _act_rows(st, ctx: ItemContext, view: dict, keys: dict[str, str]) -> None:
    """One row per recognised act: its shortcut key, its name and score, correct / incorrect."""
    if not view["acts"]:
        st.text("The recogniser found no act in this turn: check the transcription and save.")
    for position, (name, score, auto) in enumerate(view["acts"]):
        key = keys[name]
        shortcut = ACT_KEYS[position] if position < len(ACT_KEYS) else None
        press, label, choice = st.columns([2, 9, 7], vertical_alignment="center", gap="small")
        if shortcut:
            press.button(
                "toggle",
                shortcut=shortcut,
                key=f"{key}-key",
                on_click=_flip,
                args=(ctx.state, key),
                help=f"Press {shortcut}: correct, press again: incorrect",
            )
        unjudged = ctx.answers.get(name) is None
        label.text(f"{name}  {score:.2f}" + ("  auto" if auto and unjudged else ""))
        with choice:
            st.radio(
                f"act {position + 1}",
                ["1", "0"],
                format_func=lambda v: "correct" if v == "1" else "incorrect",
                horizontal=True,
                label_visibility="collapsed",
                key=key,
            )


def _save(
    state,
    item_id: int,
    answers: dict[str, str],
    keys: dict[str, str],
    transcription_key: str,
    status_key: str,
    on_answer,
    on_finish,
) -> None:
    """*Save and next* (an on_click callback): every act marked, the answers stored in one write that
    claims the next item; an act left unmarked keeps the item, with a warning.  ``answers``: the stored
    ones the tab drew."""
    choices = {name: state.get(key) for name, key in keys.items()}
    missing = [name for name, value in choices.items() if value is None]
    if missing:
        state[f"slu-unmarked-{item_id}"] = len(missing)
        return
    answers_now = {**choices, "transcription": state[transcription_key], "transcription_status": state[status_key]}
    # A change adds events only for what changed; a first judgement stores everything.
    changed = {q: v for q, v in answers_now.items() if answers.get(q) != v} if answers else answers_now
    if changed:
        on_answer(changed, True)
    else:
        on_finish()


register_view("slu", render, keys=(("1-9", "Flip act 1-9: correct, press again: incorrect"), ("Ctrl+Enter", "Save and next")))
