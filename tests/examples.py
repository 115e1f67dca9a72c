"""The papers' worked examples as belief-state sequences."""

from __future__ import annotations

from formats.dialogue import Dialogue, Turn


def state(**domains: dict[str, str]) -> frozenset:
    return frozenset((d, s, v) for d, slots in domains.items() for s, v in slots.items())


def dialogue(dialogue_id: str, gold: list[frozenset], pred: list[frozenset]) -> Dialogue:
    return Dialogue(dialogue_id, [Turn(i, gold=g, pred=p) for i, (g, p) in enumerate(zip(gold, pred))])


# FGA paper, Fig. 1 (MultiWOZ, SOM-DST predictions).
_HOTEL_FULL = {"area": "centre", "day": "wednesday", "people": "4", "stay": "2", "name": "cityroomz", "stars": "0"}
_HOTEL_PRED = {"day": "wednesday", "people": "4", "stay": "2", "name": "cityroomz"}
FGA_FIG1_GOLD = [
    state(),
    state(hotel={"name": "cityroomz"}),
    state(hotel=_HOTEL_FULL),
    state(attraction={"area": "centre"}, hotel=_HOTEL_FULL),
    state(attraction={"area": "centre"}, hotel=_HOTEL_FULL),
    state(attraction={"area": "centre"}, hotel=_HOTEL_FULL),
]
FGA_FIG1_PRED = [
    state(),
    state(hotel={"name": "cityroomz"}),
    state(hotel=_HOTEL_PRED),
    state(attraction={"area": "centre"}, hotel=_HOTEL_PRED),
    state(attraction={"area": "centre", "name": "all saints church"}, hotel=_HOTEL_PRED),
    state(attraction={"area": "centre", "name": "all saints church"}, hotel=_HOTEL_PRED),
]
FGA_FIG1 = dialogue("fig1", FGA_FIG1_GOLD, FGA_FIG1_PRED)

# RSA paper, Table 3: one turn, gold and two models.
RSA_T3_GOLD = state(restaurant={"area": "centre", "food": "indian", "people": "2"})
RSA_T3_MODEL_A = state(restaurant={"area": "centre", "food": "chinese"}, attraction={"area": "centre"})
RSA_T3_MODEL_B = state(
    restaurant={"area": "centre", "food": "chinese", "name": "nusha"}, attraction={"area": "centre", "pricerange": "cheap"}
)

# RSA paper, Table A6 (PMUL4648, SOM-DST): per-turn slot accuracy and RSA.
RSA_A6_SA = [0.9667, 0.9667, 0.9333, 0.9333, 0.9667, 0.9667, 0.9667, 0.9667, 0.9667, 0.9667]
RSA_A6_RSA = [0, 0, 0, 0, 0.6667, 0.7500, 0.8000, 0.8000, 0.8000, 0.8000]
