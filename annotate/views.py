"""What each kind of item page shows, computed without Streamlit (pages only lay it out).

Every string that comes from data (utterances, values, act names) is returned as plain
text; pages must show it with ``st.text`` or in tables, never as Markdown or HTML.
"""

from __future__ import annotations

from dataclasses import dataclass

from metrics.diff import TurnDifference, first_error_turn, format_state, format_triplets, turn_differences


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


def coco_view(payload: dict) -> dict:
    """History, the system utterance, the candidate user turn and the turn-level state it should express."""
    return {
        "history": [(i, h["system"], h["user"]) for i, h in enumerate(payload["history"])],
        "system": payload["system"],
        "user": payload["user"],
        "turn_label": ", ".join(f"{slot}={value}" for slot, value in payload["turn_label"]) or "(nothing new)",
    }


def slu_view(payload: dict) -> dict:
    """Context turns, the system prompt, ASR, transcription and the recognised acts."""
    return {
        "before": [(t["index"], t["system"], t["user"]) for t in payload["before"]],
        "after": [(t["index"], t["system"], t["user"]) for t in payload["after"]],
        "system": payload["system"],
        "asr": [f"{text}  ({score:.2f})" for text, score in payload["asr"]],
        "transcription": payload.get("transcription", ""),
        "transcription_status": payload.get("transcription_status", "") or "transcribed",
        "acts": [(a["name"], a["score"], a.get("auto")) for a in payload["acts"]],
    }
