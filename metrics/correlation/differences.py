"""Two metrics against the same ratings: the difference r_a − r_b, its interval (Zou's MOVER) and the test
that agrees with it, Williams' t for reference, and p-values adjusted over a family.

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
from metrics.correlation.pearson import jackknife_t_interval, leave_one_out_pearson
from metrics.correlation.resampling import jackknife_variance


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


def diff_ci(y: np.ndarray, xa: np.ndarray, xb: np.ndarray, confidence: float = 0.95) -> tuple[float, float] | None:
    """The default interval for r(y, xa) − r(y, xb) on the same units (DIFF_DEFAULT): Zou's (2007) MOVER
    built from each correlation's jackknife-t interval (``jackknife_t_interval``, the family that held
    0.94-0.96 in bench_coverage where Fisher's did not with binary votes) instead of its Fisher interval, with
    the same correlation c between the two estimates as ``zou_diff_ci``."""
    r_a, r_b, r_ab = (float(np.corrcoef(u, v)[0, 1]) for u, v in ((y, xa), (y, xb), (xa, xb)))
    ci_a = jackknife_t_interval(r_a, leave_one_out_pearson(xa, y), confidence)
    ci_b = jackknife_t_interval(r_b, leave_one_out_pearson(xb, y), confidence)
    return mover_diff_ci(r_a, r_b, r_ab, ci_a, ci_b)


def diff_test(y: np.ndarray, xa: np.ndarray, xb: np.ndarray) -> tuple[float, float | None]:
    """The test that agrees with :func:`diff_ci` by construction (issue 26: one story for a difference):
    its two-sided p-value is 1 − the confidence at which the interval's nearer end touches 0, so that
    the interval at level 1 − α excludes 0 exactly when p < α (and, adjusted over a family, an interval
    at the Bonferroni level 1 − α/m excludes 0 exactly when the Bonferroni p < α).  Returns
    (r_a − r_b, p); p is None when the interval is undefined (a correlation of ±1, too few units).

    >>> rng = np.random.default_rng(0)
    >>> t = rng.normal(size=60); y = t + rng.normal(size=60)
    >>> xa, xb = t + rng.normal(scale=0.5, size=60), t + rng.normal(scale=2.0, size=60)
    >>> diff, p = diff_test(y, xa, xb)
    >>> low, high = diff_ci(y, xa, xb, 1 - p)   # at the level 1 - p the interval's lower end is 0
    >>> round(diff, 3), round(p, 4), abs(low) < 1e-9
    (0.268, 0.0221, True)
    """
    from scipy.optimize import brentq
    from scipy.stats import t as student_t

    r_a, r_b, r_ab = (float(np.corrcoef(u, v)[0, 1]) for u, v in ((y, xa), (y, xb), (xa, xb)))
    diff = r_a - r_b
    loo_a, loo_b = leave_one_out_pearson(xa, y), leave_one_out_pearson(xb, y)
    var_a, var_b = jackknife_variance(loo_a[np.isfinite(loo_a)]), jackknife_variance(loo_b[np.isfinite(loo_b)])
    n = int(min(np.isfinite(loo_a).sum(), np.isfinite(loo_b).sum()))
    if abs(r_a) >= 1 or abs(r_b) >= 1 or var_a <= 0 or var_b <= 0 or n < 4:
        return diff, None
    if diff == 0:
        return diff, 1.0

    def nearer_end(confidence: float) -> float:  # > 0 while the interval excludes 0
        q = float(student_t.ppf(0.5 + confidence / 2, n - 1))
        ci_a = [math.tanh(math.atanh(r_a) + sign * q * math.sqrt(var_a)) for sign in (-1, 1)]
        ci_b = [math.tanh(math.atanh(r_b) + sign * q * math.sqrt(var_b)) for sign in (-1, 1)]
        interval = mover_diff_ci(r_a, r_b, r_ab, ci_a, ci_b)
        assert interval is not None  # both intervals exist and |r| < 1 (checked above)
        low, high = interval
        return low if diff > 0 else -high

    widest = 1 - 1e-12
    if nearer_end(widest) > 0:
        return diff, 1e-12
    return diff, float(1 - brentq(nearer_end, 1e-12, widest, xtol=1e-14, rtol=1e-12))


def adjust_p(p_values: Sequence[float], method: str = "holm") -> list[float] | None:
    """p-values adjusted for the number tested: Holm or Bonferroni (family-wise error) or
    Benjamini–Hochberg (false discovery rate), by statsmodels; None for ``none``."""
    if method not in ADJUSTMENTS:
        raise ValueError(f"--adjust must be one of {', '.join(ADJUSTMENTS)}, got {method!r}")
    if method == "none":
        return None
    if not p_values:
        return []
    from statsmodels.stats.multitest import multipletests

    name = {"holm": "holm", "bonferroni": "bonferroni", "bh": "fdr_bh"}[method]
    return [float(p) for p in multipletests(list(p_values), method=name)[1]]
