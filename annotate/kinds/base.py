"""What a task kind is, and the registry of kinds.

A task kind is one module in ``annotate/kinds/`` that builds a :class:`Kind` and registers it
with :func:`register` (one line in ``annotate/kinds/__init__.py``).  The kind owns:

- how its items are built from data files (``build_items``) and its questions with their
  allowed answers (``questions``: study-level specs; an item may add binary questions of its own,
  as SLU acts do);
- its part of the annotator's page (``render``) and the keyboard shortcuts it offers;
- its analysis beyond agreement and majority labels (``summarise``), and, when it has them,
  its dialogues with predictions (``dialogues``: the satisfaction kind's metric analysis and
  FGA-text export);
- the export formats it adds to the generic ones (``export_formats``).

No Streamlit here: ``render`` receives the ``streamlit`` module from the page that calls it
(``annotate/pages``), so Streamlit stays in the pages.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from formats.dialogue import Dialogue
from formats.tidy import VoteTable
from metrics.analysis import AnalysisSettings, Progress, gold_answers, votes_summary

BINARY = ("1", "0")


class StudyError(ValueError):
    """A study cannot be created or changed as asked; the message says why."""


@dataclass
class ItemDraft:
    key: str
    condition: str
    unit: str  # sampling unit: both CoCo conditions of a turn share it
    questions: list[str]
    payload: dict
    meta: dict = field(default_factory=dict)
    audio: tuple[str, str, bytes] | None = None  # (file name, MIME type, bytes): the item's recording


@dataclass
class ItemContext:
    """What a kind's ``render`` gets from the annotator's page."""

    item: Any  # the item (key, payload, questions; never shown: condition)
    answers: dict[str, str]  # this annotator's current answers on it
    vote: Callable[[dict[str, str], bool], None]  # store answers; True: the judgement is complete, go on
    skip_button: Callable[[], None]  # draws the Skip button (shortcut s)
    comment_box: Callable[[], None]  # draws the optional comment
    state: MutableMapping  # the page's session state (for widget defaults)
    finish: Callable[[], None]  # go on without storing anything (nothing changed)
    audio: Callable[[], tuple[str, str, bytes] | None] = lambda: None  # the item's recording, when it has one

    def key(self, name: str) -> str:
        """A widget key of this item's answer buttons: with the item id in it, a press that reaches the
        server after the tab moved on to another item matches no button there (``annotate.screen``)."""
        key = f"{name}-{self.item.id}"
        self.state.setdefault(ANSWER_KEYS, {})[key] = self.item.id  # so a press is seen before the database is
        return key


ANSWER_KEYS = "answer-button-keys"  # widget key -> item id, of the answer buttons drawn in this session


@dataclass(frozen=True)
class Kind:
    name: str
    label: str  # what annotators see next to the study name
    inputs: str  # which files make a study of this kind (Studies page, CLI help)
    questions: tuple[dict, ...]
    build_items: Callable[[Sequence, str | None], list[ItemDraft]]
    render: Callable[[Any, ItemContext], None]
    shortcuts: tuple[tuple[str, str], ...] = ()
    takes_condition: bool = True
    dialogues: Callable[[Sequence], dict[str, list[Dialogue]]] | None = None
    summarise: Callable[..., dict] | None = None  # (votes, dialogues, settings, condition, progress) -> extra results
    export_formats: tuple[str, ...] = ()
    guideline: str = ""  # the demo's guideline for this kind
    preview: Callable[[dict], str] = lambda payload: ""  # a short text that recalls an item (the going-back list)


KINDS: dict[str, Kind] = {}


def register(kind: Kind) -> Kind:
    """Add a task kind (one call per kind module); its export formats are offered with it."""
    from exports.formats import offer

    offer(kind.name, kind.export_formats)
    KINDS[kind.name] = kind
    return kind


def get_kind(name: str) -> Kind:
    if name not in KINDS:
        raise StudyError(f"unknown study kind {name!r} (one of {', '.join(KINDS)})")
    return KINDS[name]


def analyse(
    kind: Kind,
    votes: VoteTable,
    items: Sequence,
    settings: AnalysisSettings,
    *,
    condition: str | None = None,
    progress: Progress | None = None,
    allocation: dict | None = None,
) -> dict:
    """A study's analysis: agreement and majority labels for every kind (with gold accuracy from the
    items' attention checks), plus what the kind adds; ``items`` have key, condition, payload, gold.

    ``design`` says how the study spent its judgements (``annotate.allocation``): ``uniform``, or
    ``adaptive`` with every correlation, difference and λ* recomputed with 1/π weights
    (``metrics.analysis.design_summary``): the unweighted sections then describe the judged dialogues
    only, not the pool."""
    report = progress or (lambda fraction, text: None)
    report(0.1, "agreement")
    result = {"kind": kind.name, **votes_summary(votes, settings, gold=gold_answers(items))}
    pi = {(i.key, i.condition or ""): i.pi for i in items if getattr(i, "pi", None) is not None}
    result["design"] = {"design": "uniform"} if not pi else {"design": "adaptive", "allocation": allocation or {}}
    if votes.votes and kind.summarise is not None:
        dialogues = kind.dialogues(items) if kind.dialogues is not None else {}
        result.update(kind.summarise(votes, dialogues, settings, condition, report))
        if pi and dialogues:
            from metrics.analysis import design_summary

            report(0.9, "estimates under the adaptive design")
            result["design"] = design_summary(dialogues, votes, settings, pi, condition=condition, allocation=allocation)
    report(1.0, "done")
    return result


def question_spec(questions: Sequence[dict], name: str) -> dict:
    """The spec of a question: study-level, or a binary question of the item's own (an SLU act)."""
    for spec in questions:
        if spec["name"] == name:
            return spec
    return {"name": name, "type": "binary", "required": True, "label": name}


def context_turns(st, turns) -> None:
    """Earlier or later turns as plain text: ``[index] Sys ...`` / ``[index] Usr ...``."""
    for index, system, user_turn in turns:
        st.text(f"[{index}] Sys  {system}\n[{index}] Usr  {user_turn}")
