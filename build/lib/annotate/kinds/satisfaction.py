"""Dialogue satisfaction (the FGA paper's study): one item per dialogue of one system.

Input: FGA human-evaluation text, FGA result JSON or TRADE predictions, with an optional TRADE
dialogue file for utterances.  Item key = dialogue id as in the source (``PMUL4648.json``),
condition = the system name (``--condition``, else the folder of FGA text files, else the file
name up to its first dot).  Question ``satisfied`` 1/0.  The page shows every turn with its
differences (missing / extra / wrong-value triplets), the turn-level match and the turn where
the first error entered.  Analysis: every DST metric against the ratings and λ calibration, per
system; exports add the correlation and calibration tables and the FGA text format.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from annotate.kinds.base import ItemContext, ItemDraft, Kind, register
from formats import ReaderError, expand_paths, read_file, trade_dials
from formats.dialogue import Dialogue, Turn
from metrics.analysis import metrics_summary
from metrics.diff import TurnDifference, first_error_turn, format_state, format_triplets, turn_differences

QUESTIONS = (
    {
        "name": "satisfied",
        "type": "binary",
        "required": True,
        "label": "Are you satisfied with how the model tracked the user's intent over the whole dialogue?",
    },
)


# --- items from files ---------------------------------------------------------------------


def _state_list(state) -> list[list[str]]:
    return [list(t) for t in sorted(state)]


def _system_name(path: Path, fmt: str) -> str:
    return path.parent.name if fmt == "fga-text" else path.name.split(".")[0]


def build_items(paths: list, condition: str | None = None) -> list[ItemDraft]:
    predicted: list[tuple[Dialogue, str]] = []
    utterance_sources: list[Dialogue] = []
    for path in expand_paths(paths):
        for dialogue in read_file(path):
            if dialogue.has_predictions:
                fmt = "fga-text" if path.suffix == ".txt" else "json"
                predicted.append((dialogue, condition or _system_name(path, fmt)))
            else:
                utterance_sources.append(dialogue)
    if not predicted:
        raise ReaderError(", ".join(map(str, paths)), "", "no predicted belief states found (satisfaction needs predictions)")
    if utterance_sources:
        merged = trade_dials.attach_utterances([d for d, _ in predicted], utterance_sources)
        predicted = [(m, c) for m, (_, c) in zip(merged, predicted)]
    drafts = []
    for dialogue, system in predicted:
        turns = [
            {"index": t.index, "system": t.system, "user": t.user, "gold": _state_list(t.gold), "pred": _state_list(t.pred)}
            for t in dialogue.turns
        ]
        drafts.append(
            ItemDraft(
                dialogue.id,
                system,
                f"{system}|{dialogue.id}",
                ["satisfied"],
                {"dialogue_id": dialogue.id, "turns": turns},
                {"source": dialogue.source},
            )
        )
    return drafts


def dialogues(items) -> dict[str, list[Dialogue]]:
    """Items (``key``, ``condition``, ``payload``) -> dialogues with predictions, per condition (system)."""
    by_condition: dict[str, list[Dialogue]] = {}
    for item in items:
        turns = [
            Turn(index=t["index"], system=t.get("system", ""), user=t.get("user", ""),
                 gold=frozenset(tuple(x) for x in t["gold"]), pred=frozenset(tuple(x) for x in t["pred"]))
            for t in item.payload["turns"]
        ]  # fmt: skip
        by_condition.setdefault(item.condition, []).append(Dialogue(item.key, turns, "study"))
    return by_condition


def summarise(votes, by_condition, settings, condition, progress) -> dict:
    return metrics_summary(by_condition, votes, settings, condition=condition, progress=progress)


# --- what the page shows ------------------------------------------------------------------


def _state(triplets: list) -> frozenset:
    return frozenset(tuple(t) for t in triplets)


@dataclass
class SatisfactionTurn:
    index: int
    system: str
    user: str
    gold: str
    pred: str
    exact: bool
    local: bool
    error_turn: int | None
    missing: str
    extra: str
    wrong: str
    new_gold: str
    new_pred: str


def _state(triplets: list) -> frozenset:
    return frozenset(tuple(t) for t in triplets)


def satisfaction_view(payload: dict) -> tuple[list[SatisfactionTurn], int | None]:
    """Turns with their differences, and the turn where the first error entered."""
    gold = [_state(t["gold"]) for t in payload["turns"]]
    pred = [_state(t["pred"]) for t in payload["turns"]]
    differences: list[TurnDifference] = turn_differences(gold, pred)
    turns = [
        SatisfactionTurn(
            index=raw["index"],
            system=raw["system"],
            user=raw["user"],
            gold=format_state(g),
            pred=format_state(p),
            exact=d.exact,
            local=d.local,
            error_turn=d.error_turn,
            missing=format_triplets(d.missing),
            extra=format_triplets(d.extra),
            wrong=", ".join(f"{dom}-{slot}: {gv} → {pv}" for dom, slot, gv, pv in d.wrong) or "—",
            new_gold=format_triplets(d.new_gold),
            new_pred=format_triplets(d.new_pred),
        )
        for raw, g, p, d in zip(payload["turns"], gold, pred, differences)
    ]
    return turns, first_error_turn(differences)


def turn_status(turn: SatisfactionTurn) -> str:
    """One line of fixed words (no data) for the turn header."""
    exact = "✓ exact match" if turn.exact else "✗ exact match"
    local = "✓ turn-level match" if turn.local else "✗ turn-level match"
    error = "" if turn.exact or turn.error_turn is None else f"   (error entered at turn {turn.error_turn})"
    return f"Turn {turn.index}   {local}   {exact}{error}"


# --- the page -----------------------------------------------------------------------------


def render(st, ctx: ItemContext) -> None:
    item, answers = ctx.item, ctx.answers
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
    ctx.comment_box()
    left, middle, right = st.columns(3)
    if left.button("Satisfied (1)", shortcut="1", key="sat-1", type="primary" if current == "1" else "secondary"):
        ctx.vote({"satisfied": "1"}, True)
    if middle.button("Not satisfied (0)", shortcut="0", key="sat-0", type="primary" if current == "0" else "secondary"):
        ctx.vote({"satisfied": "0"}, True)
    with right:
        ctx.skip_button()


KIND = register(
    Kind(
        name="satisfaction",
        label="dialogue satisfaction",
        inputs="FGA text files, FGA result JSON or TRADE predictions (+ a TRADE dialogue file for utterances)",
        questions=QUESTIONS,
        build_items=build_items,
        render=render,
        shortcuts=(("1", "satisfied"), ("0", "not satisfied"), ("s", "skip")),
        dialogues=dialogues,
        summarise=summarise,
        export_formats=("correlation-csv", "calibration-json", "fga-text"),
    )
)
