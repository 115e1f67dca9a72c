"""Spending fewer judgements: which dialogues to judge, with known probabilities, and the estimates
that stay unbiased for the whole pool (issue 17).

The design is Poisson sampling with unequal, known inclusion probabilities (Horvitz & Thompson
1952), with the probabilities chosen the way active inference chooses them (Zrnic & Candès 2024,
"Active Statistical Inference"): in proportion to how much a dialogue can move the answer to the
study's question, computed from the metrics alone, before any vote.

* The question "does metric A track people better than metric B" is moved by dialogues on which A
  and B disagree (their standardised scores differ); a dialogue on which they agree adds almost the
  same to both correlations.  ``comparison_scores`` is ``|z_A - z_B|``.
* The question "which λ" is moved by dialogues whose FGA changes with λ; ``lambda_scores`` is the
  spread of the standardised FGA over the λ grid.

Each dialogue d is judged with probability ``π_d = min(1, c · (score_d + floor))``, ``c`` set so that
the expected number of judged dialogues fits the budget, and every π_d ≥ ``floor_share`` of the
uniform rate, so no dialogue is left out for certain.  The estimates weight each judged dialogue by
``1 / π_d`` (Hájek's ratio form): a weighted Pearson correlation, the same as the ordinary one when
every π is equal; λ* maximises the weighted correlation.  Intervals come from the bootstrap over the
judged dialogues with their weights (the unit of resampling: dialogues).

>>> import numpy as np
>>> pi = inclusion_probabilities(np.array([0.0, 0.0, 1.0, 3.0]), expected=2.0)
>>> [round(float(p), 3) for p in pi], round(float(pi.sum()), 6)
([0.167, 0.167, 0.667, 1.0], 2.0)
>>> h = np.array([0.2, 0.4, 0.9, 0.5]); m = np.array([0.1, 0.5, 0.8, 0.4])
>>> round(weighted_r(m, h, np.ones(4)), 6) == round(float(np.corrcoef(m, h)[0, 1]), 6)
True
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, cast

import numpy as np

from formats.tidy import Vote
from metrics.calibrate import refined_argmax
from metrics.comparisons import declare
from metrics.correlation import adjust_p, bootstrap_weights, percentile_ci, weighted_pearson

POLICIES = ("uniform", "adaptive")


def _z(values: np.ndarray) -> np.ndarray:
    values = np.asarray(values, dtype=float)
    spread = values.std()
    return (values - values.mean()) / spread if spread > 0 else np.zeros_like(values)


def comparison_scores(metric_a: np.ndarray, metric_b: np.ndarray) -> np.ndarray:
    """How much each dialogue bears on r(A) - r(B): the gap between the two standardised metrics."""
    return cast(np.ndarray, np.abs(_z(metric_a) - _z(metric_b)))


def lambda_scores(fga_by_lambda: np.ndarray) -> np.ndarray:
    """How much each dialogue bears on λ*: the spread (SD) of its standardised FGA over the λ grid
    (``fga_by_lambda`` is dialogues x λ)."""
    grid = np.asarray(fga_by_lambda, dtype=float)
    z = np.column_stack([_z(grid[:, j]) for j in range(grid.shape[1])])
    return cast(np.ndarray, z.std(axis=1))


def inclusion_probabilities(scores: np.ndarray, expected: float, floor_share: float = 0.25) -> np.ndarray:
    """π_d proportional to ``scores + floor`` (capped at 1) with Σπ = ``expected`` dialogues; the
    floor keeps every π at or above ``floor_share`` x expected / D, so each dialogue can be drawn."""
    scores = np.asarray(scores, dtype=float)
    d = scores.size
    if expected >= d:
        return np.ones(d)
    if expected <= 0:
        raise ValueError("the budget covers no dialogue")
    mean = scores.mean() if scores.size else 0.0
    base = scores + (floor_share * mean / max(1e-12, 1 - floor_share) if mean > 0 else 1.0)
    pi = np.zeros(d)
    fixed = np.zeros(d, dtype=bool)
    for _ in range(d):  # those that reach 1 are taken for certain; the rest share what is left
        free = ~fixed
        scale = (expected - fixed.sum()) / base[free].sum()
        pi[free] = base[free] * scale
        over = free & (pi >= 1)
        if not over.any():
            break
        fixed |= over
        pi[fixed] = 1.0
    return np.clip(pi, 0.0, 1.0)


def poisson_sample(pi: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Which dialogues are judged: each independently with its π."""
    return rng.random(len(pi)) < pi


SCORE_GRID = tuple(float(v) for v in np.linspace(0.05, 2.0, 40))  # the λs whose FGA spread scores a dialogue for "lambda"


def question_scores(question: str, values: dict[str, np.ndarray], lam: float) -> np.ndarray:
    """Each dialogue's informativeness for the study's question, from its per-dialogue metric values
    (``values``: ``jga`` and ``fga_<λ:g>`` for ``lam``, or for every λ of ``SCORE_GRID`` when the
    question is ``"lambda"``).  A dialogue without a score (a metric undefined on it) gets the mean
    score, or 1 when none has one."""
    if question == "lambda":
        score = lambda_scores(np.column_stack([values[f"fga_{v:g}"] for v in SCORE_GRID]))
    else:
        score = comparison_scores(values[f"fga_{lam:g}"], values["jga"])
    return np.where(np.isfinite(score), score, np.nanmean(score) if np.isfinite(score).any() else 1.0)


def draw(groups: Sequence[np.ndarray], expected_each: float, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """The design's draw: for each group of dialogues (a condition), by its scores, the inclusion
    probabilities (``expected_each`` dialogues expected per group) and which are judged, one seeded
    generator for all the groups in order, so a study's draw is reproducible from its seed."""
    rng = np.random.default_rng([int(seed), 17])
    drawn = []
    for scores in groups:
        pi = inclusion_probabilities(np.asarray(scores, dtype=float), expected=expected_each)
        drawn.append((pi, poisson_sample(pi, rng)))
    return drawn


def _weighted_r_rows(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Pearson r for each row of dialogue weights ``w`` (B x n): ``metrics.correlation.weighted_pearson``
    with one observation per dialogue; ``x`` n or n x K -> B (x K)."""
    y = np.asarray(y, dtype=float)
    return cast(np.ndarray, weighted_pearson(np.asarray(x, dtype=float), np.ones_like(y), y, y**2, np.asarray(w, dtype=float)))


def weighted_r(metric: np.ndarray, rating: np.ndarray, weights: np.ndarray) -> float:
    """Pearson r with dialogue weights (1/π: Hájek); NaN when a variance is 0."""
    return float(_weighted_r_rows(metric, rating, np.asarray(weights, dtype=float)[None, :])[0])


def _boot_weights(weights: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Bootstrap over the judged dialogues: each resample's draw counts times the dialogues' weights."""
    return cast(np.ndarray, bootstrap_weights(len(weights), resamples, rng) * weights[None, :])


def compare(
    metric_a: np.ndarray,
    metric_b: np.ndarray,
    rating: np.ndarray,
    weights: np.ndarray,
    *,
    resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> dict[str, Any]:
    """r(A), r(B) and r(A) - r(B) over the judged dialogues, weighted by ``weights`` (1/π), with
    percentile bootstrap intervals over dialogues (weights kept with their dialogues)."""
    x = np.column_stack([metric_a, metric_b]).astype(float)
    y = np.asarray(rating, dtype=float)
    w = np.asarray(weights, dtype=float)
    r = _weighted_r_rows(x, y, w[None, :])[0]
    row: dict[str, Any] = {
        "r_a": float(r[0]),
        "r_b": float(r[1]),
        "diff": float(r[0] - r[1]),
        "n": int(len(y)),
        "ci": None,
        "ci_width": None,
        "method": "weighted Pearson (1/π, Hájek), bootstrap over dialogues",
    }
    if resamples > 0 and len(y) >= 3:
        boot = _weighted_r_rows(x, y, _boot_weights(w, resamples, np.random.default_rng(seed)))
        diffs = boot[:, 0] - boot[:, 1]
        diffs = diffs[np.isfinite(diffs)]
        if diffs.size:
            low, high = percentile_ci(diffs, confidence)
            row["ci"], row["ci_width"] = [float(low), float(high)], float(high - low)
    return row


def lambda_star(
    fga_by_lambda: np.ndarray,
    grid: Sequence[float],
    rating: np.ndarray,
    weights: np.ndarray,
    *,
    resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    refine: bool = False,
) -> dict[str, Any]:
    """λ* = the grid value whose FGA correlates best (weighted) with the ratings, with a percentile
    bootstrap interval over dialogues.  ``refine``: λ* (and each bootstrap refit) refined between the best
    grid point's neighbours by a parabola (``metrics.calibrate.refined_argmax``), so it is not held to the grid."""
    lambdas = np.asarray(grid, dtype=float)
    x = np.asarray(fga_by_lambda, dtype=float)
    y, w = np.asarray(rating, dtype=float), np.asarray(weights, dtype=float)
    r = _weighted_r_rows(x, y, w[None, :])[0]
    if not np.isfinite(r).any():
        best = None
    elif refine:
        best = float(refined_argmax(r, lambdas))
    else:
        best = float(lambdas[int(np.nanargmax(r))])
    row: dict[str, Any] = {
        "lambda_star": best,
        "r": None if best is None else float(np.nanmax(r)),
        "n": int(len(y)),
        "ci": None,
        "ci_width": None,
        "method": "argmax weighted Pearson (1/π)"
        + (", refined between grid points" if refine else "")
        + ", bootstrap over dialogues",
    }
    if resamples > 0 and len(y) >= 3 and best is not None:
        boot = _weighted_r_rows(x, y, _boot_weights(w, resamples, np.random.default_rng(seed)))
        ok = np.isfinite(boot).any(axis=1)
        if refine:
            stars = refined_argmax(boot[ok], lambdas)  # non-finite values never win
        else:
            stars = lambdas[np.nanargmax(np.where(np.isfinite(boot[ok]), boot[ok], -np.inf), axis=1)]
        low, high = percentile_ci(stars, confidence)
        row["ci"], row["ci_width"] = [float(low), float(high)], float(high - low)
    return row


def settled(votes: Sequence[float], min_k: int, max_k: int, width: float = 0.5) -> bool:
    """Whether a dialogue needs no more votes: it has ``max_k``, or at least ``min_k`` whose mean's
    95% interval (normal, with the votes' SD, at least one scale step's worth) is narrower than
    ``width`` on the rating scale."""
    k = len(votes)
    if k >= max_k:
        return True
    if k < min_k:
        return False
    values = np.asarray(votes, dtype=float)
    spread = max(float(values.std(ddof=1)) if k > 1 else 0.0, 0.0)
    return bool(2 * 1.96 * spread / np.sqrt(k) < width)


def stopping_mean(p: float, min_k: int, max_k: int, width: float = 0.5) -> float:
    """The expected mean of a dialogue's binary votes (each 1 with probability ``p``, independently)
    under the ``max_k`` rule: ``min_k`` votes, then one more at a time while :func:`settled` says no
    (``annotate.studies.allocation.after_judgement``).  Exact, over the (votes, ones) states.

    Stopping on the votes seen biases the mean of all the votes (issue 26): a dialogue stops early
    when its first votes agree, so the majority answer is over-represented.  At p = 0.8 and
    ``min_k`` 3 the bias is +0.024 (``max_k`` 4), +0.055 (7), +0.072 (11), with the 0.5-wide settled rule.
    The first ``min_k`` votes' mean is unbiased (its expectation is ``p``): :func:`fixed_part`.

    >>> round(stopping_mean(0.8, 3, 4) - 0.8, 3), round(stopping_mean(0.8, 3, 3) - 0.8, 12)
    (0.024, 0.0)
    """
    if min_k < 1 or max_k < min_k:
        raise ValueError("need 1 <= min_k <= max_k")
    states = {ones: math.comb(min_k, ones) * p**ones * (1 - p) ** (min_k - ones) for ones in range(min_k + 1)}
    expected, k = 0.0, min_k
    while states:
        following: dict[int, float] = {}
        for ones, chance in states.items():
            if settled([1.0] * ones + [0.0] * (k - ones), min_k, max_k, width):
                expected += chance * ones / k
            else:
                following[ones + 1] = following.get(ones + 1, 0.0) + chance * p
                following[ones] = following.get(ones, 0.0) + chance * (1 - p)
        states, k = following, k + 1
    return expected


def fixed_part(
    votes: Sequence[Vote],
    overlap: int,
    extra: Mapping[tuple[str, str], int],
    first_seen: Mapping[tuple[tuple[str, str], str], int] | None = None,
    *,
    base: Mapping[tuple[str, str], int] | None = None,
) -> list[Vote]:
    """The votes of each dialogue's fixed part: what its rating in the correlations, differences and
    λ* is made of, so that no stopping decision touches the estimate (issue 26).

    An item with extra places (``extra[unit]`` > 0: the ``max_k`` rule gave it more because its votes
    were split, or an admin re-opened it, both decided from the votes so far) keeps the votes of its
    first ``max(overlap, n - extra)`` annotators of its n, i.e. it drops the last ones, as many as it
    had extra places: with a study's own votes that is its first ``overlap`` annotators; votes imported
    beyond the overlap (a past study's raters, not decided from the votes) stay.  An item without
    extra places keeps every vote.  Annotators are ordered by ``first_seen[(unit, annotator)]`` (the id
    of their first vote event on the item; ``annotate.analysis.study_data``), else by where their first vote
    is in ``votes``; each keeps their current answers, to every question.  The dropped votes still
    count in agreement and majority labels (the caller passes those the whole table).  ``base``: an
    item's own places by design (a designed study's k per dialogue, issue 29), instead of ``overlap``.

    >>> from formats.tidy import Vote
    >>> votes = [Vote("d1", a, "satisfied", v) for a, v in zip("abcde", "10111")] + [Vote("d2", "a", "satisfied", "1")]
    >>> [v.annotator for v in fixed_part(votes, 3, {("d1", ""): 2}) if v.item == "d1"]
    ['a', 'b', 'c']
    >>> fixed_part(votes, 3, {}) == votes
    True
    """
    if not any(n > 0 for n in extra.values()):
        return list(votes)
    seen = first_seen or {}
    order: dict[tuple[str, str], dict[str, tuple[float, int]]] = {}
    for position, vote in enumerate(votes):
        annotators = order.setdefault(vote.unit, {})
        if vote.annotator not in annotators:
            annotators[vote.annotator] = (seen.get((vote.unit, vote.annotator), math.inf), position)
    kept: dict[tuple[str, str], set[str]] = {}
    for unit, annotators in order.items():
        ranked = sorted(annotators, key=annotators.__getitem__)
        more = extra.get(unit, 0)
        keep = len(ranked) if more <= 0 else max((base or {}).get(unit, overlap), len(ranked) - more)
        kept[unit] = set(ranked[:keep])
    return [v for v in votes if v.annotator in kept[v.unit]]


def projected_judgements(spent: int, width: float | None, target: float | None) -> int | None:
    """Judgements needed in all to bring the interval from ``width`` to ``target`` (width shrinks as
    1/√n: spent x (width / target)²); None when either is unknown."""
    if not width or not target or spent <= 0:
        return None
    return int(np.ceil(spent * (width / target) ** 2))


def design_report(
    metric_values: dict[str, np.ndarray],
    rating: np.ndarray,
    pi: np.ndarray,
    *,
    fga_grid: np.ndarray | None = None,
    grid: Sequence[float] = (),
    resamples: int = 1000,
    seed: int = 0,
    adjust: str = "holm",
    confidence: float = 0.95,
    family: str = "reference",
    reference: str = "jga",
    fga_lambda: float = 0.5,
    refine: bool = False,
) -> dict[str, Any]:
    """Every correlation, difference and λ* of a study under its design: each judged dialogue weighted
    by 1/π (``pi``), intervals from the bootstrap over the judged dialogues (weights kept), p-values of
    the differences from the same bootstrap (twice the smaller tail share), adjusted over the pairs.

    ``metric_values[name]`` and ``rating`` (the dialogue's mean rating) are per judged dialogue;
    ``fga_grid`` (dialogues x λ) with ``grid`` gives λ*.  With every π equal the estimates are the
    ordinary (unweighted) Pearson correlations."""
    w = 1 / np.asarray(pi, dtype=float)
    y = np.asarray(rating, dtype=float)
    names = [name for name, values in metric_values.items() if np.isfinite(values).all() and np.ptp(values) > 0]
    notes = []  # a metric left out is said so, not dropped silently (issue 26)
    for name, values in metric_values.items():
        missing = int((~np.isfinite(np.asarray(values, dtype=float))).sum())
        if missing:
            notes.append(f"{name}: left out of the design's estimates: undefined (NaN) on {missing} of {len(y)} judged dialogues")
        elif name not in names:
            notes.append(
                f"{name}: left out of the design's estimates: the same value on every judged dialogue, so its correlation "
                "is undefined"
            )
    x = np.column_stack([np.asarray(metric_values[name], dtype=float) for name in names]) if names else np.zeros((len(y), 0))
    r = _weighted_r_rows(x, y, w[None, :])[0] if names else np.zeros(0)
    boot = None
    if resamples > 0 and len(y) >= 3 and names:
        boot = _weighted_r_rows(x, y, _boot_weights(w, resamples, np.random.default_rng(seed)))
    n_eff = float(w.sum() ** 2 / (w**2).sum()) if len(w) else 0.0

    def interval(values: np.ndarray) -> list[float] | None:
        values = values[np.isfinite(values)]
        return None if values.size < 10 else [float(v) for v in percentile_ci(values, confidence)]

    rows = [
        {
            "metric": name,
            "n": int(len(y)),
            "n_effective": round(n_eff, 1),
            "pearson": float(r[j]),
            "bootstrap_ci": None if boot is None else interval(boot[:, j]),
        }
        for j, name in enumerate(names)
    ]
    # the declared comparisons (metrics.comparisons); each difference's percentile interval at the level
    # that agrees with its adjusted bootstrap p (twice the smaller tail share)
    declared = declare(names, kind=family, reference=reference, fga_lambda=fga_lambda, adjust=adjust)
    column = {name: j for j, name in enumerate(names)}
    differences, shares = [], []
    for a, b in declared.pairs:
        i, j = column[a], column[b]
        entry: dict[str, Any] = {"a": a, "b": b, "diff": float(r[i] - r[j]), "diff_ci": None, "p_value": None}
        d = None
        if boot is not None:
            d = boot[:, i] - boot[:, j]
            d = d[np.isfinite(d)]
            if d.size:
                entry["p_value"] = float(min(1.0, 2 * min((d <= 0).mean(), (d >= 0).mean())))
        differences.append(entry)
        shares.append(d)
    tested = [e for e in differences if e["p_value"] is not None]
    adjusted = adjust_p([e["p_value"] for e in tested], adjust)
    if adjusted is not None:
        for entry, value in zip(tested, adjusted, strict=True):
            entry[f"p_{adjust}"] = value
    rejected = sum(value < declared.alpha for value in adjusted or ())
    level = declared.interval_confidence(rejected, len(tested))
    for entry, d in zip(differences, shares, strict=True):
        if d is not None and d.size >= 10:
            entry["diff_ci"] = [float(v) for v in percentile_ci(d, level)]
    result = {
        "n_judged": int(len(y)),
        "n_effective": round(n_eff, 1),
        "metrics": rows,
        "differences": differences,
        "method": "Hájek-weighted Pearson (1/π), percentile bootstrap over judged dialogues",
        "comparisons": {
            "family": declared.kind,
            "key": declared.key,
            "size": declared.size,
            "adjust": adjust,
            "interval_confidence": level,
            "text": declared.describe(rejected, len(tested)),
        },
        "lambda": None,
        "notes": notes,
    }
    if fga_grid is not None and len(grid) and len(y) >= 3:
        result["lambda"] = lambda_star(fga_grid, grid, y, w, resamples=resamples, seed=seed, confidence=confidence, refine=refine)
    return result
