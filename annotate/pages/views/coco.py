"""The CoCo item (the CoCo paper's study): the system turn, the candidate user turn and the turn-level
state it should express, both questions with their buttons (keys 1-4), then the dialogue so far."""

from __future__ import annotations

from annotate.kinds.coco import YES_NO, item_view
from annotate.pages.views.base import ItemContext, context_turns, register_view

QUESTION_SHORT = {
    "human_like": "Human-like: fluent and consistent with the dialogue so far?",
    "correct": "Correct: expresses exactly the turn-level belief state shown?",
}
BUTTONS = {  # question -> (label, shortcut, value): the keys 1-4 of every CoCo item
    "human_like": (("Human-like: yes (1)", "1", "1"), ("Human-like: no (2)", "2", "0")),
    "correct": (("Correct: yes (3)", "3", "1"), ("Correct: no (4)", "4", "0")),
}


def render(st, ctx: ItemContext) -> None:
    """What is judged first, then the answers, then the context: at 1400x900 and at 400x800 the system
    utterance, the candidate user turn, its turn-level state, both questions with their buttons, Skip and
    the comment are on the first screen on arrival (``tests/browser/test_browser_fold.py``; the buttons
    are one row that wraps on a phone); the dialogue so far follows below, for reading on."""
    item, answers = ctx.item, ctx.answers
    view = item_view(item.payload)
    with st.container(border=True, gap="xsmall"):
        st.caption("Last system turn")
        st.text(view["system"])
        st.caption("User turn to judge")
        st.text(view["user"])
        st.caption("Turn-level belief state it should express")
        st.text(view["turn_label"])
    shown = {q: YES_NO.get(answers.get(q, ""), "—") for q in ("human_like", "correct")}
    questions = st.columns(2, vertical_alignment="bottom")  # each question over its two buttons
    for column, question in zip(questions, ("human_like", "correct")):
        column.caption(f"{QUESTION_SHORT[question]} Your answer: {shown[question]}")
    with st.container(horizontal=True, gap="small"):  # one row; on a phone they wrap, two or three to a row
        _buttons(st, ctx, answers)
        with st.popover("Comment"):
            ctx.comment_box()
    st.subheader("Dialogue so far")
    if not view["history"]:
        st.caption("(this is the first turn)")
    context_turns(st, view["history"])


def _buttons(st, ctx: ItemContext, answers: dict[str, str]) -> None:
    for question, (label, key, value) in [(q, b) for q in BUTTONS for b in BUTTONS[q]]:
        chosen = answers.get(question) == value
        other = "correct" if question == "human_like" else "human_like"
        st.button(
            label,
            shortcut=key,
            key=ctx.key(f"coco-{key}"),
            type="primary" if chosen else "secondary",
            use_container_width=True,
            on_click=ctx.on_answer,
            args=({question: value}, other in answers),  # complete once both questions have an answer
        )
    ctx.skip_button()


KEYS = (("1", "Human-like: yes"), ("2", "Human-like: no"), ("3", "Correct: yes"), ("4", "Correct: no"))
register_view("coco", render, keys=KEYS)
