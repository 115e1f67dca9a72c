"""Plain data types shared by the readers, the metrics and the annotation layer.

A belief state is a frozenset of ``(domain, slot, value)`` triplets.  Nothing here
imports numpy, Streamlit or a database, so readers and metrics stay lean.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

Triplet = tuple[str, str, str]
BeliefState = frozenset[Triplet]

EMPTY_STATE: BeliefState = frozenset()

# The 30 domain-slot pairs of MultiWOZ 2.x in TRADE's five domains (|S| = 30).
# Slot names appear both with and without the "book " prefix in the wild (the FGA
# text files drop it), so lookups strip it first.
MULTIWOZ_SLOTS: dict[str, tuple[str, ...]] = {
    "hotel": ("pricerange", "type", "parking", "stay", "day", "people", "area", "stars", "internet", "name"),
    "train": ("destination", "day", "departure", "arriveby", "people", "leaveat"),
    "attraction": ("area", "name", "type"),
    "restaurant": ("food", "pricerange", "area", "name", "time", "day", "people"),
    "taxi": ("leaveat", "destination", "departure", "arriveby"),
}
MULTIWOZ_SLOT_COUNT = sum(len(slots) for slots in MULTIWOZ_SLOTS.values())

# Values that mean "no value" for AGA's N_t (the gold triplets with a non-empty value).
EMPTY_VALUES = frozenset({"", "none"})


@dataclass(frozen=True)
class Turn:
    """One user turn: utterances (may be empty) and the gold / predicted belief states."""

    index: int
    system: str = ""
    user: str = ""
    gold: BeliefState = EMPTY_STATE
    pred: BeliefState | None = None  # None: the source carries no prediction


@dataclass
class Dialogue:
    """A dialogue of turns in order; ``source`` names the file it came from."""

    id: str
    turns: list[Turn] = field(default_factory=list)
    source: str = ""
    system_name: str = ""

    @property
    def has_predictions(self) -> bool:
        return bool(self.turns) and all(turn.pred is not None for turn in self.turns)


def state_from_nested(nested: dict[str, Any], *, where: str = "") -> BeliefState:
    """``{domain: {slot: value}}`` -> frozenset of triplets; raises ValueError on wrong types."""
    if not isinstance(nested, dict):
        raise ValueError(f"{where}a belief state must be a dict of domains, got {type(nested).__name__}")
    triplets = set()
    for domain, slots in nested.items():
        if not isinstance(slots, dict):
            raise ValueError(f"{where}domain {domain!r} must map to a dict of slots, got {type(slots).__name__}")
        for slot, value in slots.items():
            if not isinstance(value, (str, int, float)) or isinstance(value, bool):
                raise ValueError(f"{where}slot {domain}-{slot} has a value of type {type(value).__name__}")
            triplets.add((str(domain), str(slot), str(value)))
    return frozenset(triplets)


def state_from_triplets(triplets: Iterable[Any]) -> BeliefState:
    """Triplets -> state; a belief state holds one value per domain-slot, so two
    different values for one domain-slot are an error (ValueError)."""
    state = frozenset(triplets)
    seen: dict[tuple[str, str], str] = {}
    for domain, slot, value in state:
        other = seen.setdefault((domain, slot), value)
        if other != value:
            raise ValueError(f"slot {domain}-{slot} has two values: {other!r} and {value!r}")
    return state


def state_to_nested(state: BeliefState) -> dict[str, dict[str, str]]:
    """Inverse of :func:`state_from_nested`, domains and slots sorted."""
    nested: dict[str, dict[str, str]] = {}
    for domain, slot, value in sorted(state):
        nested.setdefault(domain, {})[slot] = value
    return nested


def split_dash_triplet(text: str) -> Triplet:
    """``"hotel-book day-sunday"`` -> ``("hotel", "book day", "sunday")``.

    Domain and slot names never contain a hyphen in MultiWOZ, values sometimes do,
    so split on the first two hyphens only.
    """
    parts = text.split("-", 2)
    if len(parts) != 3 or not parts[0] or not parts[1]:
        raise ValueError(f"{text!r} is not of the form domain-slot-value")
    return parts[0], parts[1], parts[2]


_WHITESPACE = re.compile(r"\s+")


def normalise_value(value: str) -> str:
    """Opt-in value normalisation: lower case, trimmed, inner white space folded."""
    return _WHITESPACE.sub(" ", value.strip().lower())


def normalise_state(state: BeliefState) -> BeliefState:
    return frozenset((d.strip().lower(), s.strip().lower(), normalise_value(v)) for d, s, v in state)


def bare_slot(slot: str) -> str:
    """Slot name without MultiWOZ's ``book `` prefix."""
    return slot[5:] if slot.startswith("book ") else slot
