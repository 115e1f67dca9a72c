"""CoCo evaluation output (``run_eval.py`` of salesforce/coco-dst).

A JSON object whose keys are ``str(dialogue_idx) + str(turn_idx)`` with no separator
(``"PMUL4648.json3"``), each ``{ori_prediction, new_prediction, success, new_utter,
new_turn_label, ori_utter, ori_turn_label}``, plus three scalar summary keys.  The key
is split against the dialogue ids of the TRADE dialogue file it was run on.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from formats.errors import ReaderError, expect, parse_json, read_text
from formats.references import number

FORMAT = "coco-eval"
SUMMARY_KEYS = ("avg new joint acc", "avg ori joint acc", "success rate")
RECORD_KEYS = ("new_utter", "new_turn_label", "ori_utter", "ori_turn_label")


@dataclass(frozen=True)
class CocoTurn:
    dialogue_id: str
    turn_index: int
    original_utterance: str
    original_turn_label: tuple[tuple[str, str], ...]
    new_utterance: str
    new_turn_label: tuple[tuple[str, str], ...]
    success: bool | None


def sniff(document: Any) -> bool:
    return isinstance(document, dict) and any(k in document for k in SUMMARY_KEYS)


def _label(value: Any, path: str | os.PathLike[str], place: str, key: str) -> tuple[tuple[str, str], ...]:
    ok = isinstance(value, list) and all(
        isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p) and "-" in p[0] for p in value
    )
    expect(ok, path, place, f"{key} must be a list of [domain-slot, value] pairs")
    return tuple((p[0], p[1]) for p in value)


def split_key(
    key: str,
    dialogue_ids: set[str],
    path: str | os.PathLike[str],
) -> tuple[str, int]:
    """``"PMUL4648.json3"`` -> ``("PMUL4648.json", 3)`` using the known dialogue ids."""
    matches = [d for d in dialogue_ids if key.startswith(d) and number(key[len(d) :]) is not None]
    if not matches:
        pattern = re.match(r"^(.*?\.json)(\d+)$", key)
        hint = f" (dialogue {pattern.group(1)!r} is not in the dialogue file)" if pattern else ""
        raise ReaderError(path, f"key {key!r}", f"does not name a known dialogue and turn{hint}")
    if len(matches) > 1:
        raise ReaderError(path, f"key {key!r}", f"ambiguous: could be any of {sorted(matches)}")
    dialogue_id = matches[0]
    turn = number(key[len(dialogue_id) :])
    assert turn is not None  # every match above has a turn number
    return dialogue_id, turn


def read(path: str | os.PathLike[str], dialogue_ids: set[str], data: bytes | None = None, document: Any = None) -> list[CocoTurn]:
    if document is None:
        document = parse_json(path, read_text(path, data))
    expect(isinstance(document, dict), path, "", "expected a JSON object keyed by dialogue id + turn index")
    turns = []
    for key, record in document.items():
        if key in SUMMARY_KEYS:
            continue
        place = f"key {key!r}"
        expect(isinstance(record, dict), path, place, "expected an object")
        missing = [k for k in RECORD_KEYS if k not in record]
        expect(not missing, path, place, f"missing {', '.join(missing)}")
        for k in ("new_utter", "ori_utter"):
            expect(isinstance(record[k], str), path, place, f"{k} must be a string")
        dialogue_id, turn_index = split_key(key, dialogue_ids, path)
        success = record.get("success")
        turns.append(
            CocoTurn(
                dialogue_id,
                turn_index,
                record["ori_utter"].strip(),
                _label(record["ori_turn_label"], path, place, "ori_turn_label"),
                record["new_utter"].strip(),
                _label(record["new_turn_label"], path, place, "new_turn_label"),
                success if isinstance(success, bool) else None,
            )
        )
    expect(bool(turns), path, "", "no turns in the CoCo output")
    return turns
