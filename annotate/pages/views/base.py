"""What a kind's view gets from the annotator's page, and the registry of views.

A view draws one item of its kind (``render(st, ctx)``): the kind (``annotate/kinds/``) says what an
item is, which questions it asks and what answers they allow, without Streamlit; its view, here,
draws it.  Answer buttons call ``ctx.on_answer`` as their ``on_click`` callback: the answer is stored
before the item fragment runs again, in one write that also claims the next item (``annotate.judging.loop``),
and that one run shows the next item.  A view drawn the other way (``if st.button(...):
ctx.vote(...)``) works too, with a second run.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from dataclasses import dataclass
from typing import Any


@dataclass
class ItemContext:
    """What a view's ``render`` gets from the annotator's page."""

    item: Any  # the item (key, payload, questions; never shown: condition)
    answers: dict[str, str]  # this annotator's current answers on it
    vote: Callable[[dict[str, str], bool], None]  # in the run: store answers (True: complete, go on), run again
    skip_button: Callable[[], None]  # draws the Skip button (shortcut s)
    comment_box: Callable[[], None]  # draws the optional comment
    state: MutableMapping  # the page's session state (for widget defaults)
    finish: Callable[[], None]  # go on without storing anything (nothing changed)
    audio: Callable[[], tuple[str, str, bytes] | None] = lambda: None  # the item's recording, when it has one
    on_answer: Callable[[dict[str, str], bool], None] | None = None  # a button's on_click: store, then one run
    on_finish: Callable[[], None] | None = None  # a button's on_click: go on without storing anything

    def key(self, name: str) -> str:
        """A widget key of this item's answer buttons: with the item id in it, a press that reaches the
        server after the tab moved on to another item matches no button there (``annotate.screen``)."""
        return f"{name}-{self.item.id}"

    def cached(self, name: str, compute: Callable[[], Any]) -> Any:
        """What a view computes from the item (a dialogue's HTML), once per item and tab: kept in the
        tab's state under ``view-<item id>`` until the tab leaves the item (``annotate.screen.leave``)."""
        kept = self.state.setdefault(f"view-{self.item.id}", {})
        if name not in kept:
            kept[name] = compute()
        return kept[name]


def context_turns(st, turns) -> None:
    """Earlier or later turns as plain text: ``[index] Sys ...`` / ``[index] Usr ...``."""
    for index, system, user_turn in turns:
        st.text(f"[{index}] Sys  {system}\n[{index}] Usr  {user_turn}")


VIEWS: dict[str, Callable[[Any, ItemContext], None]] = {}
KEYS: dict[str, tuple[tuple[str, str], ...]] = {}  # a kind's answer keys, for the key overview ("?")
COMMON_KEYS = (
    ("s", "Skip this item (it comes back once nothing else is left)"),
    ("u", "Undo: reopen the item you answered last, with your answer shown, to change it"),
    ("?", "This overview of the keys"),
)


def register_view(kind: str, render: Callable[[Any, ItemContext], None], keys: tuple[tuple[str, str], ...] = ()) -> None:
    """The view of a kind and its answer keys (one call per view module, beside the kind's own ``register``)."""
    VIEWS[kind] = render
    KEYS[kind] = keys
