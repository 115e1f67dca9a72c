"""Shared checks for JSON files keyed ``{dialogue_id: {turn_index_str: {...}}}``."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from formats.dialogue import BeliefState, Dialogue, Turn
from formats.errors import ReaderError, expect

TurnParser = Callable[[dict[str, Any], str], tuple[BeliefState, BeliefState]]


def read_keyed_turns(path: str | os.PathLike[str], document: Any, parse_turn: TurnParser) -> list[Dialogue]:
    """Dialogues from ``{dialogue: {turn: record}}``; turn keys may come in any order
    but must be 0..n-1 exactly."""
    expect(isinstance(document, dict), path, "", f"expected a JSON object of dialogues, got {type(document).__name__}")
    expect(bool(document), path, "", "no dialogues in the file")
    dialogues = []
    for dialogue_id, turns_by_key in document.items():
        place = f"key {dialogue_id!r}"
        expect(isinstance(turns_by_key, dict), path, place, "expected an object of turns keyed by turn index")
        expect(bool(turns_by_key), path, place, "the dialogue has no turns")
        indexed = {}
        for key, record in turns_by_key.items():
            try:
                index = int(key)
            except ValueError:
                raise ReaderError(path, f"{place} turn {key!r}", "turn keys must be integers") from None
            expect(isinstance(record, dict), path, f"{place} turn {key!r}", "expected an object")
            indexed[index] = (key, record)
        if sorted(indexed) != list(range(len(indexed))):
            missing = sorted(set(range(max(indexed) + 1)) - set(indexed))
            raise ReaderError(path, place, f"turns do not line up: expected 0..{len(indexed) - 1}, missing {missing[:5]}")
        turns = []
        for index in range(len(indexed)):
            key, record = indexed[index]
            try:
                gold, pred = parse_turn(record, f"{place} turn {key!r}")
            except ValueError as err:
                if isinstance(err, ReaderError):
                    raise
                raise ReaderError(path, f"{place} turn {key!r}", str(err)) from None
            turns.append(Turn(index=index, gold=gold, pred=pred))
        dialogues.append(Dialogue(str(dialogue_id), turns, source=str(path)))
    return dialogues
