"""The satisfaction item (the FGA paper's study): the question and its buttons first, then where the
first error entered, then the dialogue as one compact row per turn.  The dialogue's view (differences
and HTML, ``annotate.kinds.satisfaction``) is computed once per item and tab (``ItemContext.cached``)."""

from __future__ import annotations

from annotate.kinds.satisfaction import satisfaction_view, turn_anchor, turns_html
from annotate.pages.views.base import ItemContext, register_view

QUESTION = "**Are you satisfied with how the model tracked the user's intent over the whole dialogue?**"


def _drawn(payload: dict) -> tuple[str, int | None, int]:
    turns, first_error = satisfaction_view(payload)
    return turns_html(turns), first_error, len(turns)


def render(st, ctx: ItemContext) -> None:
    """The question and its buttons first (visible on arrival), then where the first error entered
    (with a jump to that turn), then the dialogue as one compact row per turn."""
    html, first_error, n_turns = ctx.cached("satisfaction", lambda: _drawn(ctx.item.payload))
    current = ctx.answers.get("satisfied")
    question, comment = st.columns([5, 2], vertical_alignment="bottom")
    question.markdown(QUESTION)
    with comment.popover("Comment (optional)", use_container_width=True):
        ctx.comment_box()
    left, middle, right, note = st.columns([2, 2, 1, 4], vertical_alignment="center")
    for column, (label, value) in zip((left, middle), (("Satisfied (1)", "1"), ("Not satisfied (0)", "0"))):
        column.button(
            label,
            shortcut=value,
            key=ctx.key(f"sat-{value}"),
            type="primary" if current == value else "secondary",
            use_container_width=True,
            on_click=ctx.on_answer,
            args=({"satisfied": value}, True),
        )
    with right:
        ctx.skip_button()
    if current is not None:
        note.caption(f"Your current answer: {'satisfied' if current == '1' else 'not satisfied'}")
    if first_error is None:
        st.success("✓ Every turn matches exactly.")
    else:
        st.error(
            f"✗ The first error entered at turn {int(first_error)} of {n_turns}. "
            f"[Jump to turn {int(first_error)}](#{turn_anchor(first_error)})"
        )
    st.caption(
        "✓ exact match · ≈ turn-level match, state still inexact · ✗ error entered here — − missing · + extra · ≠ wrong value"
    )
    st.html(html)


register_view("satisfaction", render, keys=(("1", "Satisfied with the whole dialogue"), ("0", "Not satisfied")))
