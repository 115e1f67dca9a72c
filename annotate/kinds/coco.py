"""Counterfactual user turns (the CoCo paper's study): one item per user turn and condition.

Input: a CoCo ``run_eval.py`` JSON and the TRADE dialogue file it ran on.  Per turn one item for
the original user turn (condition ``original``) and one for the counterfactual (the variant name,
default ``coco``); key = ``<dialogue id>/<turn index>``.  The condition is kept out of the payload,
so the page cannot show it.  Questions ``human_like`` and ``correct`` (1/0).  Analysis adds the
CoCo paper's Table 3 layout (per condition, % human-like and % correct by majority vote).
"""

from __future__ import annotations

from annotate.kinds.base import ItemDraft, Kind, StudyError, register
from formats import ReaderError, coco_eval, detect_format, expand_paths, trade_dials
from formats.errors import read_text

QUESTIONS = (
    {
        "name": "human_like",
        "type": "binary",
        "required": True,
        "label": "Is the user turn human-like: fluent and consistent with the dialogue context?",
    },
    {
        "name": "correct",
        "type": "binary",
        "required": True,
        "label": "Does the user turn express exactly the turn-level belief state shown?",
    },
)
YES_NO = {"1": "yes", "0": "no"}
GUIDELINE = (
    "Judge each user turn on its own. Human-like: fluent and consistent with the dialogue so far. "
    "Correct: it expresses exactly the turn-level belief state shown, nothing more, nothing less."
)


def build_items(paths: list, variant: str | None = None) -> list[ItemDraft]:
    variant = variant or "coco"
    if variant == "original":
        raise StudyError("the CoCo variant cannot be called 'original'")
    dialogue_files, coco_files = [], []
    for path in expand_paths(paths):
        fmt, document = detect_format(path, read_text(path))
        if fmt == trade_dials.FORMAT:
            dialogue_files.append((path, document))
        elif fmt == coco_eval.FORMAT:
            coco_files.append((path, document))
        else:
            raise ReaderError(path, "", f"is {fmt}; a CoCo study needs a CoCo run_eval.py JSON and a TRADE dialogue file")
    if not dialogue_files or not coco_files:
        raise ReaderError(
            ", ".join(map(str, paths)), "", "a CoCo study needs both a CoCo output file and its TRADE dialogue file"
        )
    dialogues = {d.id: d for path, document in dialogue_files for d in trade_dials.read(path, document=document)}
    drafts = []
    for path, document in coco_files:
        for turn in coco_eval.read(path, set(dialogues), document=document):
            dialogue = dialogues[turn.dialogue_id]
            if turn.turn_index >= len(dialogue.turns):
                raise ReaderError(
                    path,
                    f"key {turn.dialogue_id}{turn.turn_index}",
                    f"turn {turn.turn_index} is past the end of the dialogue ({len(dialogue.turns)} turns)",
                )
            key = f"{turn.dialogue_id}/{turn.turn_index}"
            history = [{"system": t.system, "user": t.user} for t in dialogue.turns[: turn.turn_index]]
            system = dialogue.turns[turn.turn_index].system
            for condition, utterance, label in (
                ("original", turn.original_utterance, turn.original_turn_label),
                (variant, turn.new_utterance, turn.new_turn_label),
            ):
                payload = {
                    "dialogue_id": turn.dialogue_id,
                    "turn_index": turn.turn_index,
                    "history": history,
                    "system": system,
                    "user": utterance,
                    "turn_label": [list(p) for p in label],
                }
                drafts.append(
                    ItemDraft(
                        key, condition, key, ["human_like", "correct"], payload, {"source": str(path), "success": turn.success}
                    )
                )
    return drafts


def summarise(votes, _dialogues, settings, _condition, _progress) -> dict:
    from metrics.analysis import coco_summary  # the statistics, when a study is analysed (issue 36)

    return {"coco": coco_summary(votes, settings.tie)}


def item_view(payload: dict) -> dict:
    """History, the system utterance, the candidate user turn and the turn-level state it should express."""
    return {
        "history": [(i, h["system"], h["user"]) for i, h in enumerate(payload["history"])],
        "system": payload["system"],
        "user": payload["user"],
        "turn_label": ", ".join(f"{slot}={value}" for slot, value in payload["turn_label"]) or "(nothing new)",
    }


def item_data(payload: dict) -> dict:
    """The item as the page shows it (the HTTP API): the dialogue so far, the system utterance, the
    candidate user turn and the turn-level belief state it should express; never the condition."""
    return {
        "dialogue_id": payload["dialogue_id"],
        "turn_index": payload["turn_index"],
        "history": [{"system": h["system"], "user": h["user"]} for h in payload["history"]],
        "system": payload["system"],
        "user": payload["user"],
        "turn_label": [list(pair) for pair in payload["turn_label"]],
    }


KIND = register(
    Kind(
        name="coco",
        label="user-turn judgements",
        inputs="the CoCo run_eval.py JSON + its TRADE dialogue file",
        questions=QUESTIONS,
        build_items=build_items,
        summarise=summarise,
        guideline=GUIDELINE,
        preview=lambda payload: payload["user"],
        data=item_data,
    )
)
