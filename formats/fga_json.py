"""FGA result JSON (the FGA authors' inference files for TRADE / SOM-DST):
``{dialogue_id: {turn_index_str: {"gt": {domain: {slot: value}}, "pr": {...}}}}``."""

from __future__ import annotations

import os
from typing import Any

from formats.dialogue import BeliefState, Dialogue, state_from_nested
from formats.errors import parse_json, read_text
from formats.json_turns import read_keyed_turns

FORMAT = "fga-json"


def sniff(document: Any) -> bool:
    return first_turn_has(document, ("gt", "pr"))


def first_turn_has(document: Any, keys: tuple[str, ...]) -> bool:
    if not isinstance(document, dict) or not document:
        return False
    turns = next(iter(document.values()))
    if not isinstance(turns, dict) or not turns:
        return False
    record = next(iter(turns.values()))
    return isinstance(record, dict) and all(k in record for k in keys)


def _parse_turn(record: dict[str, Any], place: str) -> tuple[BeliefState, BeliefState]:
    for key in ("gt", "pr"):
        if key not in record:
            raise ValueError(f"missing {key!r}")
    return state_from_nested(record["gt"], where="gt: "), state_from_nested(record["pr"], where="pr: ")


def read(path: str | os.PathLike[str], data: bytes | None = None, document: Any = None) -> list[Dialogue]:
    if document is None:
        document = parse_json(path, read_text(path, data))
    return read_keyed_turns(path, document, _parse_turn)
