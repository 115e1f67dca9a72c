"""Spearman's ρ and Kendall's τ: leave-one-out values in closed form and their intervals (jackknife-t, and
the fixed-variance Fisher ones).

The reported intervals (``spearman_ci``, ``kendall_ci``; ``metrics.correlation.RANK_DEFAULT``) are both the
jackknife-t of :func:`rank_jackknife_cis`, the fixed-variance ones of :func:`rank_cis` staying beside them in
``rank_intervals``.  Simulated coverage of 95% intervals (``python -m bench.bench_coverage``; 1,000 studies
per cell, Monte-Carlo SE about 0.007) with heavy ties (design ``tied_votes``: a metric equal to 1 on ~60% of
dialogues, 64-72% of its values tied, ratings the mean of 2-5 binary votes from a pool of lenient and strict
raters), at 30 / 50 / 100 dialogues:

- Kendall's τ: Fieller, Hartley & Pearson's 0.437 / (n − 4) is the variance of τ on *untied bivariate normal*
  data; ties change τ_b's variance, and it covered 0.91 / 0.90 / 0.90, where the jackknife-t, which
  estimates the variance from the data, kept 0.96 / 0.96 / 0.95.  It is the default.
- Spearman's ρ: the jackknife-t was already the default, and it does not under-cover with ties (0.96 / 0.96
  / 0.95; Bonett & Wright's 0.95 / 0.95 / 0.95), nor in any other design of the bench, where Bonett &
  Wright's over-covers with binary votes (0.97); so it stays, one family for both coefficients.
"""

from __future__ import annotations

import math

import numpy as np

from metrics.correlation.resampling import jackknife_variance


def _rowwise_pearson(a: np.ndarray, b: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Pearson r of each row of ``a`` with the same row of ``b`` under row weights ``w`` (all B×D)."""
    total = w.sum(axis=1)
    ma, mb = (w * a).sum(axis=1) / total, (w * b).sum(axis=1) / total
    da, db = a - ma[:, None], b - mb[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray((w * da * db).sum(axis=1) / np.sqrt((w * da**2).sum(axis=1) * (w * db**2).sum(axis=1)))


def rank_jackknife(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Spearman's ρ (midranks) and Kendall's τ_b with each unit left out in turn (n values each), in
    closed form on n × n comparison matrices (a unit's removal lowers the ranks above it by 1, its ties'
    by ½, and takes its row of concordances out)."""
    from scipy.stats import rankdata

    d = x.size
    off = 1.0 - np.eye(d)
    rx = rankdata(x)[None, :] - (x[:, None] < x[None, :]) - 0.5 * (x[:, None] == x[None, :])
    ry = rankdata(y)[None, :] - (y[:, None] < y[None, :]) - 0.5 * (y[:, None] == y[None, :])
    spearman = _rowwise_pearson(rx, ry, off)
    sx, sy = np.sign(x[:, None] - x[None, :]), np.sign(y[:, None] - y[None, :])
    concord, untied_x, untied_y = (sx * sy).sum() / 2, np.abs(sx).sum() / 2, np.abs(sy).sum() / 2
    with np.errstate(invalid="ignore", divide="ignore"):
        kendall = (concord - (sx * sy).sum(axis=1)) / np.sqrt(
            (untied_x - np.abs(sx).sum(axis=1)) * (untied_y - np.abs(sy).sum(axis=1))
        )
    return spearman, kendall


def rank_jackknife_cis(
    x: np.ndarray, y: np.ndarray, spearman: float | None, kendall: float | None, confidence: float = 0.95
) -> tuple[list[float] | None, list[float] | None]:
    """Intervals for Spearman's ρ and Kendall's τ on Fisher's z scale with the jackknife standard error and a
    t quantile with n − 1 df (Efron & Tibshirani 1993, ch. 11; no normality assumed and ties allowed, unlike
    the fixed variances of ``rank_cis``): the reported ones; None beyond 2,000 units (n × n matrices) or
    below 5."""
    from scipy.stats import t as student_t

    if x.size < 5 or x.size > 2000:
        return None, None
    q = float(student_t.ppf(0.5 + confidence / 2, x.size - 1))
    out: list[list[float] | None] = []
    for estimate, values in zip((spearman, kendall), rank_jackknife(x, y)):
        if estimate is None or abs(estimate) >= 1 or not np.all(np.isfinite(values)):
            out.append(None)
            continue
        half = q * math.sqrt(jackknife_variance(values))
        z = math.atanh(estimate)
        out.append([math.tanh(z - half), math.tanh(z + half)])
    return out[0], out[1]


def rank_cis(
    spearman: float | None, kendall: float | None, n: int, confidence: float = 0.95
) -> tuple[list[float] | None, list[float] | None]:
    """Fisher-z intervals for Spearman's ρ (Bonett & Wright 2000: var = (1 + ρ²/2) / (n − 3)) and
    Kendall's τ (Fieller, Hartley & Pearson 1957: var = 0.437 / (n − 4)) on n units: variances derived for
    untied (bivariate normal) data, so Kendall's under-covers with many ties (see the module's docstring);
    reported only where the jackknife gives none (pairs mode, below 5 or beyond 2,000 units)."""
    from scipy.stats import norm

    z = norm.ppf(0.5 + confidence / 2)

    def interval(r: float | None, variance: float | None) -> list[float] | None:
        if r is None or abs(r) >= 1 or variance is None:
            return None
        centre, half = math.atanh(r), z * math.sqrt(variance)
        return [math.tanh(centre - half), math.tanh(centre + half)]

    return (
        interval(spearman, (1 + (spearman or 0) ** 2 / 2) / (n - 3) if n > 3 else None),
        interval(kendall, 0.437 / (n - 4) if n > 4 else None),
    )
