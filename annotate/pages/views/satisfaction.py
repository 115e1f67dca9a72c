"""The satisfaction item (the FGA paper's study): the question and its buttons first, then where the
first error entered, then the dialogue as one compact row per turn.  The dialogue's view (differences
and HTML, ``annotate.kinds.satisfaction.item_html``) is computed once per item and tab (``ItemContext.cached``)."""

from __future__ import annotations

from annotate.kinds.satisfaction import item_html, satisfaction_view
from annotate.pages.views.base import ItemContext, register_view
from formats.tidy import UNSURE

QUESTION = "**Are you satisfied with how the model tracked the user's intent over the whole dialogue?**"
ANSWERS = (("Satisfied (1)", "1", "1"), ("Not satisfied (0)", "0", "0"))  # (label, shortcut, value)
UNSURE_KEY = "n"  # the Unsure button's key, in a study that offers "unsure"
WORDS = {"1": "satisfied", "0": "not satisfied", UNSURE: "unsure"}


def _drawn(payload: dict) -> str:
    return item_html(*satisfaction_view(payload))


def render(st, ctx: ItemContext) -> None:
    """The question and its buttons first (visible on arrival), then one block: where the first error
    entered (with a jump to that turn), the legend, and the dialogue as one compact row per turn.  Few
    elements, so that a key press redraws little (issue 38): the question, one row of buttons (the
    answers, Skip, the comment, the current answer), the block.  In a study that offers "unsure" the
    answers are three: *Unsure* (key n) after the two."""
    current = ctx.answers.get("satisfied")
    answers = ANSWERS + ((("Unsure (n)", UNSURE_KEY, UNSURE),) if ctx.offers_unsure("satisfied") else ())
    st.markdown(QUESTION)
    with st.container(horizontal=True, vertical_alignment="center", gap="small"):
        for label, shortcut, value in answers:
            st.button(
                label,
                shortcut=shortcut,
                key=ctx.key(f"sat-{value}"),
                type="primary" if current == value else "secondary",
                width=200,
                on_click=ctx.on_answer,
                args=({"satisfied": value}, True),
            )
        ctx.skip_button()
        with st.popover("Comment (optional)"):
            ctx.comment_box()
        if current is not None:
            st.caption(f"Your current answer: {WORDS.get(current, '—')}")  # our own words only
    st.html(ctx.cached("satisfaction", lambda: _drawn(ctx.item.payload)))


register_view(
    "satisfaction",
    render,
    keys=(("1", "Satisfied with the whole dialogue"), ("0", "Not satisfied")),
    unsure={"satisfied": (UNSURE_KEY, "Unsure")},
)
