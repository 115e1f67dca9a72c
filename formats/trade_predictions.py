"""TRADE predictions (``all_prediction_TRADE.json``):
``{dialogue_id: {turn_index_str: {"turn_belief": [...], "pred_bs_ptr": [...]}}}``.

Triplets are written ``domain-slot-value`` and the slot may contain a space
(``hotel-book day-sunday``).  Turn keys come out of order.  Gold may hold
unreachable ``X-none`` triplets: they are kept, as the authors' JGA counts them.
"""

from __future__ import annotations

import os
from typing import Any

from formats.dialogue import BeliefState, Dialogue, split_dash_triplet, state_from_triplets
from formats.errors import parse_json, read_text
from formats.fga_json import first_turn_has
from formats.json_turns import read_keyed_turns

FORMAT = "trade-pred"


def sniff(document: Any) -> bool:
    return first_turn_has(document, ("turn_belief", "pred_bs_ptr"))


def _triplets(values: Any, key: str) -> BeliefState:
    if not isinstance(values, list):
        raise ValueError(f"{key} must be a list of 'domain-slot-value' strings")
    triplets = set()
    for value in values:
        if not isinstance(value, str):
            raise ValueError(f"{key} holds a {type(value).__name__}, not a 'domain-slot-value' string")
        triplets.add(split_dash_triplet(value))
    try:
        return state_from_triplets(triplets)
    except ValueError as err:
        raise ValueError(f"{key}: {err}") from None


def _parse_turn(record: dict[str, Any], place: str) -> tuple[BeliefState, BeliefState]:
    for key in ("turn_belief", "pred_bs_ptr"):
        if key not in record:
            raise ValueError(f"missing {key!r}")
    return _triplets(record["turn_belief"], "turn_belief"), _triplets(record["pred_bs_ptr"], "pred_bs_ptr")


def read(path: str | os.PathLike[str], data: bytes | None = None, document: Any = None) -> list[Dialogue]:
    if document is None:
        document = parse_json(path, read_text(path, data))
    return read_keyed_turns(path, document, _parse_turn)
