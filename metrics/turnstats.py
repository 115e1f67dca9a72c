"""Per-turn statistics, extracted once (the sacreBLEU idea).

Every metric, every λ and every bootstrap resample is computed from these arrays,
so the set operations on belief states run exactly once per turn.

>>> from formats.dialogue import Dialogue, Turn
>>> gold = [frozenset(), frozenset({("hotel", "name", "a")}), frozenset({("hotel", "name", "a"), ("hotel", "area", "east")})]
>>> pred = [frozenset(), frozenset({("hotel", "name", "b")}), frozenset({("hotel", "name", "b"), ("hotel", "area", "east")})]
>>> d = Dialogue("d1", [Turn(i, gold=g, pred=p) for i, (g, p) in enumerate(zip(gold, pred))])
>>> stats = extract([d])
>>> stats.exact.tolist(), stats.local.tolist(), stats.distance.tolist()
([True, False, False], [True, False, True], [0, 0, 1])
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np
from numpy.typing import NDArray

from formats.dialogue import EMPTY_VALUES, BeliefState, Dialogue, normalise_state

COUNT_FIELDS = ("misses", "wrong", "tstar", "n_nonempty_gold", "n_hit", "tp", "fp", "fn")


@dataclass
class TurnStatistics:
    """Arrays with one entry per turn, dialogues concatenated in order.

    exact      B_t == B'_t (M1)
    local      turn-level (local) match (M2): exact, or t > 0, turn t-1 inexact,
               T'_t ⊆ B_t and T_t ⊆ B'_t (the authors' reference semantics)
    distance   t - t_err for a type-2 turn (local but inexact), else 0
    misses     |B_t \\ B'_t|; wrong: predicted triplets not in gold whose
               domain-slot was not already missed (TRADE's slot-accuracy rule)
    tstar      distinct domain-slots in B_t ∪ B'_t (RSA's T*)
    n_nonempty_gold, n_hit   |N_t| and |N_t ∩ B'_t| (AGA)
    tp, fp, fn               for slot precision / recall / F1
    """

    dialogue_ids: list[str]
    dialogue_index: np.ndarray  # which dialogue each turn belongs to
    turn_index: np.ndarray
    exact: NDArray[np.bool_]
    local: NDArray[np.bool_]
    distance: np.ndarray
    misses: np.ndarray
    wrong: np.ndarray
    tstar: np.ndarray
    n_nonempty_gold: np.ndarray
    n_hit: np.ndarray
    tp: np.ndarray
    fp: np.ndarray
    fn: np.ndarray

    @property
    def n_turns(self) -> int:
        return int(self.exact.size)

    @property
    def n_dialogues(self) -> int:
        return len(self.dialogue_ids)

    @property
    def type2(self) -> np.ndarray:
        return self.local & ~self.exact

    def subset(self, mask: np.ndarray) -> TurnStatistics:
        """The same statistics for the selected turns only (dialogue ids kept)."""
        arrays = {name: getattr(self, name)[mask] for name in _ARRAY_FIELDS}
        return TurnStatistics(dialogue_ids=self.dialogue_ids, **arrays)


_ARRAY_FIELDS = ("dialogue_index", "turn_index", "exact", "local", "distance", *COUNT_FIELDS)


def _turn_counts(gold: BeliefState, pred: BeliefState) -> tuple[int, ...]:
    missed = gold - pred
    extra = pred - gold
    missed_slots = {(d, s) for d, s, _ in missed}
    wrong = sum(1 for d, s, _ in extra if (d, s) not in missed_slots)
    tstar = len({(d, s) for d, s, _ in gold} | {(d, s) for d, s, _ in pred})
    nonempty = [t for t in gold if t[2] not in EMPTY_VALUES]
    n_hit = sum(1 for t in nonempty if t in pred)
    tp = len(gold) - len(missed)
    return len(missed), wrong, tstar, len(nonempty), n_hit, tp, len(extra), len(missed)


def dialogue_rows(gold_states: Sequence[BeliefState], pred_states: Sequence[BeliefState]) -> list[tuple[int, ...]]:
    """Per-turn rows ``(exact, local, distance, *COUNT_FIELDS)`` for one dialogue."""
    rows = []
    t_err = -1
    prev_gold: BeliefState = frozenset()
    prev_pred: BeliefState = frozenset()
    prev_exact = True
    for t, (gold, pred) in enumerate(zip(gold_states, pred_states)):
        exact = gold == pred
        local = exact
        distance = 0
        if not exact:
            if t > 0 and not prev_exact and (pred - prev_pred) <= gold and (gold - prev_gold) <= pred:
                local = True
                distance = t - t_err
            else:
                t_err = t
        rows.append((exact, local, distance, *_turn_counts(gold, pred)))
        prev_gold, prev_pred, prev_exact = gold, pred, exact
    return rows


def extract(dialogues: Iterable[Dialogue], *, normalise: bool = False) -> TurnStatistics:
    """Extract per-turn statistics from dialogues that carry predictions."""
    ids: list[str] = []
    dialogue_index: list[int] = []
    turn_index: list[int] = []
    rows: list[tuple[int, ...]] = []
    for d_idx, dialogue in enumerate(dialogues):
        if not dialogue.has_predictions:
            raise ValueError(f"dialogue {dialogue.id!r} ({dialogue.source}) has no predicted belief states")
        gold = [turn.gold for turn in dialogue.turns]
        pred = cast("list[BeliefState]", [turn.pred for turn in dialogue.turns])  # has_predictions: none is None
        if normalise:
            gold = [normalise_state(s) for s in gold]
            pred = [normalise_state(s) for s in pred]
        ids.append(dialogue.id)
        rows.extend(dialogue_rows(gold, pred))
        dialogue_index.extend([d_idx] * len(gold))
        turn_index.extend(turn.index for turn in dialogue.turns)
    table = np.array(rows, dtype=np.int64).reshape(-1, 3 + len(COUNT_FIELDS))
    counts = {name: table[:, 3 + i] for i, name in enumerate(COUNT_FIELDS)}
    return TurnStatistics(
        dialogue_ids=ids,
        dialogue_index=np.array(dialogue_index, dtype=np.int64),
        turn_index=np.array(turn_index, dtype=np.int64),
        exact=table[:, 0].astype(bool),
        local=table[:, 1].astype(bool),
        distance=table[:, 2],
        **counts,
    )


def project_domain(dialogues: Iterable[Dialogue], domain: str) -> list[Dialogue]:
    """The dialogues with every state restricted to one domain's triplets."""
    projected = []
    for dialogue in dialogues:
        turns = [
            type(turn)(
                index=turn.index,
                gold=frozenset(t for t in turn.gold if t[0] == domain),
                pred=None if turn.pred is None else frozenset(t for t in turn.pred if t[0] == domain),
            )
            for turn in dialogue.turns
        ]
        projected.append(Dialogue(dialogue.id, turns, dialogue.source, dialogue.system_name))
    return projected
