"""How many dialogues a study needs to tell two metrics apart: the power of the test the analysis reports.

The analysis tests r_a = r(human, A) against r_b = r(human, B) with the jackknife-t of Fisher's
z_a − z_b over dialogues (``metrics.correlation.diff_test``: t = (z_a − z_b) / SE_jack on n − 1 df).
The planner takes that t as non-central t with n − 1 degrees of freedom and non-centrality
(atanh ρ_a − atanh ρ_b) / SE, SE² the normal-theory variance of z_a − z_b for two correlations
sharing a variable with r_ab = r(A, B) between the other two (Meng, Rosenthal & Rubin 1992):
2·(1 − r_ab)·h / (n − 3), h = (1 − f·r̄²) / (1 − r̄²), f = min(1, (1 − r_ab) / (2·(1 − r̄²))),
r̄² the mean of r_a² and r_b².  Power is P(|T| > t_{1−α/2}) under that law; the planner gives the
smallest n with power ≥ the target.  Checked by simulation (tests/unit/test_statistics.py: the planned
n lies where the simulated power of ``diff_test`` crosses 0.8; ``python -m bench.bench_difference``: on
tied, binary-vote data at n = 100 the test's power was .173 and .365 where this says .159 and .341).  At
30 dialogues the jackknife-t is conservative (its size about .02) and this is optimistic.

>>> round(difference_power(0.4, 0.3, 0.8, 100), 2)
0.38
>>> dialogues_needed(0.4, 0.3, 0.8)
277

Williams' t (Williams 1959; Steiger 1980, eq. 7), which the analysis prints beside its test for
reference and this planner used before, stays as ``williams_power`` (non-central t, n − 3 df):

>>> round(williams_power(0.4, 0.3, 0.8, 100), 2)
0.39

A study with k annotators per dialogue correlates metrics with the mean of k ratings, whose
reliability is Spearman–Brown's R_k = k·ρ₁ / (1 + (k − 1)·ρ₁) for a single rating's reliability ρ₁
(ICC(1,1)); the correlations scale with √R_k.  ``budget_plan`` spends a budget of judgements as
k annotators × n = budget / k dialogues for each k and gives the power of each split.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

N_MAX = 1_000_000


def _delta(r_a: float, r_b: float, r_ab: float, n: int) -> float:
    k = 1 - r_a**2 - r_b**2 - r_ab**2 + 2 * r_a * r_b * r_ab
    denominator = 2 * k * (n - 1) / (n - 3) + ((r_a + r_b) ** 2 / 4) * (1 - r_ab) ** 3
    if denominator <= 0:
        raise ValueError("the correlations are not a valid correlation matrix (or the metrics are identical)")
    return (r_a - r_b) * math.sqrt((n - 1) * (1 + r_ab)) / math.sqrt(denominator)


def check(r_a: float, r_b: float, r_ab: float) -> None:
    for name, value in (("r_a", r_a), ("r_b", r_b), ("r_ab", r_ab)):
        if not -1 < value < 1:
            raise ValueError(f"{name} must lie strictly between -1 and 1, got {value}")
    if 1 - r_a**2 - r_b**2 - r_ab**2 + 2 * r_a * r_b * r_ab <= 0:
        raise ValueError("r_a, r_b and r_ab do not form a valid correlation matrix")


def _difference_powers(r_a: float, r_b: float, r_ab: float, n: np.ndarray, alpha: float) -> np.ndarray:
    """:func:`difference_power` at every n of an integer array at once (one scipy call, not one per n)."""
    from scipy.stats import nct
    from scipy.stats import t as student_t

    n = np.asarray(n, dtype=float)
    mean_square = (r_a**2 + r_b**2) / 2
    f = min(1.0, (1 - r_ab) / (2 * (1 - mean_square)))
    h = (1 - f * mean_square) / (1 - mean_square)
    if (1 - r_ab) * h <= 0:
        raise ValueError("the correlations are not a valid correlation matrix (or the metrics are identical)")
    counted = n > 4
    safe = np.where(counted, n, 5.0)
    delta = (math.atanh(r_a) - math.atanh(r_b)) / np.sqrt(2 * (1 - r_ab) * h / (safe - 3))
    critical = student_t.ppf(1 - alpha / 2, safe - 1)
    power = nct.sf(critical, safe - 1, delta) + nct.cdf(-critical, safe - 1, delta)
    return np.where(counted, power, 0.0)


def difference_power(r_a: float, r_b: float, r_ab: float, n: int, alpha: float = 0.05) -> float:
    """Power of the reported difference test (the jackknife-t of z_a − z_b, two-sided, level ``alpha``) on
    n dialogues, from the normal-theory variance of z_a − z_b (Meng, Rosenthal & Rubin 1992).

    >>> round(difference_power(0.4, 0.3, 0.8, 277), 3), difference_power(0.4, 0.3, 0.8, 4)
    (0.801, 0.0)
    """
    return float(_difference_powers(r_a, r_b, r_ab, np.array([n]), alpha)[0])


def williams_power(r_a: float, r_b: float, r_ab: float, n: int, alpha: float = 0.05) -> float:
    """Power of the two-sided Williams test at level ``alpha`` on n dialogues."""
    from scipy.stats import nct
    from scipy.stats import t as student_t

    if n <= 4:
        return 0.0
    delta = _delta(r_a, r_b, r_ab, n)
    critical = student_t.ppf(1 - alpha / 2, n - 3)
    return float(nct.sf(critical, n - 3, delta) + nct.cdf(-critical, n - 3, delta))


def dialogues_needed(r_a: float, r_b: float, r_ab: float, alpha: float = 0.05, power: float = 0.8) -> int | None:
    """The smallest n with at least ``power`` (None: r_a = r_b, or beyond a million dialogues).  Power grows
    with n: the doubling sizes are evaluated at once, then the bracket is cut in 64 per round (every
    integer in the last round), a handful of vectorised calls in place of a bisection's forty.

    >>> dialogues_needed(0.4, 0.3, 0.8), dialogues_needed(0.4, 0.4, 0.8)
    (277, None)
    """
    check(r_a, r_b, r_ab)
    if r_a == r_b or difference_power(r_a, r_b, r_ab, N_MAX, alpha) < power:
        return None
    doubling = 5 * 2 ** np.arange(int(math.ceil(math.log2(N_MAX / 5))) + 1)
    reached = np.flatnonzero(_difference_powers(r_a, r_b, r_ab, doubling, alpha) >= power)
    first = int(reached[0]) if reached.size else len(doubling) - 1
    high = int(doubling[first]) if reached.size else N_MAX
    low = 4 if first == 0 else int(doubling[first - 1])  # power(low) < power <= power(high)
    while high - low > 1:
        sizes = np.unique(np.linspace(low, high, 65).round().astype(int))[1:-1] if high - low > 64 else np.arange(low + 1, high)
        enough = _difference_powers(r_a, r_b, r_ab, sizes, alpha) >= power
        above = np.flatnonzero(enough)
        if high - low <= 64:
            return int(sizes[above[0]]) if above.size else high
        low = int(sizes[above[0] - 1]) if above.size and above[0] > 0 else (low if above.size else int(sizes[-1]))
        high = int(sizes[above[0]]) if above.size else high
    return high


def power_curve(
    r_a: float, r_b: float, r_ab: float, alpha: float = 0.05, up_to: int | None = None, points: int = 20
) -> list[dict[str, Any]]:
    """Power at ``points`` sample sizes from 10 to ``up_to`` (default: twice the planned n, at least 50)."""
    check(r_a, r_b, r_ab)
    needed = dialogues_needed(r_a, r_b, r_ab, alpha) or 500
    top = up_to or max(50, 2 * needed)
    sizes = sorted({int(round(v)) for v in np.linspace(10, top, points)})
    powers = _difference_powers(r_a, r_b, r_ab, np.array(sizes), alpha)
    return [{"n": n, "power": float(p)} for n, p in zip(sizes, powers, strict=True)]


def harmonic_count(counts: Mapping[Any, float] | Iterable[float]) -> float:
    """The harmonic mean of ratings per dialogue (a mapping or sequence of counts; 1 when empty): the k at
    which Spearman-Brown gives the average reliability of dialogues rated k_d times each (issue 26).

    >>> round(harmonic_count({"x": 1, "y": 5}), 3)   # not the arithmetic 3
    1.667
    """
    values = list(counts.values()) if hasattr(counts, "values") else list(counts)
    return len(values) / sum(1 / c for c in values) if values else 1.0


def spearman_brown(single: float, k: float) -> float:
    """Reliability of the mean of k ratings from the reliability of one."""
    return k * single / (1 + (k - 1) * single)


def budget_plan(
    r_a: float, r_b: float, r_ab: float, icc_single: float, k_pilot: float, budget: int, *, max_k: int = 11, alpha: float = 0.05
) -> dict[str, Any]:
    """Spend ``budget`` judgements as k annotators × budget // k dialogues, k = 1..max_k.

    ``r_a`` and ``r_b`` were measured against the mean of ``k_pilot`` ratings per dialogue; they are
    rescaled to k ratings by √(R_k / R_k_pilot).  Returns each split's power and the best one.
    """
    if not 0 < icc_single < 1:
        raise ValueError(f"the single-rating reliability (ICC(1,1)) must lie in (0, 1) for a budget plan, got {icc_single}")
    options: list[dict[str, Any]] = []
    base = spearman_brown(icc_single, k_pilot)
    for k in range(1, max_k + 1):
        scale = math.sqrt(spearman_brown(icc_single, k) / base)
        a, b = max(-0.999, min(0.999, r_a * scale)), max(-0.999, min(0.999, r_b * scale))
        n = budget // k
        try:
            check(a, b, r_ab)
            value = difference_power(a, b, r_ab, n, alpha) if n > 4 else 0.0
        except ValueError:
            value = None
        options.append({"k": k, "n_dialogues": n, "r_a": a, "r_b": b, "power": value})
    best = max((o for o in options if o["power"] is not None), key=lambda o: o["power"], default=None)
    return {"judgements": budget, "icc_single": icc_single, "k_pilot": k_pilot, "options": options, "best": best}


def plan(
    r_a: float, r_b: float, r_ab: float, alpha: float = 0.05, power: float = 0.8, *, comparisons: int = 1, adjust: str = "holm"
) -> dict[str, Any]:
    """The ``python -m metrics plan --json`` contract (without a pilot or budget).  One comparison of a
    declared family of ``comparisons`` is planned at ``alpha / comparisons`` (Bonferroni; under Holm
    the power is at least this, since Holm rejects whatever Bonferroni does), unless ``adjust`` is
    ``none``."""
    check(r_a, r_b, r_ab)
    if comparisons < 1:
        raise ValueError(f"--comparisons must be at least 1, got {comparisons}")
    test_alpha = alpha if adjust == "none" else alpha / comparisons
    needed = dialogues_needed(r_a, r_b, r_ab, test_alpha, power)
    notes = [] if needed is not None else ["r_a = r_b, or the difference needs more than a million dialogues"]
    return {
        "r_a": r_a,
        "r_b": r_b,
        "r_ab": r_ab,
        "alpha": alpha,
        "comparisons": comparisons,
        "adjust": adjust,
        "test_alpha": test_alpha,
        "family": (
            f"{comparisons} comparison(s), {adjust}: one is planned at alpha {test_alpha:.4g}"
            + (" (Bonferroni; Holm's power is at least this)" if adjust == "holm" and comparisons > 1 else "")
        ),
        "power": power,
        "n_dialogues": needed,
        "power_curve": power_curve(r_a, r_b, r_ab, test_alpha),
        "method": (
            "two-sided jackknife-t test of z_a - z_b (the analysis's test); power from the non-central t with n - 1 df "
            "and the normal-theory variance of z_a - z_b (Meng, Rosenthal & Rubin 1992)"
        ),
        "notes": notes,
    }
