"""Pearson r of a metric against the ratings, from per-dialogue sums (one matrix product for every resample),
its jackknife and sandwich standard errors and every interval family of ``INTERVAL_FAMILIES``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from metrics.correlation.ratings import Ratings
from metrics.correlation.resampling import annotator_sums, bca_interval, fisher_z, jackknife_variance, percentile_ci


def weighted_pearson(x: np.ndarray, n: np.ndarray, sy: np.ndarray, syy: np.ndarray, weights: np.ndarray | None = None) -> Any:
    """Pearson r of per-dialogue metric values ``x`` (D or D×K) against ratings given as
    per-dialogue sums, for each row of dialogue ``weights`` (B×D; None: every dialogue once).
    ``n``, ``sy``, ``syy`` are D, or B×D when each resample has its own (raters resampled too).

    Returns B×K (or K, or a scalar, following the inputs); NaN where a variance is 0.
    """
    single = weights is None and n.ndim == 1
    w = np.ones((1, n.shape[-1])) if weights is None else weights
    x2 = x if x.ndim == 2 else x[:, None]
    wn = w * n
    total = wn.sum(axis=1)[:, None]
    sx = wn @ x2
    sxx = wn @ x2**2
    sxy = (w * sy) @ x2
    s_y = (w * sy).sum(axis=1)[:, None]
    s_yy = (w * syy).sum(axis=1)[:, None]
    cov = total * sxy - sx * s_y
    var_x = total * sxx - sx**2
    var_y = total * s_yy - s_y**2
    with np.errstate(invalid="ignore", divide="ignore"):
        var_x = np.where(var_x > 1e-12 * np.maximum(total * sxx, 1e-300), var_x, np.nan)
        var_y = np.where(var_y > 1e-12 * np.maximum(total * s_yy, 1e-300), var_y, np.nan)
        r = np.clip(cov / np.sqrt(var_x * var_y), -1.0, 1.0)
    if x.ndim == 1:
        r = r[:, 0]
    return r[0] if single else r


def jackknife_pearson(x: np.ndarray, n: np.ndarray, sy: np.ndarray, syy: np.ndarray, chunk: int = 512) -> np.ndarray:
    """r with each dialogue left out in turn (D values), in chunks so that memory stays D × chunk."""
    d = n.size
    out = np.empty(d)
    for start in range(0, d, chunk):
        rows = np.arange(start, min(d, start + chunk))
        weights = np.ones((rows.size, d))
        weights[np.arange(rows.size), rows] = 0.0
        out[rows] = weighted_pearson(x, n, sy, syy, weights)
    return out


def pearson_moments(
    x: np.ndarray, n: np.ndarray, sy: np.ndarray, syy: np.ndarray, w: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per row of dialogue weights ``w`` (B×D): total observations, means, variances and r (biased moments)."""
    wn = w * n
    total = wn.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mx, my = (wn @ x) / total, (w * sy).sum(axis=1) / total
        vx, vy = (wn @ x**2) / total - mx**2, (w * syy).sum(axis=1) / total - my**2
        vx, vy = np.where(vx > 1e-12 * np.maximum(np.abs(mx) ** 2, 1e-300), vx, np.nan), np.where(vy > 1e-12, vy, np.nan)
        r = np.clip(((w * sy) @ x / total - mx * my) / np.sqrt(vx * vy), -1.0, 1.0)
    return total, mx, my, vx, vy, r


def pearson_se(x: np.ndarray, n: np.ndarray, sy: np.ndarray, syy: np.ndarray, weights: np.ndarray | None = None) -> Any:
    """The standard error of Fisher's z = atanh(r), by the sandwich (influence-function) variance of r
    with the dialogue as the cluster, for each row of dialogue ``weights`` (None: the data once; a scalar).

    r's influence function for one observation is x̃ỹ − r(x̃² + ỹ²)/2 (x̃, ỹ standardised; e.g. Davison &
    Hinkley 1997, §2.7); a dialogue's is the sum over its observations, which needs only its count n, Σy and
    Σy² (``Ratings.sufficient``); var r = Σ_d w_d ψ_d² / N² · m / (m − 1), m the dialogues counted, and
    se(z) = se(r) / (1 − r²).  It makes no normality assumption (binary votes, rater effects, clusters of
    votes), unlike Fisher's 1 / √(n − 3)."""
    single = weights is None and n.ndim == 1
    w = np.ones((1, n.shape[-1])) if weights is None else weights
    total, mx, my, vx, vy, r = pearson_moments(x, n, sy, syy, w)
    with np.errstate(invalid="ignore", divide="ignore"):
        xt = (x[None, :] - mx[:, None]) / np.sqrt(vx)[:, None]
        y1 = (sy - n * my[:, None]) / np.sqrt(vy)[:, None]
        y2 = (syy - 2 * my[:, None] * sy + n * my[:, None] ** 2) / vy[:, None]
        psi = xt * y1 - r[:, None] / 2 * (n * xt**2 + y2)
        m = (w * (n > 0)).sum(axis=1)
        var_r = (w * psi**2).sum(axis=1) / total**2 * m / np.maximum(m - 1, 1)
        se = np.sqrt(var_r) / (1 - r**2)
    return se[0] if single else se


def jackknife_annotators(x: np.ndarray, ratings: Ratings, valid: np.ndarray | None = None) -> np.ndarray:
    """r with each annotator left out in turn (A values; the two-way jackknife's second half): a dialogue
    that annotator alone rated drops out (as do those where ``valid`` is False)."""
    keep = 1.0 - np.eye(ratings.votes().shape[0])
    n, sy, syy = annotator_sums(ratings, keep)
    mask = 1.0 if valid is None else valid
    return np.asarray(weighted_pearson(x, n * mask, sy * mask, syy * mask, np.ones_like(n)))


def jackknife_votes(x: np.ndarray, ratings: Ratings, valid: np.ndarray | None = None) -> np.ndarray:
    """r with each vote of ``ratings.matrix`` left out in turn (one value per vote): in ``mean`` mode its
    dialogue's mean is recomputed from the other votes (a dialogue with that one vote drops out), in ``pairs``
    mode the observation goes.  Closed-form updates of the five sums, O(votes)."""
    keep = np.ones(x.size, bool) if valid is None else valid.astype(bool)
    matrix = ratings.votes()
    j, d = np.nonzero(np.isfinite(matrix))
    y = matrix[j, d]
    inside = keep[d]
    j, d, y = j[inside], d[inside], y[inside]
    k = np.isfinite(matrix).sum(axis=0).astype(float)
    s = np.nansum(matrix, axis=0)
    if ratings.mode == "pairs":
        n_d, y_d, yy_d = k, s, np.nansum(matrix**2, axis=0)
        count, sum_y, sum_yy = -np.ones(y.size), -y, -(y**2)
    else:
        rated = keep & (k > 0)
        mean = np.where(rated, s / np.maximum(k, 1), 0.0)
        n_d, y_d, yy_d = rated.astype(float), mean, mean**2
        kd, left = k[d], k[d] > 1
        new = np.where(left, (s[d] - y) / np.maximum(kd - 1, 1), 0.0)
        count = np.where(left, 0.0, -1.0)
        sum_y, sum_yy = np.where(left, new, 0.0) - mean[d], np.where(left, new**2, 0.0) - mean[d] ** 2
    w = np.where(keep, n_d, 0.0)
    total = w.sum() + count
    sx = (w * x).sum() + count * x[d]
    sxx = (w * x**2).sum() + count * x[d] ** 2
    sy = np.where(keep, y_d, 0.0).sum() + sum_y
    syy = np.where(keep, yy_d, 0.0).sum() + sum_yy
    sxy = (np.where(keep, y_d, 0.0) * x).sum() + sum_y * x[d]
    with np.errstate(invalid="ignore", divide="ignore"):
        cov = total * sxy - sx * sy
        var_x, var_y = total * sxx - sx**2, total * syy - sy**2
        return np.asarray(
            np.clip(cov / np.sqrt(np.where(var_x > 0, var_x, np.nan) * np.where(var_y > 0, var_y, np.nan)), -1.0, 1.0)
        )


# Every interval family for a Pearson r (``intervals`` in each row of correlation_report); the reported
# ``pearson_ci`` is DEFAULT_INTERVAL's family, chosen by python -m bench.bench_coverage (docs/statistics/intervals.md,
# "Correlations").
INTERVAL_FAMILIES = {
    "fisher": "Fisher z, z ± z_.975 / sqrt(n - 3), n = dialogues (Fisher 1921)",
    "percentile": "percentile bootstrap",
    "bca": "BCa bootstrap (Efron 1987)",
    "boot_se_t": "Fisher z with the bootstrap standard error of z and a t quantile",
    "studentized": "studentized bootstrap on the z scale, sandwich SE per resample (Davison & Hinkley 1997)",
    "sandwich_t": "Fisher z with the sandwich (influence-function) SE over dialogues and a t quantile",
    "jackknife_t": "Fisher z with the jackknife SE of z and a t quantile",
}


def jackknife_components(
    jackknife: np.ndarray, jackknife_annotators: np.ndarray | None = None, jackknife_votes: np.ndarray | None = None
) -> tuple[float, float, float]:
    """The variance of z = atanh(r) in parts, and the df of a t quantile: (dialogues', annotators', df).

    Dialogues alone: the jackknife variance over dialogues, df = dialogues − 1.  Two-way (annotators
    resampled too): a leave-one-annotator-out jackknife also carries the votes' own noise that the
    dialogue part already holds (each vote belongs to one dialogue and one annotator), so that noise
    would count twice (a bootstrap over both is conservative for the same reason: Owen 2007, "the
    pigeonhole bootstrap"); the annotators' part is the leave-one-annotator-out variance less the
    leave-one-vote-out one (``jackknife_votes``), at least 0, as in a crossed random-effects ANOVA's
    moment estimate.  df: Satterthwaite's (1946) for the sum of the two parts, with dialogues − 1 and
    annotators − 1 df (4 annotators with real differences: few df, a wide quantile)."""
    finite = jackknife[np.isfinite(jackknife)]
    dialogues = jackknife_variance(finite)
    df_d = max(finite.size - 1, 1)
    if jackknife_annotators is None:
        return dialogues, 0.0, float(df_d)
    a = jackknife_annotators[np.isfinite(jackknife_annotators)]
    annotators = jackknife_variance(a)
    if jackknife_votes is not None:
        annotators = max(annotators - jackknife_variance(jackknife_votes), 0.0)
    total = dialogues + annotators
    if total <= 0 or a.size < 2:
        return dialogues, annotators, float(df_d)
    return dialogues, annotators, total**2 / (dialogues**2 / df_d + annotators**2 / (a.size - 1))


def _z_scale_forms(
    r: float,
    units: int,
    *,
    boot: np.ndarray | None = None,
    se: float | None = None,
    jackknife: np.ndarray | None = None,
    jackknife_annotators: np.ndarray | None = None,
    jackknife_votes: np.ndarray | None = None,
) -> dict[str, tuple[float, float]]:
    """The families of INTERVAL_FAMILIES that are z ± q·SE on Fisher's z = atanh r, as {family: (SE of z, df of
    the quantile)} (df = inf: the normal quantile), for those whose inputs are there: what their intervals
    (``pearson_intervals``) and their tests (``pearson_p_value``) are both made of."""
    forms: dict[str, tuple[float, float]] = {}
    if units > 3:
        forms["fisher"] = (1 / math.sqrt(units - 3), math.inf)
    var_d, var_a, df = (0.0, 0.0, float(max(units - 1, 1)))
    if jackknife is not None:
        var_d, var_a, df = jackknife_components(jackknife, jackknife_annotators, jackknife_votes)
    if se is not None and np.isfinite(se) and se > 0:
        forms["sandwich_t"] = (float(se), df)
    if var_d + var_a > 0:
        forms["jackknife_t"] = (math.sqrt(var_d + var_a), df)
    if boot is not None:
        finite = np.isfinite(boot)
        if finite.sum() >= max(10, boot.size / 2):
            spread = float(np.std(fisher_z(boot[finite]), ddof=1))
            if jackknife_votes is not None and jackknife_annotators is not None:  # two-way: the votes' noise once
                spread = math.sqrt(max(spread**2 - jackknife_variance(jackknife_votes), var_d))
            if spread > 0:
                forms["boot_se_t"] = (spread, df)
    return forms


def _quantile(tail: float, df: float) -> float:
    from scipy.stats import norm
    from scipy.stats import t as student_t

    return float(norm.ppf(tail) if math.isinf(df) else student_t.ppf(tail, df))


def pearson_intervals(
    r: float,
    units: int,
    *,
    boot: np.ndarray | None = None,
    boot_se: np.ndarray | None = None,
    se: float | None = None,
    jackknife: np.ndarray | None = None,
    jackknife_annotators: np.ndarray | None = None,
    jackknife_votes: np.ndarray | None = None,
    confidence: float = 0.95,
) -> dict[str, list[float] | None]:
    """Every family of INTERVAL_FAMILIES for r on ``units`` dialogues (None where its inputs are missing):
    ``boot`` the bootstrap r values, ``boot_se`` each resample's sandwich SE of z (``pearson_se``), ``se`` the
    data's, ``jackknife`` r without each dialogue, ``jackknife_annotators`` r without each annotator (the
    bootstrap drew annotators too: the acceleration, the jackknife SE and the t's df are two-way),
    ``jackknife_votes`` r without each vote (two-way: the votes' noise counted once, ``jackknife_components``)."""
    out: dict[str, list[float] | None] = dict.fromkeys(INTERVAL_FAMILIES)
    if r is None or not np.isfinite(r) or abs(r) >= 1:
        return out
    z = math.atanh(r)
    tail = 0.5 + confidence / 2
    two_way = {"jackknife_annotators": jackknife_annotators, "jackknife_votes": jackknife_votes}
    forms = _z_scale_forms(r, units, boot=boot, se=se, jackknife=jackknife, **two_way)
    for family, (spread, df) in forms.items():
        half = _quantile(tail, df) * spread
        out[family] = [float(math.tanh(z - half)), float(math.tanh(z + half))]
    for family in BOOTSTRAP_FAMILIES:
        out[family] = _bootstrap_interval(family, r, boot, boot_se, se, jackknife, jackknife_annotators, confidence)
    return out


# The families whose interval is read off the bootstrap distribution (not z ± q·SE)
BOOTSTRAP_FAMILIES = ("percentile", "bca", "studentized")


def _bootstrap_interval(
    family: str,
    r: float,
    boot: np.ndarray | None,
    boot_se: np.ndarray | None,
    se: float | None,
    jackknife: np.ndarray | None,
    jackknife_annotators: np.ndarray | None,
    confidence: float,
) -> list[float] | None:
    """One of BOOTSTRAP_FAMILIES' intervals for r (|r| < 1), None where its inputs are missing."""
    if boot is None:
        return None
    finite = np.isfinite(boot)
    if finite.sum() < max(10, boot.size / 2):
        return None
    if family == "percentile":
        lo, hi = percentile_ci(boot[finite], confidence)
        return [float(lo), float(hi)]
    if family == "bca":
        return None if jackknife is None else bca_interval(r, boot, jackknife, confidence, jackknife_annotators)
    if boot_se is None or se is None or not np.isfinite(se) or se <= 0:
        return None
    ok = finite & np.isfinite(boot_se) & (boot_se > 0)
    if ok.sum() < max(10, boot.size / 2):
        return None
    z, tail = math.atanh(r), 0.5 + confidence / 2
    t_star = (fisher_z(boot[ok]) - z) / boot_se[ok]
    t_lo, t_hi = np.percentile(t_star, [100 * (1 - tail), 100 * tail])
    return [float(math.tanh(z - t_hi * se)), float(math.tanh(z - t_lo * se))]


def pearson_p_value(
    family: str,
    r: float,
    units: int,
    *,
    boot: np.ndarray | None = None,
    boot_se: np.ndarray | None = None,
    se: float | None = None,
    jackknife: np.ndarray | None = None,
    jackknife_annotators: np.ndarray | None = None,
    jackknife_votes: np.ndarray | None = None,
) -> float | None:
    """The two-sided p-value of ρ = 0 by the test that ``family``'s interval (``pearson_intervals``, same
    inputs) inverts, so that its interval at level c excludes 0 exactly when p < 1 − c; None where that
    interval is None.

    For the families that are z ± q·SE on Fisher's z (``fisher``, ``sandwich_t``, ``jackknife_t``,
    ``boot_se_t``): t = atanh(r) / SE against the interval's own quantile, p = 2·(1 − F(|t|)), F Student's t
    with the interval's df (the jackknife-t: dialogues − 1, or Satterthwaite's two-way df) or the normal
    (``fisher``: SE = 1/√(n − 3)).  For the bootstrap families (``percentile``, ``bca``, ``studentized``),
    whose intervals are nested in the level, p = 1 − the level at which the interval's nearer end touches
    0 (bisection on the level to 1e-12): the test the interval inverts, by construction.  r = ±1: p = 0."""
    from scipy.stats import norm
    from scipy.stats import t as student_t

    inputs: dict[str, Any] = {
        "boot": boot,
        "se": se,
        "jackknife": jackknife,
        "jackknife_annotators": jackknife_annotators,
        "jackknife_votes": jackknife_votes,
    }
    if r is None or not np.isfinite(r):
        return None
    if abs(r) >= 1:
        return 0.0
    forms = _z_scale_forms(r, units, **inputs)
    if family in forms:
        spread, df = forms[family]
        statistic = abs(math.atanh(r)) / spread
        return float(2 * (norm.sf(statistic) if math.isinf(df) else student_t.sf(statistic, df)))
    if family not in INTERVAL_FAMILIES:
        raise ValueError(f"unknown interval family {family!r}; known: {', '.join(INTERVAL_FAMILIES)}")
    if family not in BOOTSTRAP_FAMILIES:
        return None  # a z ± q·SE family whose inputs are missing: no interval, no test

    def holds_zero(confidence: float) -> bool | None:
        interval = _bootstrap_interval(family, r, boot, boot_se, se, jackknife, jackknife_annotators, confidence)
        return None if interval is None else interval[0] <= 0 <= interval[1]

    widest = 1 - 1e-12
    start = holds_zero(widest)
    if start is None:
        return None
    if not start:
        return 1e-12
    low, high = 0.0, widest  # the interval at ``low`` excludes 0 (or is a point), at ``high`` holds it
    if holds_zero(1e-12):
        return 1.0
    while high - low > 1e-12:
        middle = (low + high) / 2
        low, high = (low, middle) if holds_zero(middle) else (middle, high)
    return float(1 - high)


def leave_one_out_pearson(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """r of paired units with each left out in turn (n values), from the five sums in closed form."""
    n = x.size - 1.0
    sx, sy, sxx, syy, sxy = x.sum() - x, y.sum() - y, (x**2).sum() - x**2, (y**2).sum() - y**2, (x * y).sum() - x * y
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(np.clip((n * sxy - sx * sy) / np.sqrt((n * sxx - sx**2) * (n * syy - sy**2)), -1.0, 1.0))


def jackknife_t_interval(r: float, leave_one_out: np.ndarray, confidence: float = 0.95) -> list[float] | None:
    """z ± t(n − 1) · SE_jack(z), z = atanh r, over n leave-one-out values (Efron & Tibshirani 1993, ch. 11)."""
    from scipy.stats import t as student_t

    finite = leave_one_out[np.isfinite(leave_one_out)]
    variance = jackknife_variance(finite)
    if abs(r) >= 1 or variance <= 0 or finite.size < 4:
        return None
    half = float(student_t.ppf(0.5 + confidence / 2, finite.size - 1)) * math.sqrt(variance)
    return [math.tanh(math.atanh(r) - half), math.tanh(math.atanh(r) + half)]


def fisher_row(r: float, n: int, confidence: float = 0.95) -> tuple[list[float], float]:
    """Fisher-z interval of a Pearson r on n units, z ± z_q / √(n − 3), and the two-sided p-value of its own
    test, z = atanh(r)·√(n − 3) against the normal (the interval excludes 0 exactly when p < 1 − confidence;
    the exact t-test of r = 0 on n − 2 df is a different test, and a row printing it beside this interval
    could disagree with it)."""
    from scipy.stats import norm

    if n <= 3 or abs(r) >= 1:
        return [float(r), float(r)], 0.0 if abs(r) >= 1 else 1.0
    half = norm.ppf(0.5 + confidence / 2) / math.sqrt(n - 3)
    z = math.atanh(r)
    return [math.tanh(z - half), math.tanh(z + half)], float(2 * norm.sf(abs(z) * math.sqrt(n - 3)))
