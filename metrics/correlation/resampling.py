"""Resampling over dialogues (and annotators): bootstrap weights, the rating sums of each resample, percentile
and BCa intervals, and the jackknife variance on Fisher's z scale.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from metrics.correlation.ratings import Ratings

RESAMPLING = ("dialogues", "dialogues+annotators")


def bootstrap_weights(n_dialogues: int, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """B×D counts: how often each dialogue is drawn in each resample."""
    draws = rng.integers(0, n_dialogues, size=(resamples, n_dialogues))
    offsets = (np.arange(resamples) * n_dialogues)[:, None]
    return np.bincount((draws + offsets).ravel(), minlength=resamples * n_dialogues).reshape(resamples, n_dialogues)


def percentile_ci(values: np.ndarray, confidence: float = 0.95, axis: int = 0) -> tuple[Any, Any]:
    """The percentile interval's ends (NaN ignored): scalars, or arrays along ``axis``."""
    tail = (1 - confidence) / 2 * 100
    with np.errstate(invalid="ignore"):
        return np.nanpercentile(values, tail, axis=axis), np.nanpercentile(values, 100 - tail, axis=axis)


def resample_sums(
    ratings: Ratings, resamples: int, rng: np.random.Generator, resample: str = "dialogues"
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Bootstrap resamples as (dialogue weights B×D, n, sy, syy), the rating sums being D (dialogues only)
    or B×D (``dialogues+annotators``: a two-way bootstrap that also draws the annotators with
    replacement, so that a study whose same few annotators rate every dialogue shows the uncertainty
    of having chosen them; a dialogue none of the drawn annotators rated drops out of that resample)."""
    if resample not in RESAMPLING:
        raise ValueError(f"--resample must be one of {', '.join(RESAMPLING)}, got {resample!r}")
    weights = bootstrap_weights(ratings.n_dialogues, resamples, rng)
    n, sy, syy = ratings.sufficient()
    if resample == "dialogues":
        return weights, n, sy, syy
    if ratings.mode == "majority" or ratings.matrix is None:
        raise ValueError("--resample dialogues+annotators needs --rating mean or pairs (a majority is not re-drawn)")
    annotators = bootstrap_weights(ratings.matrix.shape[0], resamples, rng).astype(float)  # B × A
    return (weights, *annotator_sums(ratings, annotators))


def annotator_sums(ratings: Ratings, annotators: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rating sums per dialogue (B×D each) when annotator j counts ``annotators[b, j]`` times."""
    rated = np.isfinite(ratings.votes()).astype(float)
    values = np.nan_to_num(ratings.votes())
    count, total, squares = annotators @ rated, annotators @ values, annotators @ values**2
    if ratings.mode == "pairs":
        return count, total, squares
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(count > 0, total / np.where(count > 0, count, 1), 0.0)
    present = (count > 0).astype(float)
    return present, mean * present, mean**2 * present


def acceleration(jackknife: np.ndarray, jackknife_annotators: np.ndarray | None = None) -> float:
    """BCa's acceleration a = Σu³ / (6 (Σu²)^1.5) from jackknife values (Efron 1987; Efron & Tibshirani 1993,
    14.15).  Two-way (dialogues and annotators crossed, ``jackknife_annotators`` given): the estimate's
    linear approximation is the sum of a dialogue part and an annotator part, independent, so their
    variances and third moments add: u_d = (D − 1)/D · (mean − θ_(d)) over the D leave-one-dialogue-out
    values and v_j = (A − 1)/A · (mean − θ_(j)) over the A leave-one-annotator-out values, and
    a = (Σu³ + Σv³) / (6 (Σu² + Σv²)^1.5).  With dialogues alone this is the usual formula."""
    parts = [jackknife[np.isfinite(jackknife)]]
    if jackknife_annotators is not None:
        parts.append(jackknife_annotators[np.isfinite(jackknife_annotators)])
    if len(parts) == 1:
        spread = [parts[0].mean() - parts[0]] if parts[0].size else []
    else:
        spread = [(p.size - 1) / p.size * (p.mean() - p) for p in parts if p.size >= 2]
    second = sum(float((u**2).sum()) for u in spread)
    third = sum(float((u**3).sum()) for u in spread)
    return third / (6 * second**1.5) if second > 0 else 0.0


def bca_interval(
    estimate: float,
    boot: np.ndarray,
    jackknife: np.ndarray,
    confidence: float = 0.95,
    jackknife_annotators: np.ndarray | None = None,
) -> list[float] | None:
    """Efron's (1987) bias-corrected and accelerated interval from bootstrap values and leave-one-out values
    (the acceleration: :func:`acceleration`, two-way when ``jackknife_annotators`` is given).  The one
    BCa of the package (correlations, agreement coefficients, λ* and its r), with one edge rule:

    - the share of draws below the estimate counts a draw equal to it (up to rounding, 1e-12 relative)
      as half below, so a tied statistic (a coefficient on few categories, λ* on a grid) is not biased
      by its ties;
    - no interval (None) with fewer than 10 finite draws or 3 finite leave-one-out values, or when every
      draw lies on one side of the estimate (the bias correction is infinite there): the caller says so.

    >>> rng = np.random.default_rng(0)
    >>> boot = rng.normal(0.5, 0.1, 2000)
    >>> low, high = bca_interval(0.5, boot, rng.normal(0.5, 0.01, 40))
    >>> bool(0.28 < low < 0.33 and 0.67 < high < 0.72)
    True
    >>> bca_interval(0.9, np.full(100, 0.5), np.arange(5.0)) is None  # every draw below the estimate
    True
    """
    from scipy.stats import norm

    boot, jackknife = boot[np.isfinite(boot)], jackknife[np.isfinite(jackknife)]
    if boot.size < 10 or jackknife.size < 3:
        return None
    tie = np.abs(boot - estimate) <= 1e-12 * max(1.0, abs(estimate))
    share = (np.sum((boot < estimate) & ~tie) + 0.5 * np.sum(tie)) / boot.size
    if share <= 0 or share >= 1:
        return None
    z0 = norm.ppf(share)
    a = acceleration(jackknife, jackknife_annotators)
    tails = []
    for alpha in ((1 - confidence) / 2, (1 + confidence) / 2):
        z = z0 + norm.ppf(alpha)
        tails.append(100 * norm.cdf(z0 + z / (1 - a * z)))
    low, high = np.percentile(boot, tails)
    return [float(low), float(high)]


def fisher_z(r: Any) -> Any:
    """atanh(r), r clipped to ±0.999999 (a scalar or an array, as given)."""
    return np.arctanh(np.clip(r, -0.999999, 0.999999))


def jackknife_variance(values: np.ndarray) -> float:
    """The jackknife variance of z from leave-one-out r values: (m − 1)/m · Σ (z_i − mean)²."""
    z = fisher_z(values[np.isfinite(values)])
    return (z.size - 1) / z.size * float(((z - z.mean()) ** 2).sum()) if z.size >= 2 else 0.0
