"""The CoCo item (the CoCo paper's study): the system turn, the candidate user turn and the turn-level
state it should express, both questions with their buttons (keys 1-4; in a study that offers "unsure",
an *Unsure* button per question too, keys n and m), then the dialogue so far."""

from __future__ import annotations

from annotate.kinds.coco import YES_NO, item_view
from annotate.pages.views.base import ItemContext, context_turns, register_view
from formats.tidy import UNSURE

QUESTION_SHORT = {
    "human_like": "Human-like: fluent and consistent with the dialogue so far?",
    "correct": "Correct: expresses exactly the turn-level belief state shown?",
}
BUTTONS = {  # question -> (label, shortcut, value): the keys 1-4 of every CoCo item
    "human_like": (("Human-like: yes (1)", "1", "1"), ("Human-like: no (2)", "2", "0")),
    "correct": (("Correct: yes (3)", "3", "1"), ("Correct: no (4)", "4", "0")),
}
UNSURE_BUTTONS = {  # question -> its Unsure button, after its other two, in a study that offers "unsure"
    "human_like": ("Human-like: unsure (n)", "n", UNSURE),
    "correct": ("Correct: unsure (m)", "m", UNSURE),
}
WORDS = {**YES_NO, UNSURE: "unsure"}


def render(st, ctx: ItemContext) -> None:
    """What is judged first, then the answers, then the context: at 1400x900 and at 400x800 the system
    utterance, the candidate user turn, its turn-level state, both questions with their buttons, Skip and
    the comment are on the first screen on arrival (``tests/browser/test_browser_fold.py``; the buttons
    are one row that wraps on a phone; a row per question where the study offers "unsure"); the dialogue
    so far follows below, for reading on."""
    item, answers = ctx.item, ctx.answers
    view = item_view(item.payload)
    with st.container(border=True, gap="xsmall"):
        st.caption("Last system turn")
        st.text(view["system"])
        st.caption("User turn to judge")
        st.text(view["user"])
        st.caption("Turn-level belief state it should express")
        st.text(view["turn_label"])
    shown = {q: WORDS.get(answers.get(q, ""), "—") for q in ("human_like", "correct")}
    if any(ctx.offers_unsure(q) for q in BUTTONS):
        _rows_per_question(st, ctx, answers, shown)
    else:
        questions = st.columns(2, vertical_alignment="bottom")  # each question over its two buttons
        for column, question in zip(questions, ("human_like", "correct")):
            column.caption(f"{QUESTION_SHORT[question]} Your answer: {shown[question]}")
        with st.container(horizontal=True, gap="small"):  # one row; on a phone they wrap, two or three to a row
            for question in BUTTONS:
                _buttons(st, ctx, answers, question)
            ctx.skip_button()
            with st.popover("Comment"):
                ctx.comment_box()
    st.subheader("Dialogue so far")
    if not view["history"]:
        st.caption("(this is the first turn)")
    context_turns(st, view["history"])


def _rows_per_question(st, ctx: ItemContext, answers: dict[str, str], shown: dict[str, str]) -> None:
    """A study that offers "unsure": six answers and Skip do not fit one row at 1400 px, so each question
    has its own row under its words, its buttons named by their answer only (*Yes (1)*, *No (2)*, *Unsure
    (n)*; *Yes (3)*, *No (4)*, *Unsure (m)*, then Skip and the comment): at 400 px a question's three
    buttons still fit one row, and the second question's with Skip (the rows close-set: at 400x800 they and
    Skip are on the first screen, ``tests/browser/test_browser_own_view.py``)."""
    with st.container(gap="xsmall"):  # close-set, so that on a phone the second row and Skip are on the first screen
        for question in BUTTONS:
            st.caption(f"{QUESTION_SHORT[question]} Your answer: {shown[question]}")
            with st.container(horizontal=True, gap="xsmall"):
                _buttons(st, ctx, answers, question, short=True)
                if question == "correct":
                    ctx.skip_button()
                    with st.popover("Comment"):
                        ctx.comment_box()


def _buttons(st, ctx: ItemContext, answers: dict[str, str], question: str, short: bool = False) -> None:
    """The question's answer buttons: yes and no, then Unsure where the study offers it (``short``: the
    labels without the question's name, for a row under the question's words)."""
    other = "correct" if question == "human_like" else "human_like"
    for label, key, value in (*BUTTONS[question], *((UNSURE_BUTTONS[question],) if ctx.offers_unsure(question) else ())):
        st.button(
            label.split(": ", 1)[1].capitalize() if short else label,
            shortcut=key,
            key=ctx.key(f"coco-{key}"),
            type="primary" if answers.get(question) == value else "secondary",
            width="content" if short else "stretch",
            on_click=ctx.on_answer,
            args=({question: value}, other in answers),  # complete once both questions have an answer
        )


KEYS = (("1", "Human-like: yes"), ("2", "Human-like: no"), ("3", "Correct: yes"), ("4", "Correct: no"))
register_view(
    "coco", render, keys=KEYS, unsure={q: (key, label.rsplit(" (", 1)[0]) for q, (label, key, _v) in UNSURE_BUTTONS.items()}
)
