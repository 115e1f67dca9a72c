"""Dialogue satisfaction (the FGA paper's study): one item per dialogue of one system.

Input: FGA human-evaluation text, or FGA result JSON or TRADE predictions with the TRADE dialogue
file they were made on (those two formats hold belief states only; without the dialogue file the
study is refused, naming the file, rather than showing empty Sys / Usr lines).  Item key =
dialogue id as in the source (``PMUL4648.json``), condition = the system name (``--condition``,
else the folder of FGA text files, else the file name up to its first dot).  Question
``satisfied`` 1/0.  The page shows every turn with its differences (missing / extra / wrong-value
triplets), the turn-level match and the turn where the first error entered.  Analysis: every DST
metric against the ratings and λ calibration, per system; exports add the correlation and
calibration tables and the FGA text format.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from annotate.kinds.base import ItemDraft, Kind, StudyError, register
from annotate.studies.uploads import safe_name
from formats import ReaderError, expand_paths, read_file_detected, trade_dials
from formats.dialogue import Dialogue, Turn

if TYPE_CHECKING:  # numpy and the statistics: imported by the functions that use them (issue 36)
    from metrics.diff import TurnDifference

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


# Prediction formats that carry belief states only: a study of them needs the TRADE dialogue file
# the predictions were made on, or annotators would see every turn as empty Sys / Usr lines.
NO_UTTERANCES = {
    "fga-json": "FGA result JSON has no utterances; add the TRADE dialogue file (test_dials.json) it was run on",
    "trade-pred": "TRADE predictions have no utterances; add the TRADE dialogue file (test_dials.json) they were made on",
}


def build_items(paths: list, condition: str | None = None) -> list[ItemDraft]:
    """Items from prediction files, with utterances from FGA text or from a TRADE dialogue file among
    ``paths``.  Predictions without utterances (FGA result JSON, TRADE predictions) and no dialogue file
    are refused, naming the file (rather than a study whose turns show empty Sys / Usr lines)."""
    predicted: list[tuple[Dialogue, str]] = []
    utterance_sources: list[Dialogue] = []
    bare: list[tuple[Path, str]] = []  # prediction files without utterances, with their format
    for path in expand_paths(paths):
        fmt, read = read_file_detected(path)
        if fmt in NO_UTTERANCES and any(d.has_predictions for d in read):
            bare.append((path, fmt))
        for dialogue in read:
            if dialogue.has_predictions:
                predicted.append((dialogue, condition or _system_name(path, "fga-text" if path.suffix == ".txt" else "json")))
            else:
                utterance_sources.append(dialogue)
    if not predicted:
        raise ReaderError(", ".join(map(str, paths)), "", "no predicted belief states found (satisfaction needs predictions)")
    if bare and not utterance_sources:
        path, fmt = bare[0]
        raise ReaderError(path, "", NO_UTTERANCES[fmt])
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
            Turn(
                index=t["index"],
                system=t.get("system", ""),
                user=t.get("user", ""),
                gold=frozenset(tuple(x) for x in t["gold"]),
                pred=frozenset(tuple(x) for x in t["pred"]),
            )
            for t in item.payload["turns"]
        ]
        by_condition.setdefault(item.condition, []).append(Dialogue(item.key, turns, "study"))
    return by_condition


def summarise(votes, by_condition, settings, condition, progress) -> dict:
    from metrics.analysis import metrics_summary

    return metrics_summary(by_condition, votes, settings, condition=condition, progress=progress)


# --- what the page shows ------------------------------------------------------------------

# Fixed words and symbols, readable without colour: a turn is ✓ (exact match), ≈ (turn-level match,
# the state still inexact) or ✗ (an error entered here); a slot is − missing, + extra or ≠ wrong.
TURN_MARKS = {
    "exact": ("✓", "exact match"),
    "local": ("≈", "turn-level match, state inexact"),
    "error": ("✗", "error entered here"),
}
STYLE = """<style>
.dstj-turns{border-collapse:collapse;width:100%;table-layout:fixed;font-size:0.86rem;line-height:1.35}
.dstj-turns th{text-align:left;font-weight:600;border-bottom:2px solid #ccc;padding:2px 6px}
.dstj-turns td{vertical-align:top;border-bottom:1px solid #e4e4e4;padding:3px 6px}
.dstj-turns td.t{font-weight:600}
.dstj-turns tr.exact td.t{color:#1a7f37}.dstj-turns tr.local td.t{color:#9a6700}.dstj-turns tr.error td.t{color:#cf222e}
.dstj-turns tr.error{background:#fff5f5}
.dstj-turns tr{scroll-margin-top:4rem}
.dstj-turns .who{color:#666;font-weight:600;margin-right:.4em}
.dstj-turns .miss{color:#cf222e}.dstj-turns .extra{color:#8250df}.dstj-turns .wrong{color:#bc4c00}
.dstj-turns .ok{color:#1a7f37}.dstj-turns .none{color:#999}
.dstj-turns details{margin-top:2px;color:#444}.dstj-turns summary{cursor:pointer;color:#0969da}
.dstj-banner{padding:.75rem 1rem;border-radius:.5rem;margin:0 0 .6rem 0}
.dstj-banner.error{background:#fdeeee;color:#7d1a1a}.dstj-banner.exact{background:#e9f6ec;color:#17592b}
.dstj-banner a{color:inherit;text-decoration:underline}
.dstj-legend{color:#6b6f7b;font-size:.85rem;margin:0 0 .5rem 0}
</style>"""
LEGEND = "✓ exact match · ≈ turn-level match, state still inexact · ✗ error entered here — − missing · + extra · ≠ wrong value"


@dataclass
class SatisfactionTurn:
    index: int
    system: str
    user: str
    status: str  # exact | local | error
    error_turn: int | None
    gold: str  # the whole states, for "full states" on demand
    pred: str
    missing: list[str]  # "domain-slot=value", plain text
    extra: list[str]
    wrong: list[str]  # "domain-slot: gold → predicted"
    new_gold: list[str]  # what this turn changed, in gold and in the prediction
    new_pred: list[str]


def _state(triplets: list) -> frozenset:
    return frozenset(tuple(t) for t in triplets)


def _slots(triplets) -> list[str]:
    return [f"{d}-{s}={v}" for d, s, v in sorted(triplets)]


def satisfaction_view(payload: dict) -> tuple[list[SatisfactionTurn], int | None]:
    """Turns with their differences, and the turn where the first error entered."""
    from metrics.diff import first_error_turn, format_state, turn_differences

    gold = [_state(t["gold"]) for t in payload["turns"]]
    pred = [_state(t["pred"]) for t in payload["turns"]]
    differences: list[TurnDifference] = turn_differences(gold, pred)
    turns = [
        SatisfactionTurn(
            index=raw["index"],
            system=raw["system"],
            user=raw["user"],
            status="exact" if d.exact else ("local" if d.local else "error"),
            error_turn=d.error_turn,
            gold=format_state(g),
            pred=format_state(p),
            missing=_slots(d.missing),
            extra=_slots(d.extra),
            wrong=[f"{dom}-{slot}: {gv} → {pv}" for dom, slot, gv, pv in sorted(d.wrong)],
            new_gold=_slots(d.new_gold),
            new_pred=_slots(d.new_pred),
        )
        for raw, g, p, d in zip(payload["turns"], gold, pred, differences)
    ]
    return turns, first_error_turn(differences)


def turn_anchor(index: int) -> str:
    return f"dstj-turn-{int(index)}"


def _escaped(text) -> str:
    return html.escape(str(text), quote=True)


def _turn_row(turn: SatisfactionTurn) -> str:
    e = _escaped
    mark, words = TURN_MARKS[turn.status]
    origin = f" (from turn {int(turn.error_turn)})" if turn.status == "local" and turn.error_turn is not None else ""
    none = "<span class='none'>—</span>"
    changed = (
        f"<div><span class='who'>GT</span>{e(', '.join(turn.new_gold)) or none}</div>"
        f"<div><span class='who'>PR</span>{e(', '.join(turn.new_pred)) or none}</div>"
    )
    wrong = [f"<div class='miss'>− missing {e(x)}</div>" for x in turn.missing]
    wrong += [f"<div class='extra'>+ extra {e(x)}</div>" for x in turn.extra]
    wrong += [f"<div class='wrong'>≠ wrong {e(x)}</div>" for x in turn.wrong]
    full = (
        f"<details><summary>full states</summary><div><span class='who'>GT</span>{e(turn.gold)}</div>"
        f"<div><span class='who'>PR</span>{e(turn.pred)}</div></details>"
    )
    return (
        f"<tr id='{turn_anchor(turn.index)}' class='{turn.status}'>"
        f"<td class='t'>{mark} {int(turn.index)}<br><small>{words}{origin}</small></td>"
        f"<td><div><span class='who'>Sys</span>{e(turn.system)}</div><div><span class='who'>Usr</span>{e(turn.user)}</div></td>"
        f"<td>{changed}</td><td>{''.join(wrong) or '<div class=ok>✓ nothing</div>'}{full}</td></tr>"
    )


def turns_html(turns: list[SatisfactionTurn]) -> str:
    """One row per turn: the utterances, what the state changed this turn, and what is wrong in the
    whole state, with the full states on demand.  Every text from the data goes through html.escape
    (and st.html sanitises what is left), so it shows as text; the rest is fixed markup of ours."""
    header = "<tr><th>turn</th><th>system / user</th><th>changed this turn</th><th>wrong in the whole state</th></tr>"
    columns = "<colgroup><col style='width:9%'><col style='width:45%'><col style='width:23%'><col style='width:23%'></colgroup>"
    return STYLE + "<table class='dstj-turns'>" + columns + header + "".join(_turn_row(t) for t in turns) + "</table>"


def item_html(turns: list[SatisfactionTurn], first_error: int | None) -> str:
    """The item below its buttons as ONE block (issue 38: fewer elements redrawn per key press): where
    the first error entered (with a jump to that turn) or that every turn matches, the legend of the
    symbols, then :func:`turns_html`.  Only numbers of ours go into the banner; the rest is fixed markup."""
    if first_error is None:
        banner = "<div class='dstj-banner exact'>✓ Every turn matches exactly.</div>"
    else:
        turn = int(first_error)
        banner = (
            f"<div class='dstj-banner error'>✗ The first error entered at turn {turn} of {len(turns)}. "
            f"<a href='#{turn_anchor(turn)}'>Jump to turn {turn}</a></div>"
        )
    return turns_html(turns).replace("<table", banner + f"<p class='dstj-legend'>{LEGEND}</p><table", 1)


def item_data(payload: dict) -> dict:
    """The item as the page shows it (the HTTP API): each turn's utterances, gold and predicted belief
    states (domain, slot, value triplets), what is wrong in it (``metrics.diff``: exact, a local error,
    an error carried from an earlier turn) and the turn where the first error entered; never the
    system's name (the condition)."""
    turns, first_error = satisfaction_view(payload)
    return {
        "dialogue_id": payload["dialogue_id"],
        "turns": [
            {
                "index": raw["index"],
                "system": raw["system"],
                "user": raw["user"],
                "gold": [list(t) for t in raw["gold"]],
                "pred": [list(t) for t in raw["pred"]],
                "status": turn.status,
                "error_turn": turn.error_turn,
                "missing": turn.missing,
                "extra": turn.extra,
                "wrong": turn.wrong,
            }
            for raw, turn in zip(payload["turns"], turns)
        ],
        "first_error_turn": first_error,
    }


def upload_condition(files) -> str | None:
    """The system name of an upload when the admin gave none (issue 24): an FGA text file's system is
    its folder, and a loose upload has none (a zip's folders name theirs).  One loose FGA text file:
    its name up to the first dot, as for a JSON file; several: refused, asking for it."""
    loose = [safe_name(name) for name, _ in files if name.lower().endswith(".txt")]
    if len(loose) > 1:
        shown = ", ".join(loose[:3]) + (f" and {len(loose) - 3} more" if len(loose) > 3 else "")
        raise StudyError(
            f"{shown}: loose FGA text files do not say which system made them: give the system name "
            "(or upload them as a .zip of a folder named after the system)"
        )
    return (loose[0].split(".")[0] or None) if loose else None


KIND = register(
    Kind(
        name="satisfaction",
        label="dialogue satisfaction",
        inputs="FGA text files, or FGA result JSON or TRADE predictions + the TRADE dialogue file they were made on",
        questions=QUESTIONS,
        build_items=build_items,
        dialogues=dialogues,
        summarise=summarise,
        export_formats=("correlation-csv", "calibration-json", "fga-text"),
        preview=lambda payload: next((t["user"] for t in payload["turns"] if t["user"]), ""),
        data=item_data,
        rates_metrics=True,
        upload_condition=upload_condition,
    )
)
