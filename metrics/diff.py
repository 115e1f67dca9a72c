"""What is wrong in each turn: the differences a person needs to judge a dialogue.

>>> from tests.examples import FGA_FIG1_GOLD, FGA_FIG1_PRED
>>> turns = turn_differences(FGA_FIG1_GOLD, FGA_FIG1_PRED)
>>> turns[3].missing, turns[3].new_gold, turns[3].local, turns[3].error_turn
([('hotel', 'area', 'centre'), ('hotel', 'stars', '0')], [('attraction', 'area', 'centre')], True, 2)
>>> first_error_turn(turns)
2
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from formats.dialogue import BeliefState
from metrics.turnstats import dialogue_rows


@dataclass(frozen=True)
class TurnDifference:
    index: int
    exact: bool
    local: bool  # turn-level match (the FGA reference semantics)
    missing: list[tuple[str, str, str]]  # gold triplets whose domain-slot the prediction lacks
    extra: list[tuple[str, str, str]]  # predicted triplets whose domain-slot gold lacks
    wrong: list[tuple[str, str, str, str]]  # (domain, slot, gold value, predicted value)
    new_gold: list[tuple[str, str, str]]  # T_t = B_t minus B_{t-1}
    new_pred: list[tuple[str, str, str]]  # T'_t
    error_turn: int | None  # the type-1 error this turn's inexactness comes from (None if exact)


def _by_slot(state: BeliefState) -> dict[tuple[str, str], str]:
    return {(d, s): v for d, s, v in state}


def turn_differences(gold_states: Sequence[BeliefState], pred_states: Sequence[BeliefState]) -> list[TurnDifference]:
    rows = dialogue_rows(gold_states, pred_states)
    result = []
    previous_gold: BeliefState = frozenset()
    previous_pred: BeliefState = frozenset()
    error_turn = None
    for t, (gold, pred, row) in enumerate(zip(gold_states, pred_states, rows)):
        exact, local = bool(row[0]), bool(row[1])
        if not exact and not local:
            error_turn = t
        gold_slots, pred_slots = _by_slot(gold), _by_slot(pred)
        result.append(
            TurnDifference(
                index=t,
                exact=exact,
                local=local,
                missing=sorted((d, s, v) for (d, s), v in gold_slots.items() if (d, s) not in pred_slots),
                extra=sorted((d, s, v) for (d, s), v in pred_slots.items() if (d, s) not in gold_slots),
                wrong=sorted(
                    (d, s, v, pred_slots[(d, s)])
                    for (d, s), v in gold_slots.items()
                    if (d, s) in pred_slots and pred_slots[(d, s)] != v
                ),
                new_gold=sorted(gold - previous_gold),
                new_pred=sorted(pred - previous_pred),
                error_turn=None if exact else error_turn,
            )
        )
        previous_gold, previous_pred = gold, pred
    return result


def first_error_turn(turns: Sequence[TurnDifference]) -> int | None:
    return next((t.index for t in turns if not t.exact), None)


def format_state(state: BeliefState) -> str:
    """``attraction: area=centre | hotel: day=wednesday people=4`` (empty: ``{}``)."""
    domains: dict[str, list[str]] = {}
    for d, s, v in sorted(state):
        domains.setdefault(d, []).append(f"{s}={v}")
    return " | ".join(f"{d}: {' '.join(slots)}" for d, slots in domains.items()) or "{}"
