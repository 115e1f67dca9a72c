"""A straightforward per-turn Python loop in the style of the authors' scripts.

It recomputes every set operation for every λ.  It is the oracle the tests
compare the vectorised engine with, and the baseline the benchmarks measure: it
shares only the metric names with the engine (:mod:`metrics.registry`, which
imports no numpy either), none of its arithmetic.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from formats.dialogue import EMPTY_VALUES, BeliefState
from metrics.registry import AGA, F1, FGA, JGA, RSA, SA


def fga_loop(gold: list[BeliefState], pred: list[BeliefState], lam: float) -> list[float]:
    """Per-turn FGA weights for one dialogue (Algorithm 1 with the reference scripts'
    local-match rule: type 2 needs the previous turn to be inexact; t_err starts at -1)."""
    weights = []
    t_err = -1
    for t in range(len(gold)):
        if gold[t] == pred[t]:
            weights.append(1.0)
            continue
        if t > 0 and gold[t - 1] != pred[t - 1]:
            turn_gold = gold[t] - gold[t - 1]
            turn_pred = pred[t] - pred[t - 1]
            if turn_pred <= gold[t] and turn_gold <= pred[t]:
                weights.append(1.0 - math.exp(-lam * (t - t_err)))
                continue
        t_err = t
        weights.append(0.0)
    return weights


def slot_accuracy_loop(gold: BeliefState, pred: BeliefState, slot_count: int) -> float:
    """TRADE's compute_acc."""
    miss_gold = 0
    miss_slot = []
    for g in gold:
        if g not in pred:
            miss_gold += 1
            miss_slot.append((g[0], g[1]))
    wrong_pred = 0
    for p in pred:
        if p not in gold and (p[0], p[1]) not in miss_slot:
            wrong_pred += 1
    return (slot_count - miss_gold - wrong_pred) / slot_count


def rsa_loop(gold: BeliefState, pred: BeliefState) -> float:
    tstar = len({(d, s) for d, s, _ in gold} | {(d, s) for d, s, _ in pred})
    if tstar == 0:
        return 0.0
    return slot_accuracy_loop(gold, pred, tstar)


def aga_loop(gold: BeliefState, pred: BeliefState) -> float | None:
    nonempty = [g for g in gold if g[2] not in EMPTY_VALUES]
    if not nonempty:
        return None
    return sum(1 for g in nonempty if g in pred) / len(nonempty)


def f1_loop(gold: BeliefState, pred: BeliefState) -> float:
    """TRADE's compute_prf."""
    if not gold:
        return 1.0 if not pred else 0.0
    tp = sum(1 for g in gold if g in pred)
    fp = sum(1 for p in pred if p not in gold)
    fn = sum(1 for g in gold if g not in pred)
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def corpus_loop(
    dialogues: Iterable[tuple[list[BeliefState], list[BeliefState]]], lambdas: Sequence[float], slot_count: int = 30
) -> dict[str, Any]:
    """Corpus scores by plain loops: JGA, SA, AGA, RSA (macro), F1 and FGA per λ."""
    turns = exact = 0
    sa = rsa = f1 = 0.0
    aga_values = []
    fga_sums = dict.fromkeys(lambdas, 0.0)
    for gold, pred in dialogues:
        for lam in lambdas:
            fga_sums[lam] += sum(fga_loop(gold, pred, lam))
        for g, p in zip(gold, pred):
            turns += 1
            exact += g == p
            sa += slot_accuracy_loop(g, p, slot_count)
            rsa += rsa_loop(g, p)
            f1 += f1_loop(g, p)
            value = aga_loop(g, p)
            if value is not None:
                aga_values.append(value)
    return {
        "turns": turns,
        JGA.name: exact / turns,
        SA.name: sa / turns,
        AGA.name: sum(aga_values) / len(aga_values) if aga_values else None,
        RSA.name: rsa / turns,
        F1.name: f1 / turns,
        FGA.name: {lam: total / turns for lam, total in fga_sums.items()},
    }
