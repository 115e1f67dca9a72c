"""TRADE-format dialogues (``test_dials.json``): utterances and gold states.

``[{dialogue_idx, domains, dialogue: [{turn_idx, system_transcript, transcript,
turn_label: [[domain-slot, value]], belief_state: [{"slots": [[domain-slot, value]],
"act": ...}], domain}]}]``.  The dialogues carry no prediction (``pred`` is None);
:func:`attach_utterances` copies their utterances onto predicted dialogues.
"""

from __future__ import annotations

import os
from typing import Any

from formats.dialogue import BeliefState, Dialogue, Turn, state_from_triplets
from formats.errors import ReaderError, expect, parse_json, read_text

FORMAT = "trade-dials"


def sniff(document: Any) -> bool:
    return (
        isinstance(document, list)
        and bool(document)
        and isinstance(document[0], dict)
        and "dialogue_idx" in document[0]
        and "dialogue" in document[0]
    )


def _pairs(pairs: Any, path: str | os.PathLike[str], place: str, key: str) -> list[tuple[str, str, str]]:
    expect(isinstance(pairs, list), path, place, f"{key} must be a list of [domain-slot, value] pairs")
    triplets = []
    for pair in pairs:
        ok = isinstance(pair, list) and len(pair) == 2 and all(isinstance(p, str) for p in pair) and "-" in pair[0]
        expect(ok, path, place, f"{key} entry {pair!r} is not a [domain-slot, value] pair")
        domain, slot = pair[0].split("-", 1)
        triplets.append((domain, slot, pair[1]))
    return triplets


def turn_label(record: dict[str, Any], path: str | os.PathLike[str], place: str) -> BeliefState:
    return frozenset(_pairs(record.get("turn_label", []), path, place, "turn_label"))


def read(path: str | os.PathLike[str], data: bytes | None = None, document: Any = None) -> list[Dialogue]:
    if document is None:
        document = parse_json(path, read_text(path, data))
    expect(isinstance(document, list), path, "", "expected a JSON list of dialogues")
    expect(bool(document), path, "", "no dialogues in the file")
    dialogues = []
    for position, entry in enumerate(document):
        place = f"dialogue [{position}]"
        expect(isinstance(entry, dict) and "dialogue_idx" in entry, path, place, "lacks 'dialogue_idx'")
        dialogue_id = str(entry["dialogue_idx"])
        place = f"dialogue {dialogue_id!r}"
        turns_raw = entry.get("dialogue")
        expect(isinstance(turns_raw, list) and bool(turns_raw), path, place, "'dialogue' must be a non-empty list of turns")
        turns = []
        for position_in_dialogue, record in enumerate(turns_raw):
            turn_place = f"{place} turn [{position_in_dialogue}]"
            expect(isinstance(record, dict), path, turn_place, "expected an object")
            index = record.get("turn_idx")
            lined_up = index == position_in_dialogue
            expect(lined_up, path, turn_place, f"turn_idx {index!r} does not line up (expected {position_in_dialogue})")
            for key in ("system_transcript", "transcript"):
                expect(isinstance(record.get(key), str), path, turn_place, f"'{key}' must be a string")
            gold: set[tuple[str, str, str]] = set()
            states = record.get("belief_state", [])
            expect(isinstance(states, list), path, turn_place, "'belief_state' must be a list")
            for state in states:
                expect(isinstance(state, dict), path, turn_place, "belief_state entries must be objects with 'slots'")
                gold.update(_pairs(state.get("slots", []), path, turn_place, "belief_state slots"))
            turn_label(record, path, turn_place)  # validated here so later users can trust it
            try:
                gold_state = state_from_triplets(gold)
            except ValueError as err:
                raise ReaderError(path, turn_place, f"belief_state: {err}") from None
            turns.append(Turn(index, record["system_transcript"].strip(), record["transcript"].strip(), gold_state, None))
        dialogues.append(Dialogue(dialogue_id, turns, source=str(path)))
    return dialogues


def attach_utterances(dialogues: list[Dialogue], source: list[Dialogue]) -> list[Dialogue]:
    """Copy system and user utterances from TRADE dialogues onto predicted dialogues.

    A dialogue missing from ``source``, or with a different number of turns, is an error.
    """
    by_id = {d.id: d for d in source}
    merged = []
    for dialogue in dialogues:
        other = by_id.get(dialogue.id)
        if other is None:
            raise ReaderError(source[0].source if source else "", f"dialogue {dialogue.id!r}", "not in the dialogue file")
        if len(other.turns) != len(dialogue.turns):
            raise ReaderError(
                other.source,
                f"dialogue {dialogue.id!r}",
                f"has {len(other.turns)} turns but {dialogue.source} has {len(dialogue.turns)}: turns do not line up",
            )
        turns = [Turn(t.index, o.system, o.user, t.gold, t.pred) for t, o in zip(dialogue.turns, other.turns)]
        merged.append(Dialogue(dialogue.id, turns, dialogue.source, dialogue.system_name))
    return merged
