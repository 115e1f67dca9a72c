"""The DST metrics, each named once (as sacreBLEU's metric classes name theirs).

A :class:`Metric` has the name the JSON contracts, CSV files and correlation tables use, a label
for people, the function of the per-turn statistics (:class:`metrics.turnstats.TurnStatistics`)
that computes it, and whether it takes λ.  Everything else reads them here: the aggregation
(:func:`metrics.scores.score_table`), the ``score`` JSON (:mod:`metrics.corpus`), the per-dialogue
values that are correlated with people (:func:`metrics.analysis.per_dialogue_metrics`), the score
table's columns (``python -m metrics score``), the signature, the presentation and the oracle.

>>> names()
('jga', 'm2', 'fga', 'sa', 'aga', 'rsa', 'f1')
>>> [m.display("0.5") if m.takes_lambda else m.display() for m in METRICS]
['JGA', 'M2', 'FGA(0.5)', 'SA', 'AGA', 'RSA', 'F1']
>>> FGA.key("0.5"), FGA.column("0.5"), JGA.key()
('fga_0.5', 'FGA_0.5', 'jga')
>>> [(m.name if m else None, lam) for m, lam in map(split_key, ("fga_0.5", "m2", "fga", "bleu"))]
[('fga', '0.5'), ('m2', None), (None, None), (None, None)]

Two orders, both chosen once here.  :data:`METRICS` is the order of the signature
(``metrics:jga+m2+fga+sa+aga+rsa+f1``) and of the correlation tables (one row per metric, FGA once
per λ, and the pairs of Williams' test in that order).  :data:`SCORE_TABLE` is the order of the
``score`` table and JSON: the FGA paper's Table 1 (JGA, SA, AGA, FGA) then RSA and F1; M2 appears
there only as its count (``turn_matches``, ``#M2``), beside JGA's (``exact_matches``, ``#M1``),
and the JSON lists the λ metrics after the others (``"fga": {"<λ>": value}``).

numpy is imported inside the per-turn functions, not at the top: importing the registry (names
and labels) stays as light as :mod:`metrics.reference`, the pure-Python oracle that the
benchmarks time as a whole process.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    import numpy as np

    from metrics.turnstats import TurnStatistics


# --- per-turn values: (stats, slot_count) -> one float per turn, NaN where the turn does not count ---


def jga_turns(stats: TurnStatistics, slot_count: int) -> np.ndarray:
    """1 where B_t == B'_t (M1), else 0."""
    return stats.exact.astype(float)


def m2_turns(stats: TurnStatistics, slot_count: int) -> np.ndarray:
    """1 where the turn matches locally (M2: exact, or type 2), else 0 (FGA at λ = ∞)."""
    return stats.local.astype(float)


def sa_turns(stats: TurnStatistics, slot_count: int) -> np.ndarray:
    """(|S| - misses - wrong) / |S|, TRADE's compute_acc."""
    return cast("np.ndarray", (slot_count - stats.misses - stats.wrong) / slot_count)


def aga_turns(stats: TurnStatistics, slot_count: int) -> np.ndarray:
    """|N_t ∩ B'_t| / |N_t| over the non-empty gold triplets N_t; NaN where N_t is empty."""
    import numpy as np

    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(stats.n_nonempty_gold > 0, stats.n_hit / stats.n_nonempty_gold, np.nan)


def rsa_turns(stats: TurnStatistics, slot_count: int) -> np.ndarray:
    """Slot accuracy over T* (the domain-slots in gold or prediction); 0 where T* is empty."""
    import numpy as np

    correct = stats.tstar - stats.misses - stats.wrong
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(stats.tstar > 0, correct / stats.tstar, 0.0)


def f1_turns(stats: TurnStatistics, slot_count: int) -> np.ndarray:
    """Slot F1 (TRADE's compute_prf): with an empty gold state, 1 if nothing is predicted, else 0."""
    import numpy as np

    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(stats.tp + stats.fp > 0, stats.tp / (stats.tp + stats.fp), 0.0)
        recall = np.where(stats.tp + stats.fn > 0, stats.tp / (stats.tp + stats.fn), 0.0)
        f1 = np.where(precision + recall > 0, 2 * precision * recall / (precision + recall), 0.0)
    gold_empty = (stats.tp + stats.fn) == 0
    return np.where(gold_empty, (stats.fp == 0).astype(float), f1)


def fga_turns(stats: TurnStatistics, lambdas: Sequence[float]) -> np.ndarray:
    """FGA's per-turn weights, turns × λ: 1 if exact, 1 - e^{-λ x} for a type-2 turn at distance x
    from its error, else 0 (λ = ∞ gives M2).  This is the definition; :func:`metrics.scores.fga`
    and ``dialogue_fga`` sum the same weights from the distinct type-2 distances, for a whole λ grid
    at once, and the tests check that both agree."""
    import numpy as np

    grid = np.asarray(lambdas, dtype=float)
    with np.errstate(invalid="ignore"):
        penalty = 1.0 - np.exp(-np.outer(stats.distance, grid))
    penalty[:, np.isinf(grid)] = 1.0
    weights = np.where(stats.type2[:, None], penalty, 0.0)
    return np.where(stats.exact[:, None], 1.0, weights)


def has_nonempty_gold(stats: TurnStatistics) -> np.ndarray:
    """The turns AGA averages over: those whose gold state has a non-empty value."""
    return stats.n_nonempty_gold > 0


# --- the registry ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Metric:
    """One DST metric.

    ``per_turn`` is called ``per_turn(stats, slot_count)`` and gives one value per turn, or, for a
    metric that takes λ, ``per_turn(stats, lambdas)`` and gives turns × λ.  The corpus or dialogue
    score is the mean over the turns ``counted`` (every turn when None), except RSA, whose
    ``aggregations`` choose how (:func:`metrics.scores.score_table`), and FGA, summed from
    distance counts.  ``count`` names the integer count ``score`` reports beside a rate: its JSON
    key and its table column.
    """

    name: str  # in JSON, CSV and tables; a metric with λ is keyed per λ: "fga_0.5"
    label: str  # for people: "JGA"; with λ "FGA(0.5)"
    description: str
    per_turn: Callable[..., np.ndarray] = field(repr=False)
    takes_lambda: bool = False
    counted: Callable[[TurnStatistics], np.ndarray] | None = field(default=None, repr=False)
    aggregations: tuple[str, ...] = ()  # the first is the default
    count: tuple[str, str] | None = None

    def key(self, lam: str | None = None) -> str:
        """The name in JSON and tables: ``jga``; ``fga_<λ label>`` for a metric that takes λ."""
        return f"{self.name}_{self._lambda(lam)}" if self.takes_lambda else self._no_lambda(lam, self.name)

    def display(self, lam: str | None = None) -> str:
        """The label for people: ``JGA``; ``FGA(0.5)``."""
        return f"{self.label}({self._lambda(lam)})" if self.takes_lambda else self._no_lambda(lam, self.label)

    def column(self, lam: str | None = None) -> str:
        """The ``score`` table's column: ``JGA``; ``FGA_0.5``."""
        return f"{self.label}_{self._lambda(lam)}" if self.takes_lambda else self._no_lambda(lam, self.label)

    def _lambda(self, lam: str | None) -> str:
        if lam is None:
            raise ValueError(f"{self.label} takes λ: give its label")
        return lam

    def _no_lambda(self, lam: str | None, text: str) -> str:
        if lam is not None:
            raise ValueError(f"{self.label} takes no λ")
        return text


JGA = Metric("jga", "JGA", "joint goal accuracy: exact-state turns, M1/N", jga_turns, count=("exact_matches", "#M1"))
M2 = Metric("m2", "M2", "turn-level (local) match rate M2/N: FGA at λ = ∞", m2_turns, count=("turn_matches", "#M2"))
FGA = Metric("fga", "FGA", "flexible goal accuracy: a type-2 error is forgiven by 1 - e^{-λ x}", fga_turns, takes_lambda=True)
SA = Metric("sa", "SA", "slot accuracy over |S| slots (TRADE)", sa_turns)
AGA = Metric("aga", "AGA", "average goal accuracy over turns with non-empty gold values", aga_turns, counted=has_nonempty_gold)
RSA = Metric(
    "rsa",
    "RSA",
    "relative slot accuracy over T*: macro (T* = 0 turns score 0), macro-skip (they are skipped), micro (Σ correct / Σ T*)",
    rsa_turns,
    aggregations=("macro", "macro-skip", "micro"),
)
F1 = Metric("f1", "F1", "slot F1 (TRADE)", f1_turns)

METRICS: tuple[Metric, ...] = (JGA, M2, FGA, SA, AGA, RSA, F1)
SCORE_TABLE: tuple[Metric, ...] = (JGA, SA, AGA, FGA, RSA, F1)
BY_NAME = {m.name: m for m in METRICS}


def names() -> tuple[str, ...]:
    """Every metric's name, in registry order."""
    return tuple(m.name for m in METRICS)


def split_key(key: str) -> tuple[Metric | None, str | None]:
    """The metric of a name in JSON and tables, and its λ label: ``fga_0.5`` -> (FGA, "0.5");
    ``jga`` -> (JGA, None); anything else -> (None, None)."""
    if key in BY_NAME and not BY_NAME[key].takes_lambda:
        return BY_NAME[key], None
    for metric in METRICS:
        if metric.takes_lambda and key.startswith(f"{metric.name}_"):
            return metric, key[len(metric.name) + 1 :]
    return None, None
