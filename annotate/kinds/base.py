"""What a task kind is, and the registry of kinds.

A task kind is one module in ``annotate/kinds/`` that builds a :class:`Kind` and registers it
with :func:`register` (one line in ``annotate/kinds/__init__.py``).  The kind owns:

- how its items are built from data files (``build_items``) and its questions with their
  allowed answers (``questions``: study-level specs; an item may add binary questions of its own,
  as SLU acts do);
- its analysis beyond agreement and majority labels (``summarise``), and, when it has them,
  its dialogues with predictions (``dialogues``: the satisfaction kind's metric analysis and
  FGA-text export);
- the export formats it adds to the generic ones (``export_formats``);
- a short text that recalls an item (``preview``, the going-back list);
- the item as its page shows it, as JSON data (``data``: what the HTTP API's ``next`` returns, so a
  script or an automatic judge sees what a person sees, and nothing the page hides).

No Streamlit here: how an item is drawn, with its buttons and keyboard shortcuts, is the kind's
view in ``annotate/pages/views/<kind>.py`` (registered with ``register_view``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from formats.dialogue import Dialogue
from formats.tidy import VoteTable

if TYPE_CHECKING:  # the kinds are known without the statistics: analyse() imports them (issue 36)
    from metrics.analysis import AnalysisSettings, Progress

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


@dataclass(frozen=True)
class Kind:
    name: str
    label: str  # what annotators see next to the study name
    inputs: str  # which files make a study of this kind (Studies page, CLI help)
    questions: tuple[dict, ...]
    build_items: Callable[[Sequence, str | None], list[ItemDraft]]
    takes_condition: bool = True
    dialogues: Callable[[Sequence], dict[str, list[Dialogue]]] | None = None
    summarise: Callable[..., dict] | None = None  # (votes, dialogues, settings, condition, progress) -> extra results
    export_formats: tuple[str, ...] = ()
    guideline: str = ""  # the demo's guideline for this kind
    preview: Callable[[dict], str] = lambda payload: ""  # a short text that recalls an item (the going-back list)
    data: Callable[[dict], dict] = lambda payload: dict(payload)  # the item as the page shows it, as JSON (the API)
    # Its votes rate whole dialogues that automatic metrics score: the kind has a main question to
    # estimate (r per metric, λ*), and adaptive or λ-weighted designs draw its dialogues by their scores.
    rates_metrics: bool = False
    # The system (condition) an upload names when the admin gave none: (file name, bytes) pairs -> a
    # name, or None (the files do not say; a zip's folders name theirs); StudyError when it cannot tell.
    upload_condition: Callable[[Sequence[tuple[str, bytes]]], str | None] = lambda files: None


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
    categories: dict[str, Sequence[str]] | None = None,
    rating_votes: VoteTable | None = None,
) -> dict:
    """A study's analysis: agreement and majority labels for every kind (with gold accuracy from the
    items' attention checks), plus what the kind adds; ``items`` have key, condition, payload, gold;
    ``categories``: the declared answers per question (``annotate.analysis.study_data.declared_answers``).

    The result's ``design`` says how the study spent its judgements (``annotate.studies.allocation``; the
    items' π and the ``allocation`` settings given here): ``uniform``, or ``adaptive`` with every
    correlation, difference and λ* recomputed with 1/π weights (``metrics.analysis.design_summary``):
    the unweighted sections then describe the judged dialogues only, not the pool.

    ``rating_votes`` (default ``votes``): the votes the kind's summary and the design's estimates rate
    the dialogues with (``annotate.analysis.study_data``: each dialogue's fixed part, issue 26); agreement and
    majority labels always take ``votes``."""
    from metrics.analysis import gold_answers, votes_summary

    report = progress or (lambda fraction, text: None)
    report(0.1, "agreement")
    result = {"kind": kind.name, **votes_summary(votes, settings, gold=gold_answers(items), categories=categories)}
    pi = {(i.key, i.condition or ""): i.pi for i in items if getattr(i, "pi", None) is not None}
    result["design"] = {"design": "uniform"} if not pi else {"design": "adaptive", "allocation": allocation or {}}
    if votes.votes and kind.summarise is not None:
        dialogues = kind.dialogues(items) if kind.dialogues is not None else {}
        rated = (votes if rating_votes is None else rating_votes).without_unsure()  # "unsure" rates nothing
        result.update(kind.summarise(rated, dialogues, settings, condition, report))
        if pi and dialogues:
            from metrics.analysis import design_summary

            report(0.9, "estimates under the adaptive design")
            result["design"] = design_summary(dialogues, rated, settings, pi, condition=condition, allocation=allocation)
        if dialogues and isinstance(result.get("design"), dict):
            from metrics.analysis import ICC_ALPHA, corrected_summary
            from metrics.design import MIN_OVERLAP

            # The k-independent target (each metric's correlation with the expected rating, corrected for the
            # ratings' reliability on the overlap subset), for every design: a designed study asks for it (its
            # note says why it is missing); any other study with an overlap subset gets it beside the raw r,
            # so studies of different k are compared on the same estimand - when the overlap's ANOVA rejects
            # ICC = 0 (else its note says why there is no ρ).

            designed = (allocation or {}).get("policy") == "designed"
            report(0.95, "the k-independent target" + (" under the designed design" if designed else ""))
            target = corrected_summary(
                dialogues, rated, settings, condition=condition, allocation=allocation, icc_alpha=None if designed else ICC_ALPHA
            )
            if designed or target.get("n_overlap", 0) >= MIN_OVERLAP:
                result["design"]["corrected"] = target
    report(1.0, "done")
    return result


def allowed_answers(spec: dict) -> list[str] | None:
    """The answers a question takes: a binary question ``1``/``0``, a choice its ``values``, a scale its
    points, each with ``unsure`` after them when the question offers it; None for free text.

    >>> allowed_answers({"type": "binary"}), allowed_answers({"type": "binary", "unsure": True})
    (['1', '0'], ['1', '0', 'unsure'])
    """
    from formats.tidy import UNSURE

    extra = [UNSURE] if spec.get("unsure") else []
    if spec["type"] == "binary":
        return [*BINARY, *extra]
    if spec.get("values"):
        return [*(str(v) for v in spec["values"]), *extra]
    return None


def question_spec(questions: Sequence[dict], name: str) -> dict:
    """The spec of a question: study-level, or a binary question of the item's own (an SLU act)."""
    for spec in questions:
        if spec["name"] == name:
            return spec
    return {"name": name, "type": "binary", "required": True, "label": name}
