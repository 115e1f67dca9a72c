"""Studies from files, for the three task kinds.  Creation is one transaction.

- satisfaction: FGA text, FGA result JSON or TRADE predictions (+ optional TRADE dialogues
  for utterances).  One item per dialogue; condition = the system name (``--condition``,
  else the folder name for FGA text files, else the file name up to its first dot).
- coco: a CoCo ``run_eval.py`` JSON + the TRADE dialogue file it ran on.  Per turn one
  item for the original user turn (condition ``original``) and one for the counterfactual
  (condition = the variant name, default ``coco``).  The condition is kept out of the
  payload, so pages cannot show it.
- slu: DSTC call folders.  One item per user turn (every turn, so that a labels export lines up
  with the log; a turn without SLU hypotheses asks only for the transcription); the two turns
  before and after as context.  An act that exactly matches the label file's gold
  semantics is pre-labelled correct with source ``auto`` (the unambiguous case of the
  handbook's App. E); everything else is left to people.

``sample`` draws N units at random with ``seed`` (a unit is a dialogue, a CoCo turn — both
its conditions — or an SLU turn), as both papers' studies did.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from annotate.models import DEFAULT_TIMEOUT_MINUTES, KINDS, Item, Study
from formats import ReaderError, coco_eval, detect_format, dstc, expand_paths, read_file, trade_dials
from formats.dialogue import Dialogue
from formats.errors import read_text
from formats.gold import read_gold

BINARY = ("1", "0")
QUESTION_SPECS: dict[str, list[dict]] = {
    "satisfaction": [
        {
            "name": "satisfied",
            "type": "binary",
            "required": True,
            "label": "Are you satisfied with how the model tracked the user's intent over the whole dialogue?",
        },
    ],
    "coco": [
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
    ],
    "slu": [
        {"name": "transcription", "type": "text", "required": False, "label": "Transcription"},
        {
            "name": "transcription_status",
            "type": "choice",
            "required": False,
            "values": list(dstc.TRANSCRIPTION_STATUSES),
            "label": "Transcription status",
        },
    ],
}


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


def question_spec(study: Study, name: str) -> dict:
    """The spec of a question: study-level, or a binary act question of an SLU item."""
    for spec in study.questions:
        if spec["name"] == name:
            return spec
    return {"name": name, "type": "binary", "required": True, "label": name}


def required_questions(study: Study, item: Item) -> list[str]:
    return [q for q in item.questions if question_spec(study, q).get("required", True)]


def check_value(study: Study, item: Item, question: str, value: str) -> str:
    """The value as stored; raises StudyError for an unknown question or a bad value."""
    if question not in item.questions:
        raise StudyError(f"item {item.key} has no question {question!r}")
    spec = question_spec(study, question)
    value = str(value).strip() if spec["type"] != "text" else str(value)
    if spec["type"] == "binary" and value not in BINARY:
        raise StudyError(f"question {question!r} takes 1 or 0, not {value!r}")
    if spec["type"] == "choice" and value not in spec["values"]:
        raise StudyError(f"question {question!r} takes one of {', '.join(spec['values'])}, not {value!r}")
    return value


# --- satisfaction -------------------------------------------------------------------------


def _state_list(state) -> list[list[str]]:
    return [list(t) for t in sorted(state)]


def _system_name(path: Path, fmt: str) -> str:
    return path.parent.name if fmt == "fga-text" else path.name.split(".")[0]


def satisfaction_items(paths: list, condition: str | None = None) -> list[ItemDraft]:
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


# --- coco ---------------------------------------------------------------------------------


def coco_items(paths: list, variant: str | None = None) -> list[ItemDraft]:
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


# --- slu ----------------------------------------------------------------------------------


def _context_turn(turn: dstc.DstcTurn) -> dict:
    top_asr = turn.asr_hyps[0][0] if turn.asr_hyps else ""
    return {"index": turn.index, "system": turn.system, "user": turn.transcription if turn.transcription is not None else top_asr}


def slu_items(paths: list) -> list[ItemDraft]:
    drafts = []
    seen: dict[str, str] = {}
    for folder in dstc.session_folders(paths):
        session = dstc.read_session(folder)
        if session.session_id in seen:
            raise ReaderError(folder, "session-id", f"{session.session_id} already read from {seen[session.session_id]}")
        seen[session.session_id] = str(folder)
        for turn in session.turns:
            recognised = turn.recognised_acts()  # may be empty: the turn is still transcribed
            gold = set(turn.semantics) if turn.semantics is not None else None
            acts = [
                {
                    "name": act.name,
                    "act": act.act,
                    "slots": [list(s) for s in act.slots],
                    "score": round(score, 6),
                    "auto": (act in gold) if gold is not None and act in gold else None,
                }
                for act, score in recognised
            ]
            key = f"{session.session_id}/{turn.index}"
            payload = {
                "session_id": session.session_id,
                "turn_index": turn.index,
                "n_turns": len(session.turns),
                "system": turn.system,
                "system_acts": [a.name for a in turn.system_acts],
                "asr": [list(h) for h in turn.asr_hyps[:5]],
                "transcription": turn.transcription or "",
                "transcription_status": turn.transcription_status or "",
                "audio_file": turn.audio_file,
                "acts": acts,
                "before": [_context_turn(t) for t in session.turns[max(0, turn.index - 2) : turn.index]],
                "after": [_context_turn(t) for t in session.turns[turn.index + 1 : turn.index + 3]],
            }
            questions = [a["name"] for a in acts] + ["transcription", "transcription_status"]
            drafts.append(ItemDraft(key, "", key, questions, payload, {"source": str(folder)}))
    return drafts


BUILDERS = {"satisfaction": satisfaction_items, "coco": coco_items, "slu": slu_items}


def build_items(kind: str, paths: list, condition: str | None = None) -> list[ItemDraft]:
    if kind not in KINDS:
        raise StudyError(f"unknown study kind {kind!r} (one of {', '.join(KINDS)})")
    if kind == "slu":
        if condition:
            raise StudyError("an slu study has no conditions")
        return slu_items(paths)
    return BUILDERS[kind](paths, condition)


def sample_units(drafts: list[ItemDraft], sample: int | None, seed: int) -> list[ItemDraft]:
    if sample is None:
        return drafts
    units = sorted({d.unit for d in drafts})
    if sample <= 0 or sample > len(units):
        raise StudyError(f"cannot sample {sample} units from {len(units)}")
    chosen = set(random.Random(seed).sample(units, sample))
    return [d for d in drafts if d.unit in chosen]


def create_study(
    session: Session,
    name: str,
    kind: str,
    paths: list,
    *,
    overlap: int = 3,
    condition: str | None = None,
    guideline: str = "",
    sample: int | None = None,
    seed: int = 0,
    gold_path: str | os.PathLike | None = None,
    timeout_minutes: int = DEFAULT_TIMEOUT_MINUTES,
) -> Study:
    """Create a study and its items in the caller's transaction (nothing on any error)."""
    name = name.strip()
    if not name:
        raise StudyError("a study needs a name")
    if overlap < 1:
        raise StudyError("overlap (annotators per item) must be at least 1")
    if session.scalar(select(Study.id).where(Study.name == name)) is not None:
        raise StudyError(f"a study named {name!r} exists already")
    drafts = sample_units(build_items(kind, paths, condition), sample, seed)
    keys = set()
    for draft in drafts:
        if (draft.key, draft.condition) in keys:
            raise StudyError(f"item {draft.key} ({draft.condition or 'no condition'}) appears twice in the input")
        keys.add((draft.key, draft.condition))
    study = Study(
        name=name,
        kind=kind,
        guideline=guideline,
        overlap=overlap,
        questions=QUESTION_SPECS[kind],
        settings={
            "seed": seed,
            "timeout_minutes": timeout_minutes,
            "sample": sample,
            "sources": [str(p) for p in paths],
            "conditions": sorted({d.condition for d in drafts}),
        },
    )
    session.add(study)
    session.flush()
    items = [
        Item(
            study_id=study.id, key=d.key, condition=d.condition, position=i, questions=d.questions, payload=d.payload, meta=d.meta
        )
        for i, d in enumerate(drafts)
    ]
    session.add_all(items)
    if gold_path is not None:
        apply_gold(study, items, read_gold(gold_path), gold_path)
    session.flush()
    return study


def apply_gold(study: Study, items: list[Item], rows: list[dict], path) -> None:
    by_key: dict[str, list[Item]] = {}
    for item in items:
        by_key.setdefault(item.key, []).append(item)
    for line, row in enumerate(rows, start=2):
        matches = by_key.get(row["item"], [])
        if row.get("condition"):
            matches = [m for m in matches if m.condition == row["condition"]]
        if not matches:
            raise ReaderError(path, f"line {line}", f"no item {row['item']!r} in the study")
        for item in matches:
            try:
                value = check_value(study, item, row["question"], row["value"])
            except StudyError as err:
                raise ReaderError(path, f"line {line}", str(err)) from None
            item.gold = {**(item.gold or {}), row["question"]: value}
