"""Two metrics against the same ratings: the difference r_a − r_b, its interval (the jackknife-t of Fisher's
z_a − z_b, mapped to r) and the test that agrees with it, Zou's MOVER and Williams' t for reference, and
p-values adjusted over a family.

Williams' test (Williams 1959; Graham & Baldwin 2014) for r12 = r(human, A) vs
r13 = r(human, B) with r23 = r(A, B) on n observations:

>>> t, p = williams_test(0.65, 0.55, 0.3, 50)
>>> round(p / 2, 6)          # one-sided p of nlp-williams' README example: 0.20928617286753592
0.209286
>>> round(williams_test(0.4, 0.5, 0.1, 103)[0], 2)   # psych::r.test example: t = -0.89
-0.89
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from metrics.comparisons import ADJUSTMENTS
from metrics.correlation.pearson import leave_one_out_pearson


def williams_test(r12: float, r13: float, r23: float, n: int) -> tuple[float, float]:
    """Williams' t for r12 vs r13 sharing variable 1; returns (t, two-sided p), df = n − 3."""
    from scipy.stats import t as student_t

    if n <= 3:
        raise ValueError("Williams' test needs more than 3 observations")
    k = 1 - r12**2 - r13**2 - r23**2 + 2 * r12 * r13 * r23
    denominator = 2 * k * (n - 1) / (n - 3) + ((r12 + r13) ** 2 / 4) * (1 - r23) ** 3
    if denominator <= 0:
        raise ValueError("the correlations are degenerate (the two metrics are identical)")
    t = (r12 - r13) * math.sqrt((n - 1) * (1 + r23)) / math.sqrt(denominator)
    return float(t), float(2 * student_t.sf(abs(t), n - 3))


def zou_diff_ci(r_a: float, r_b: float, r_ab: float, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Zou's (2007) interval for r_a − r_b, two correlations with a shared variable (the human rating)
    and r_ab between the other two, on n units: built from the Fisher intervals of r_a and r_b
    (z ± z_α/2 / √(n − 3)) and the correlation c between the two estimates.

    >>> [round(v, 3) for v in zou_diff_ci(0.396, 0.179, 0.088, 66)]   # Zou (2007), Example 2
    [-0.093, 0.517]
    """
    from scipy.stats import norm

    if n <= 3:
        raise ValueError("an interval for a difference of correlations needs more than 3 units")
    half = norm.ppf(0.5 + confidence / 2) / math.sqrt(n - 3)
    (l1, u1), (l2, u2) = ((math.tanh(math.atanh(r) - half), math.tanh(math.atanh(r) + half)) for r in (r_a, r_b))
    c = ((r_ab - r_a * r_b / 2) * (1 - r_a**2 - r_b**2 - r_ab**2) + r_ab**3) / ((1 - r_a**2) * (1 - r_b**2))
    diff = r_a - r_b
    low = diff - math.sqrt(max(0.0, (r_a - l1) ** 2 + (u2 - r_b) ** 2 - 2 * c * (r_a - l1) * (u2 - r_b)))
    high = diff + math.sqrt(max(0.0, (u1 - r_a) ** 2 + (r_b - l2) ** 2 - 2 * c * (u1 - r_a) * (r_b - l2)))
    return float(low), float(high)


def mover_diff_ci(
    r_a: float, r_b: float, r_ab: float, ci_a: Sequence[float] | None, ci_b: Sequence[float] | None
) -> tuple[float, float] | None:
    """Zou's (2007) MOVER interval for r_a − r_b from any intervals (l, u) of r_a and r_b (``zou_diff_ci``
    uses Fisher's): the correlation c between the two estimates (overlapping, shared human rating) enters as
    in cocor's ``zou2007``.  None when an interval is missing."""
    if ci_a is None or ci_b is None or abs(r_a) >= 1 or abs(r_b) >= 1:
        return None
    (l1, u1), (l2, u2) = ci_a, ci_b
    c = ((r_ab - r_a * r_b / 2) * (1 - r_a**2 - r_b**2 - r_ab**2) + r_ab**3) / ((1 - r_a**2) * (1 - r_b**2))
    diff = r_a - r_b
    low = diff - math.sqrt(max(0.0, (r_a - l1) ** 2 + (u2 - r_b) ** 2 - 2 * c * (r_a - l1) * (u2 - r_b)))
    high = diff + math.sqrt(max(0.0, (u1 - r_a) ** 2 + (r_b - l2) ** 2 - 2 * c * (u1 - r_a) * (r_b - l2)))
    return float(low), float(high)


# Below this, a jackknife SE and a difference of z's are 0 up to rounding: every leave-one-out set gives the two
# metrics the same correlation, as when one is the other rescaled (r(A, B) = 1)
SAME = 1e-12


def z_difference_jackknife(y: np.ndarray, xa: np.ndarray, xb: np.ndarray) -> tuple[float, float, float, float, int] | None:
    """The jackknife of z_a − z_b = atanh r(y, xa) − atanh r(y, xb) over the units (dialogues), their
    (rating, a, b) left out together: (r_a, r_b, z_a − z_b, SE_jack, n).  The n leave-one-out differences
    come from closed-form sums.  None when a correlation is ±1 (up to rounding), when fewer than 4 units, or
    when leaving out a unit leaves a metric constant (it varies on that unit only: no jackknife then).

    >>> rng = np.random.default_rng(1)
    >>> t = rng.normal(size=20); y = t + rng.normal(size=20); xa = t + rng.normal(size=20); xb = xa + rng.normal(size=20)
    >>> r_a, r_b, dz, se, n = z_difference_jackknife(y, xa, xb)
    >>> z = lambda u, v: np.arctanh(np.corrcoef(u, v)[0, 1])
    >>> loo = np.array([z(np.delete(y, i), np.delete(xa, i)) - z(np.delete(y, i), np.delete(xb, i)) for i in range(20)])
    >>> bool(np.isclose(se, np.sqrt(19 / 20 * ((loo - loo.mean()) ** 2).sum()))), n
    (True, 20)
    """
    r_a, r_b = (float(np.corrcoef(y, x)[0, 1]) for x in (xa, xb))
    if not (abs(r_a) < 1 - SAME and abs(r_b) < 1 - SAME):  # ±1 up to rounding; also NaN: a constant metric or rating
        return None
    loo_a, loo_b = leave_one_out_pearson(xa, y), leave_one_out_pearson(xb, y)
    keep = np.isfinite(loo_a) & np.isfinite(loo_b) & (np.abs(loo_a) < 1 - SAME) & (np.abs(loo_b) < 1 - SAME)
    n = int(keep.sum())
    # a unit whose removal leaves a metric constant (or a correlation at ±1) is the one carrying that metric's
    # variation: the jackknife without it would understate the spread (a true null rejected in 16% of studies)
    if n < 4 or n < keep.size:
        return None
    loo = np.arctanh(loo_a) - np.arctanh(loo_b)
    se = math.sqrt((n - 1) / n * float(((loo - loo.mean()) ** 2).sum()))
    return r_a, r_b, math.atanh(r_a) - math.atanh(r_b), se, n


def _to_r(z_mean: float, delta: float) -> float:
    """A difference δ of Fisher z's, centred on their mean z̄, as a difference of correlations:
    f(δ) = tanh(z̄ + δ/2) − tanh(z̄ − δ/2), so f(z_a − z_b) = r_a − r_b exactly, f(0) = 0, f increasing."""
    return math.tanh(z_mean + delta / 2) - math.tanh(z_mean - delta / 2)


def diff_ci(y: np.ndarray, xa: np.ndarray, xb: np.ndarray, confidence: float = 0.95) -> tuple[float, float] | None:
    """The default interval for r(y, xa) − r(y, xb) on the same units (DIFF_DEFAULT, ``jackknife_t_z_diff``):
    the jackknife-t interval of z_a − z_b, (z_a − z_b) ± t(n − 1)·SE_jack, mapped to the difference of
    correlations at the observed mean z̄ (``_to_r``).  Its test is :func:`diff_test`'s.

    Why (python -m bench.bench_difference; metrics correlated 0.94 as FGA and JGA are, heavy ties, 2-5 votes
    per dialogue from a rater pool): Zou's MOVER from the two correlations' own intervals, the default before,
    was 1.14-1.57 × as wide as the estimate's spread and covered .965-.983 at n = 30-100 (when two metrics
    agree this closely their intervals' arms cannot cancel); this one is 1.00-1.09 × and covers .95 at a true
    difference of 0.03, .96-.98 at 0 and .92 at 0.05; its power at a true 0.03 is .040 / .084 / .173 at
    n = 30 / 50 / 100 against the MOVER's .028 / .060 / .133.  The dialogue is the unit of resampling.
    None when a correlation is ±1 or there are too few units; (0, 0) when the two metrics give every
    leave-one-out set the same correlation (the same metric up to scale).

    >>> rng = np.random.default_rng(0)
    >>> t = rng.normal(size=60); y = t + rng.normal(size=60)
    >>> xa, xb = t + rng.normal(scale=0.5, size=60), t + rng.normal(scale=2.0, size=60)
    >>> [round(v, 3) for v in diff_ci(y, xa, xb)]
    [0.015, 0.515]
    """
    from scipy.stats import t as student_t

    parts = z_difference_jackknife(y, xa, xb)
    if parts is None:
        return None
    r_a, r_b, dz, se, n = parts
    if se < SAME:
        return (0.0, 0.0) if abs(dz) < SAME else None
    half = float(student_t.ppf(0.5 + confidence / 2, n - 1)) * se
    z_mean = (math.atanh(r_a) + math.atanh(r_b)) / 2
    return _to_r(z_mean, dz - half), _to_r(z_mean, dz + half)


def diff_test(y: np.ndarray, xa: np.ndarray, xb: np.ndarray) -> tuple[float, float | None]:
    """The test of :func:`diff_ci`: t = (z_a − z_b) / SE_jack on n − 1 degrees of freedom, two-sided, so
    that the interval at level 1 − α excludes 0 exactly when p < α (and, adjusted over a family, the interval
    at the Bonferroni level 1 − α/m excludes 0 exactly when the Bonferroni p < α).  Returns (r_a − r_b, p);
    p is None when the interval is undefined (a correlation of ±1, too few units), 1 when the two metrics
    are the same up to scale on these units.

    >>> rng = np.random.default_rng(0)
    >>> t = rng.normal(size=60); y = t + rng.normal(size=60)
    >>> xa, xb = t + rng.normal(scale=0.5, size=60), t + rng.normal(scale=2.0, size=60)
    >>> diff, p = diff_test(y, xa, xb)
    >>> low, high = diff_ci(y, xa, xb, 1 - p)   # at the level 1 - p the interval's lower end is 0
    >>> round(diff, 3), round(p, 4), abs(low) < 1e-9
    (0.268, 0.0385, True)
    """
    from scipy.stats import t as student_t

    parts = z_difference_jackknife(y, xa, xb)
    if parts is None:
        r_a, r_b = (float(np.corrcoef(y, x)[0, 1]) for x in (xa, xb))
        return r_a - r_b, None
    r_a, r_b, dz, se, n = parts
    if se < SAME:
        return r_a - r_b, 1.0 if abs(dz) < SAME else None
    return r_a - r_b, float(2 * student_t.sf(abs(dz) / se, n - 1))


def adjust_p(p_values: Sequence[float], method: str = "holm") -> list[float] | None:
    """p-values adjusted for the number tested: Holm (1979) or Bonferroni (family-wise error) or
    Benjamini–Hochberg (1995, false discovery rate); None for ``none``.  The numbers of statsmodels'
    ``multipletests`` (tests/unit/test_adjust_p.py), in a few lines of numpy: its Holm branch runs a full
    garbage collection on every call (statsmodels 0.15), 0.3 s or more in a process holding many objects.

    >>> adjust_p([0.01, 0.04, 0.03], "holm")
    [0.03, 0.06, 0.06]
    >>> [round(p, 3) for p in adjust_p([0.01, 0.04, 0.03], "bh")]
    [0.03, 0.04, 0.04]
    """
    if method not in ADJUSTMENTS:
        raise ValueError(f"--adjust must be one of {', '.join(ADJUSTMENTS)}, got {method!r}")
    if method == "none":
        return None
    if not p_values:
        return []
    p = np.asarray(p_values, dtype=float)
    m = p.size
    if method == "bonferroni":
        return [float(v) for v in np.minimum(p * m, 1.0)]
    order = np.argsort(p, kind="mergesort")
    ranked = p[order]
    if method == "holm":  # step-down: max over k ≤ i of (m − k + 1)·p_(k)
        stepped = np.minimum(np.maximum.accumulate(ranked * np.arange(m, 0, -1)), 1.0)
    else:  # bh, step-up: min over k ≥ i of m·p_(k) / k
        stepped = np.minimum(np.minimum.accumulate((ranked * m / np.arange(1, m + 1))[::-1])[::-1], 1.0)
    adjusted = np.empty(m)
    adjusted[order] = stepped
    return [float(v) for v in adjusted]
