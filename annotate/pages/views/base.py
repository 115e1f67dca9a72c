"""What a kind's view gets from the annotator's page, and the registry of views.

A view draws one item of its kind (``render(st, ctx)``): the kind (``annotate/kinds/``) says what an
item is, which questions it asks and what answers they allow, without Streamlit; its view, here,
draws it.  Answer buttons call ``ctx.on_answer`` as their ``on_click`` callback: the answer is stored
before the item fragment runs again, in one write that also claims the next item (``annotate.judging.loop``),
and that one run shows the next item.  A view drawn the other way (``if st.button(...):
ctx.vote(...)``) works too, with a second run.

A study may offer "unsure" on its yes/no and choice questions (``create_study(..., unsure=True)``: the
question's spec has ``"unsure": True``).  The view then draws an *Unsure* button with its key among the
question's other answers (``ctx.offers_unsure(question)``; the kind's keys in ``register_view(...,
unsure=...)``), which stores the value ``unsure`` through ``ctx.on_answer`` like any other answer; a
question that does not offer it has no such button and no such key.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, MutableMapping
from dataclasses import dataclass, field
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
    # the study's question specs (``Study.questions``) by name, as the page read them with the study
    questions: Mapping[str, dict] = field(default_factory=dict)

    def offers_unsure(self, question: str) -> bool:
        """Whether the study offers "unsure" on this question (its spec says ``"unsure": True``)."""
        return bool(self.questions.get(question, {}).get("unsure"))

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
# a kind's "unsure" keys: question -> (key, words), drawn and listed only where the study offers "unsure"
UNSURE_KEYS: dict[str, dict[str, tuple[str, str]]] = {}
COMMON_KEYS = (
    ("s", "Skip this item (it comes back once nothing else is left)"),
    ("u", "Undo: reopen the item you answered last, with your answer shown, to change it"),
    ("?", "This overview of the keys"),
)


def register_view(
    kind: str,
    render: Callable[[Any, ItemContext], None],
    keys: tuple[tuple[str, str], ...] = (),
    unsure: Mapping[str, tuple[str, str]] | None = None,
) -> None:
    """The view of a kind, its answer keys and, per yes/no question, the key and words of its *Unsure*
    button (one call per view module, beside the kind's own ``register``)."""
    VIEWS[kind] = render
    KEYS[kind] = keys
    UNSURE_KEYS[kind] = dict(unsure or {})


def question_specs(specs: Iterable[dict]) -> dict[str, dict]:
    """A study's question specs (``Study.questions``) by name, for ``ItemContext.questions``."""
    return {spec["name"]: spec for spec in specs}


def key_rows(kind: str, specs: Iterable[dict]) -> list[tuple[str, str]]:
    """The key overview of a study of ``kind`` whose questions are ``specs``: the kind's answer keys, the
    "unsure" key of each question the study offers it on, then the keys of every kind."""
    offered = {name for name, spec in question_specs(specs).items() if spec.get("unsure")}
    unsure = [row for question, row in UNSURE_KEYS.get(kind, {}).items() if question in offered]
    return [*KEYS.get(kind, ()), *unsure, *COMMON_KEYS]
