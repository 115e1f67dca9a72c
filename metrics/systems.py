"""Systems as the unit: meta-evaluation of the metrics as the field does it.

A study may hold several systems' predictions (its conditions) for the same dialogues.  Papers rank
trackers by a *corpus* score, so each system's score here is turn-weighted over its rated dialogues:
``Σ per-turn value / Σ counted turns`` (``metrics.scores.ratio_parts``), not the mean of per-dialogue
scores.  The human score of a system is the mean of its rated dialogues' mean ratings; both sides are
computed on the same dialogues (those the system has ratings for), so a metric and the people judge the
same inputs.

Over the systems, four statistics (:data:`STATISTICS`):

- ``pearson``: Pearson's r of the corpus scores and the human scores;
- ``spearman``: Spearman's ρ (average ranks for ties);
- ``kendall``: Kendall's τ-b, which discounts pairs tied in either ranking;
- ``accuracy``: pairwise accuracy with ties (``acc_eq`` of Deutsch, Foster & Freitag, 2023): the share of
  system pairs that the metric and the people order the same way, a pair tied in both counting as
  agreement and a pair tied in one only as disagreement.  Ties are exact equality (no ε).

**Intervals** resample systems and dialogues together (BOOT-BOTH of Deutsch, Dror & Roth, 2021): each of
``resamples`` draws takes the systems with replacement and the dialogues with replacement (one draw of
dialogues shared by every system, as the systems were run on the same dialogues), rescores every system
on the drawn dialogues and recomputes the statistic; the 95% interval is the percentile interval of the
draws.  A draw where a statistic is undefined (every drawn system alike, or no spread) is left out and
counted.  Pairs of the same system drawn twice are not counted in pairwise accuracy (they are tied in
both by construction) and τ-b discounts them.

**Tests between two metrics** are paired: the difference of the two statistics on the same draws; its
interval is the percentile interval of the differences, and its p the interval's own test (two-sided,
``2 × min(P*(Δ ≤ 0), P*(Δ ≥ 0))``), so p < 0.05 exactly when the 95% interval leaves out 0.  Every
pair of metrics is tested and the p are Holm-adjusted over the pairs.

**Significance clusters** rank the metrics by the chosen statistic: the best metric heads cluster 1;
going down the ranking, a metric opens a new cluster when the head of the current cluster beats it
significantly (Holm-adjusted p < 0.05), and then heads it (the clustering of the WMT metrics task).

With few systems every statistic is a description of those systems rather than of trackers at large.  How
well the intervals cover at 4-20 systems is measured by ``bench/bench_systems.py`` and printed in
``docs/statistics/systems.md``; from it, intervals are given from 5 systems on and tests and clusters from 6
(:data:`MIN_SYSTEMS_FOR_INTERVALS`, :data:`MIN_SYSTEMS_FOR_TESTS`), and the note says which is missing.

>>> data = SystemScores(("a", "b", "c", "d"), ("d1", "d2"),
...     {"jga": np.array([[1, 1], [1, 0], [0, 1], [0, 0]], float)}, {"jga": np.ones((4, 2))},
...     np.array([[1, 1], [1, 0.5], [0.5, 0], [0, 0]]))
>>> metric, human = data.scores()
>>> metric["jga"].tolist(), human.tolist()
([[1.0, 0.5, 0.5, 0.0]], [[1.0, 0.75, 0.25, 0.0]])
>>> row = statistics_of(metric["jga"], human, np.arange(4)[None])
>>> round(float(row["pearson"][0]), 4), round(float(row["kendall"][0]), 4), float(row["accuracy"][0])
(0.8944, 0.9129, 0.8333333333333334)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from formats.dialogue import Dialogue
from formats.tidy import Vote, is_unsure
from metrics.corpus import ScoreSettings
from metrics.correlation import ratings_for
from metrics.registry import FGA
from metrics.scores import ratio_parts
from metrics.turnstats import extract

STATISTICS = ("pearson", "spearman", "kendall", "accuracy")
STATISTIC_NAMES = {
    "pearson": "Pearson r",
    "spearman": "Spearman ρ",
    "kendall": "Kendall τ-b",
    "accuracy": "pairwise accuracy",
}
MIN_SYSTEMS = 3  # a correlation over fewer systems is not computed
# With fewer systems the intervals under-cover in bench/bench_systems.py's simulation (docs/statistics/systems.md):
# at 4 systems Pearson's covered 0.88 at 100 dialogues, the paired difference 0.79-0.92; at 5 systems Pearson's
# 0.93-0.99 but the difference's 0.87-0.99; from 6 systems on Pearson's 0.93-0.99 and the difference's 0.92-0.99.
MIN_SYSTEMS_FOR_INTERVALS = 5
MIN_SYSTEMS_FOR_TESTS = 6
CONFIDENCE = 0.95
ALPHA = 0.05
METHOD = (
    "corpus (turn-weighted) metric and mean rating per system; 95% percentile intervals resampling systems "
    "and dialogues together (BOOT-BOTH); paired bootstrap tests between metrics, Holm over every pair"
)


@dataclass(frozen=True)
class SystemScores:
    """Systems × dialogues: each metric's per-dialogue numerator and denominator (zero where the system
    has no rating on the dialogue) and the dialogues' mean ratings (NaN where none)."""

    systems: tuple[str, ...]
    dialogues: tuple[str, ...]
    numerators: Mapping[str, np.ndarray]
    denominators: Mapping[str, np.ndarray]
    ratings: np.ndarray

    def scores(self, weights: np.ndarray | None = None) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """Every system's corpus score per metric and its human score, for each row of ``weights`` (draws ×
        dialogues: how often each dialogue is drawn; None: each once).  Returns draws × systems arrays,
        NaN where a system has no drawn rated dialogue."""
        if weights is None:
            weights = np.ones((1, len(self.dialogues)))
        rated = ~np.isnan(self.ratings)
        with np.errstate(invalid="ignore", divide="ignore"):
            metric = {k: (weights @ self.numerators[k].T) / (weights @ self.denominators[k].T) for k in self.numerators}
            human = (weights @ np.where(rated, self.ratings, 0.0).T) / (weights @ rated.T.astype(float))
        return metric, human


def system_scores(dialogues: Mapping[str, Sequence[Dialogue]], votes: Sequence[Vote], settings: ScoreSettings) -> SystemScores:
    """The systems with votes (in the order given), scored on their rated dialogues; "unsure" votes are
    left out as missing.  A metric with λ is one key per λ label (``fga_0.5``), as the dialogue level."""
    votes = [v for v in votes if not is_unsure(v.value)]
    per_system = []
    for name, system_dialogues in dialogues.items():
        rated = [v for v in votes if v.condition == name]
        if not rated:
            continue
        stats = extract(system_dialogues, normalise=settings.normalise)
        ratings = ratings_for(rated, stats.dialogue_ids, "mean")
        parts = ratio_parts(stats, settings.lambdas, slot_count=settings.slot_count, rsa=settings.rsa)
        per_system.append((name, stats.dialogue_ids, ratings, parts))
    ids = sorted({d for _, _, ratings, _ in per_system for d in ratings.dialogue_ids})
    column = {d: i for i, d in enumerate(ids)}
    shape = (len(per_system), len(ids))
    numerators: dict[str, np.ndarray] = {}
    denominators: dict[str, np.ndarray] = {}
    human = np.full(shape, np.nan)
    for s, (_, dialogue_ids, ratings, parts) in enumerate(per_system):
        row = {d: i for i, d in enumerate(dialogue_ids)}
        source = np.array([row[d] for d in ratings.dialogue_ids], dtype=int)
        target = np.array([column[d] for d in ratings.dialogue_ids], dtype=int)
        human[s, target] = ratings.value
        for name, (numerator, denominator) in parts.items():
            keys = [FGA.key(label) for label in settings.lambda_labels] if name == FGA.name else [name]
            for i, key in enumerate(keys):
                values = numerator[:, i] if numerator.ndim == 2 else numerator
                numerators.setdefault(key, np.zeros(shape))[s, target] = values[source]
                denominators.setdefault(key, np.zeros(shape))[s, target] = denominator[source]
    return SystemScores(tuple(p[0] for p in per_system), tuple(ids), numerators, denominators, human)


def _pearson(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson's r of each row pair (draws × systems); NaN where either row has no spread."""
    xc = x - x.mean(axis=1, keepdims=True)
    yc = y - y.mean(axis=1, keepdims=True)
    sxx, syy = (xc * xc).sum(axis=1), (yc * yc).sum(axis=1)
    scale = np.sqrt(sxx * syy)
    spread = (sxx > 1e-24 * np.maximum(1.0, (x * x).sum(axis=1))) & (syy > 1e-24 * np.maximum(1.0, (y * y).sum(axis=1)))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(spread, np.clip((xc * yc).sum(axis=1) / np.where(spread, scale, 1.0), -1.0, 1.0), np.nan)


def _ranks(values: np.ndarray) -> np.ndarray:
    from scipy.stats import rankdata

    return np.asarray(rankdata(values, axis=1), dtype=float)


def statistics_of(metric: np.ndarray, human: np.ndarray, drawn: np.ndarray) -> dict[str, np.ndarray]:
    """The four statistics for each draw: ``metric`` and ``human`` are draws × systems (the drawn systems'
    scores, in draw order), ``drawn`` the drawn systems' indices (pairs of one system drawn twice are left
    out of pairwise accuracy).  Rows with a NaN score give NaN."""
    k = metric.shape[1]
    first, second = np.triu_indices(k, 1)
    sx = np.sign(metric[:, first] - metric[:, second])
    sy = np.sign(human[:, first] - human[:, second])
    pairs = float(first.size)
    tied_x, tied_y = (sx == 0).sum(axis=1), (sy == 0).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        kendall = (sx * sy).sum(axis=1) / np.sqrt((pairs - tied_x) * (pairs - tied_y))
        distinct = drawn[:, first] != drawn[:, second]
        accuracy = ((sx == sy) & distinct).sum(axis=1) / distinct.sum(axis=1)
    result = {
        "pearson": _pearson(metric, human),
        "spearman": _pearson(_ranks(metric), _ranks(human)),
        "kendall": np.where(np.isfinite(kendall), kendall, np.nan),
        "accuracy": np.where(np.isfinite(accuracy), accuracy, np.nan),
    }
    missing = np.isnan(metric).any(axis=1) | np.isnan(human).any(axis=1)
    return {name: np.where(missing, np.nan, values) for name, values in result.items()}


def _percentile(draws: np.ndarray) -> tuple[float, float] | None:
    finite = draws[np.isfinite(draws)]
    if finite.size < max(20, draws.size // 2):
        return None
    low, high = np.quantile(finite, [(1 - CONFIDENCE) / 2, (1 + CONFIDENCE) / 2])
    return float(low), float(high)


def _bootstrap_p(differences: np.ndarray) -> float | None:
    """The percentile interval's own two-sided test of 0: ``2 min(P*(Δ ≤ 0), P*(Δ ≥ 0))``, at most 1."""
    finite = differences[np.isfinite(differences)]
    if finite.size < max(20, differences.size // 2):
        return None
    return float(min(1.0, 2 * min(np.mean(finite <= 0), np.mean(finite >= 0))))


def _holm(p: Sequence[float | None]) -> list[float | None]:
    known = [(value, i) for i, value in enumerate(p) if value is not None]
    adjusted: list[float | None] = [None] * len(p)
    running = 0.0
    for rank, (value, i) in enumerate(sorted(known)):
        running = max(running, min(1.0, (len(known) - rank) * value))
        adjusted[i] = running
    return adjusted


def meta_evaluate(
    data: SystemScores,
    *,
    resamples: int = 1000,
    seed: int = 0,
    statistic: str = "pearson",
    min_intervals: int = MIN_SYSTEMS_FOR_INTERVALS,
    min_tests: int = MIN_SYSTEMS_FOR_TESTS,
) -> dict[str, Any]:
    """The system-level meta-evaluation of :class:`SystemScores` (the ``python -m metrics systems --json``
    contract): ``systems`` (corpus scores), ``metrics`` (each statistic with its interval, the cluster),
    ``comparisons`` (every pair of metrics on ``statistic``), ``bootstrap``, ``method`` and ``note``.
    Intervals from ``min_intervals`` systems on, tests and clusters from ``min_tests`` (the bench lowers
    both to measure what smaller studies would get)."""
    if statistic not in STATISTICS:
        raise ValueError(f"statistic must be one of {', '.join(STATISTICS)}, got {statistic!r}")
    metric_now, human_now = data.scores()
    keys = list(data.numerators)
    n_systems = len(data.systems)
    rated = (~np.isnan(data.ratings)).sum(axis=1)
    systems = [
        {
            "system": name,
            "n_dialogues": int(rated[s]),
            "rating": float(human_now[0, s]),
            **{k: float(metric_now[k][0, s]) for k in keys},
        }
        for s, name in enumerate(data.systems)
    ]
    result: dict[str, Any] = {
        "n_systems": n_systems,
        "n_dialogues": len(data.dialogues),
        "score": "corpus",
        "statistic": statistic,
        "systems": systems,
        "metrics": [],
        "comparisons": [],
        "method": METHOD,
        "bootstrap": {"resamples": 0, "seed": seed, "resample": "systems+dialogues", "confidence": CONFIDENCE},
    }
    if n_systems < MIN_SYSTEMS:
        result["note"] = f"system-level correlation needs votes on at least {MIN_SYSTEMS} systems (found {n_systems})"
        return result
    everyone = np.arange(n_systems)[None]
    point = {k: statistics_of(metric_now[k], human_now, everyone) for k in keys}
    draws: dict[str, dict[str, np.ndarray]] = {}
    with_intervals = n_systems >= min_intervals and resamples > 0
    with_tests = with_intervals and n_systems >= min_tests
    if with_intervals:
        rng = np.random.default_rng(seed)
        weights = rng.multinomial(len(data.dialogues), np.full(len(data.dialogues), 1 / len(data.dialogues)), size=resamples)
        drawn = rng.integers(0, n_systems, size=(resamples, n_systems))
        metric_draws, human_draws = data.scores(weights.astype(float))
        human_drawn = np.take_along_axis(human_draws, drawn, axis=1)
        for k in keys:
            draws[k] = statistics_of(np.take_along_axis(metric_draws[k], drawn, axis=1), human_drawn, drawn)
        result["bootstrap"]["resamples"] = resamples
    for k in keys:
        row: dict[str, Any] = {"metric": k, "n": n_systems}
        for name in STATISTICS:
            value = float(point[k][name][0])
            row[name] = None if np.isnan(value) else value
            row[f"{name}_ci"] = _percentile(draws[k][name]) if with_intervals and row[name] is not None else None
        if with_intervals:
            row["undefined_draws"] = int(np.isnan(draws[k][statistic]).sum())
        result["metrics"].append(row)
    ranked = sorted(
        (row for row in result["metrics"] if row[statistic] is not None),
        key=lambda row: (-row[statistic], keys.index(row["metric"])),
    )
    if with_tests and len(ranked) > 1:
        pairs = [(a["metric"], b["metric"]) for i, a in enumerate(ranked) for b in ranked[i + 1 :]]
        comparisons = []
        for a, b in pairs:
            difference = draws[a][statistic] - draws[b][statistic]
            comparisons.append(
                {
                    "a": a,
                    "b": b,
                    "difference": float(point[a][statistic][0] - point[b][statistic][0]),
                    "ci": _percentile(difference),
                    "p": _bootstrap_p(difference),
                }
            )
        for entry, adjusted in zip(comparisons, _holm([c["p"] for c in comparisons]), strict=True):
            entry["p_holm"] = adjusted
        result["comparisons"] = comparisons
        found = {(c["a"], c["b"]): c for c in comparisons}
        cluster, head = 1, ranked[0]["metric"]
        for row in ranked:
            test = found.get((head, row["metric"]))
            if test is not None and test["p_holm"] is not None and test["p_holm"] < ALPHA:
                cluster, head = cluster + 1, row["metric"]
            row["cluster"] = cluster
    if n_systems < min_intervals:
        result["note"] = (
            f"n = {n_systems} systems: no interval (the intervals need at least {min_intervals} systems to cover); "
            "a system-level correlation on so few units describes them, it does not test"
        )
    elif n_systems < min_tests:
        result["note"] = (
            f"n = {n_systems} systems: intervals, but no test between metrics (the tests need at least {min_tests} "
            "systems to keep their level)"
        )
    else:
        result["note"] = f"n = {n_systems} systems: read a system-level correlation on so few units with its interval"
    return result


def system_level(
    dialogues: Mapping[str, Sequence[Dialogue]],
    votes: Sequence[Vote],
    settings: ScoreSettings,
    *,
    resamples: int = 1000,
    seed: int = 0,
    statistic: str = "pearson",
) -> dict[str, Any]:
    """Score the systems (:func:`system_scores`) and meta-evaluate them (:func:`meta_evaluate`).

    >>> system_level({}, [], ScoreSettings((0.5,), ("0.5",)))["note"]
    'system-level correlation needs votes on at least 3 systems (found 0)'
    """
    return meta_evaluate(system_scores(dialogues, votes, settings), resamples=resamples, seed=seed, statistic=statistic)
