"""DST metrics computed from :class:`~metrics.turnstats.TurnStatistics`.

All functions are vectorised over turns; FGA is vectorised over λ too.  Corpus
scores are over turns; per-dialogue scores are over each dialogue's turns.

>>> from formats.dialogue import Dialogue, Turn
>>> from metrics.turnstats import extract
>>> h = lambda **kw: frozenset(("hotel", k, v) for k, v in kw.items())
>>> gold = [h(), h(name="a"), h(name="a", area="east"), h(name="a", area="east", day="mon")]
>>> pred = [h(), h(name="a"), h(name="a"), h(name="a", day="mon")]
>>> stats = extract([Dialogue("d", [Turn(i, gold=g, pred=p) for i, (g, p) in enumerate(zip(gold, pred))])])
>>> round(float(fga(stats, [0.5])[0]), 4)   # turns: 1, 1, 0 (type 1), 1 - e^-0.5
0.5984
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import cast

import numpy as np

from metrics.registry import FGA, METRICS, RSA
from metrics.turnstats import TurnStatistics

RSA_AGGREGATIONS = RSA.aggregations


def lambda_from_forgetting(turns_to_forget: float, fraction: float) -> float:
    """λ = -ln(1 - p) / t_f: forget a mistake by fraction p after t_f turns.

    >>> round(lambda_from_forgetting(6, 0.95), 3)
    0.499
    """
    if not 0 <= fraction < 1 or turns_to_forget <= 0:
        raise ValueError("need 0 <= p < 1 and t_f > 0")
    return -math.log(1.0 - fraction) / turns_to_forget


def distance_counts(stats: TurnStatistics, per_dialogue: bool) -> tuple[np.ndarray, np.ndarray]:
    """Distinct type-2 distances u and how often each occurs (overall or per dialogue)."""
    type2 = stats.type2
    distances = stats.distance[type2]
    values, inverse = np.unique(distances, return_inverse=True)
    if not per_dialogue:
        return values, np.bincount(inverse, minlength=values.size).astype(float)
    counts = np.zeros((stats.n_dialogues, values.size))
    np.add.at(counts, (stats.dialogue_index[type2], inverse), 1.0)
    return values, counts


def fga_from_counts(
    exact: np.ndarray, n_turns: np.ndarray, distances: np.ndarray, counts: np.ndarray, lambdas: np.ndarray
) -> np.ndarray:
    """FGA(λ) = (M1 + Σ_type2 (1 - e^{-λ x})) / N for a whole λ grid at once.

    ``exact`` and ``n_turns`` are per unit (corpus or dialogue), ``counts`` is
    units × distinct distances.  Returns units × λ.
    """
    lambdas = np.asarray(lambdas, dtype=float)
    with np.errstate(invalid="ignore"):
        penalty = 1.0 - np.exp(-np.outer(distances, lambdas))  # distances × λ
    penalty[:, np.isinf(lambdas)] = 1.0
    with np.errstate(invalid="ignore", divide="ignore"):
        return cast(np.ndarray, (exact[..., None] + counts @ penalty) / n_turns[..., None])


def fga(stats: TurnStatistics, lambdas: Sequence[float]) -> np.ndarray:
    """Corpus FGA for each λ."""
    distances, counts = distance_counts(stats, per_dialogue=False)
    exact = np.array(float(stats.exact.sum()))
    return fga_from_counts(exact, np.array(float(stats.n_turns)), distances, counts, np.asarray(lambdas))


def dialogue_fga(stats: TurnStatistics, lambdas: Sequence[float]) -> np.ndarray:
    """Per-dialogue FGA, dialogues × λ."""
    distances, counts = distance_counts(stats, per_dialogue=True)
    exact = per_dialogue_sum(stats, stats.exact)
    n_turns = per_dialogue_sum(stats, np.ones(stats.n_turns))
    return fga_from_counts(exact, n_turns, distances, counts, np.asarray(lambdas))


def per_dialogue_sum(stats: TurnStatistics, values: np.ndarray) -> np.ndarray:
    return np.bincount(stats.dialogue_index, weights=values.astype(float), minlength=stats.n_dialogues)


def turn_values(stats: TurnStatistics, slot_count: int) -> dict[str, np.ndarray]:
    """Per-turn values of the metrics without λ (NaN where a turn does not count), keyed by
    registry name in registry order: jga, m2, sa, aga, rsa, f1."""
    return {m.name: m.per_turn(stats, slot_count) for m in METRICS if not m.takes_lambda}


def _rsa(stats: TurnStatistics, rsa_values: np.ndarray, aggregation: str, groups: np.ndarray | None) -> np.ndarray:
    """RSA aggregated over turns: macro (T*=0 turns score 0), macro-skip, micro."""
    if aggregation not in RSA_AGGREGATIONS:
        raise ValueError(f"RSA aggregation must be one of {RSA_AGGREGATIONS}, got {aggregation!r}")
    counted = stats.tstar > 0
    if aggregation == "macro":
        return _mean(rsa_values, np.ones_like(counted), groups, stats.n_dialogues)
    if aggregation == "macro-skip":
        return _mean(rsa_values, counted, groups, stats.n_dialogues)
    correct = (stats.tstar - stats.misses - stats.wrong).astype(float)
    numerator = _sum(correct, groups, stats.n_dialogues)
    denominator = _sum(stats.tstar.astype(float), groups, stats.n_dialogues)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denominator > 0, numerator / np.where(denominator > 0, denominator, 1), np.nan)


def _sum(values: np.ndarray, groups: np.ndarray | None, n_groups: int) -> np.ndarray:
    if groups is None:
        return np.array(values.sum(dtype=float))
    return np.bincount(groups, weights=values.astype(float), minlength=n_groups)


def _mean(values: np.ndarray, counted: np.ndarray, groups: np.ndarray | None, n_groups: int) -> np.ndarray:
    """Mean of ``values`` over the counted turns, overall or per group; NaN for no turns."""
    counted = counted.astype(bool)
    total = _sum(np.where(counted, values, 0.0), groups, n_groups)
    n = _sum(counted.astype(float), groups, n_groups)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, total / np.where(n > 0, n, 1), np.nan)


def score_table(
    stats: TurnStatistics,
    lambdas: Sequence[float],
    *,
    slot_count: int,
    rsa: str = "macro",
    per_dialogue: bool = False,
) -> dict[str, np.ndarray]:
    """Every metric, overall (0-d arrays) or per dialogue (arrays of length D).

    Keys: turns, the registry's counts (exact_matches, turn_matches) and every registry
    metric by name (jga, m2, fga, sa, aga, rsa, f1); ``fga`` has shape ``(λ,)`` or ``(D, λ)``.
    A metric is the mean of its per-turn values over the turns it counts, except RSA (by its
    aggregation) and FGA (from the type-2 distance counts, the whole λ grid at once).  AGA is
    NaN where no turn has a non-empty gold state.
    """
    groups = stats.dialogue_index if per_dialogue else None
    n = stats.n_dialogues
    values = turn_values(stats, slot_count)
    every_turn = np.ones(stats.n_turns, dtype=bool)
    table = {"turns": _sum(every_turn, groups, n)}
    for metric in METRICS:
        if metric.count is not None:
            table[metric.count[0]] = _sum(values[metric.name], groups, n)
    for metric in METRICS:
        if metric is FGA:
            table[metric.name] = dialogue_fga(stats, lambdas) if per_dialogue else fga(stats, lambdas)
        elif metric is RSA:
            table[metric.name] = _rsa(stats, values[metric.name], rsa, groups)
        else:
            counted = every_turn if metric.counted is None else metric.counted(stats)
            table[metric.name] = _mean(values[metric.name], counted, groups, n)
    return table


def ratio_parts(
    stats: TurnStatistics, lambdas: Sequence[float], *, slot_count: int, rsa: str = "macro"
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Every registry metric as a per-dialogue numerator and denominator, so that a corpus score over any
    multiset of dialogues is ``Σ numerator / Σ denominator`` (turn-weighted, as papers report a tracker's
    JGA): the system-level analysis resamples dialogues with these.  Keys as :func:`score_table`; ``fga``'s
    numerator is dialogues × λ, every denominator has length D.

    >>> from formats.dialogue import Dialogue, Turn
    >>> from metrics.turnstats import extract
    >>> h = lambda **kw: frozenset(("hotel", k, v) for k, v in kw.items())
    >>> one = Dialogue("a", [Turn(0, gold=h(name="x"), pred=h(name="x")), Turn(1, gold=h(day="m"), pred=h())])
    >>> two = Dialogue("b", [Turn(0, gold=h(area="e"), pred=h(area="e"))])
    >>> stats = extract([one, two])
    >>> numerator, denominator = ratio_parts(stats, [0.5], slot_count=30)["jga"]
    >>> numerator.tolist(), denominator.tolist(), float(numerator.sum() / denominator.sum())
    ([1.0, 1.0], [2.0, 1.0], 0.6666666666666666)
    """
    n = stats.n_dialogues
    groups = stats.dialogue_index
    values = turn_values(stats, slot_count)
    every_turn = np.ones(stats.n_turns, dtype=bool)
    turns = _sum(every_turn, groups, n)
    parts: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for metric in METRICS:
        if metric is FGA:
            distances, counts = distance_counts(stats, per_dialogue=True)
            exact = per_dialogue_sum(stats, stats.exact)
            parts[metric.name] = (fga_from_counts(exact, np.ones(n), distances, counts, np.asarray(lambdas)), turns)
            continue
        if metric is RSA and rsa not in RSA_AGGREGATIONS:
            raise ValueError(f"RSA aggregation must be one of {RSA_AGGREGATIONS}, got {rsa!r}")
        if metric is RSA and rsa == "micro":
            correct = (stats.tstar - stats.misses - stats.wrong).astype(float)
            parts[metric.name] = (_sum(correct, groups, n), _sum(stats.tstar.astype(float), groups, n))
            continue
        if metric is RSA:
            counted = every_turn if rsa == "macro" else stats.tstar > 0
        else:
            counted = every_turn if metric.counted is None else metric.counted(stats).astype(bool)
        total = _sum(np.where(counted, values[metric.name], 0.0), groups, n)
        parts[metric.name] = (total, _sum(counted.astype(float), groups, n))
    return parts
