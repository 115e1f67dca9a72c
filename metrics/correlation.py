"""Metric–human correlation per dialogue: Pearson (+ Fisher-z and bootstrap CIs), Spearman,
Kendall, Williams' test between two metrics, and the human ceiling.

Ratings are *observations* (dialogue index, value).  ``mean`` (default) and ``majority``
give one observation per dialogue; ``pairs`` keeps every vote as its own observation (the
metric value repeats).  A bootstrap resamples dialogues, so all of a dialogue's
observations move together; weighted sums per dialogue make that one matrix product.

Williams' test (Williams 1959; Graham & Baldwin 2014) for r12 = r(human, A) vs
r13 = r(human, B) with r23 = r(A, B) on n observations:

>>> t, p = williams_test(0.65, 0.55, 0.3, 50)
>>> round(p / 2, 6)          # one-sided p of nlp-williams' README example: 0.20928617286753592
0.209286
>>> round(williams_test(0.4, 0.5, 0.1, 103)[0], 2)   # psych::r.test example: t = -0.89
-0.89

The difference r12 − r13 gets Zou's (2007) interval for overlapping dependent correlations (as R's
cocor ``zou2007``), and the p-values of every pair reported are adjusted together (Holm by default).

In ``pairs`` mode the unit is the dialogue: the Fisher interval, the p-value and Williams' test use
n = dialogues (the votes of one dialogue are not independent observations; with 3 or fewer dialogues there
is no Fisher interval and no p), and the bootstrap resamples dialogues.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from formats.tidy import Vote
from metrics.aggregate import majority_from_counts, unit_table
from metrics.comparisons import ADJUSTMENT_NAMES, ADJUSTMENTS, DEFAULT_FGA_LAMBDA, declare
from metrics.planning import dialogues_needed

RATING_MODES = ("mean", "majority", "pairs")
# The note that says which metric pairs Williams' test and Zou's interval leave out (metrics.present shows it
# under the differences table)
NOT_COMPARED = "not compared (Williams' test, Zou's interval)"
# In pairs mode: each row's ``ci_method`` (its start) and how the note says it
PAIRS_INTERVALS = {"none:": "none for a metric on 3 or fewer dialogues"}  # the others: INTERVAL_FAMILIES' words


@dataclass
class Ratings:
    """Human ratings aligned to dialogues: observation i rates dialogue ``dialogue[i]``."""

    dialogue_ids: list[str]
    dialogue: np.ndarray  # observation -> dialogue index
    value: np.ndarray
    mode: str
    notes: list[str]
    matrix: np.ndarray | None = None  # annotators × dialogues of the votes (NaN: none), for rater resampling

    @property
    def n_dialogues(self) -> int:
        return len(self.dialogue_ids)

    def sufficient(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per dialogue: number of observations, Σ y, Σ y²."""
        d = self.n_dialogues
        n = np.bincount(self.dialogue, minlength=d).astype(float)
        sy = np.bincount(self.dialogue, weights=self.value, minlength=d)
        syy = np.bincount(self.dialogue, weights=self.value**2, minlength=d)
        return n, sy, syy


def _numeric(votes: Sequence[Vote]) -> np.ndarray:
    try:
        return np.array([float(v.value) for v in votes])
    except ValueError:
        bad = next(v for v in votes if not _is_number(v.value))
        raise ValueError(f"rating {bad.value!r} of {bad.annotator} on {bad.item} is not a number") from None


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def ratings_for(votes: Sequence[Vote], dialogue_ids: Sequence[str], mode: str = "mean", tie: str = "none") -> Ratings:
    """Align votes (item = dialogue id) with the scored dialogues; unmatched ones are noted.

    Raises ValueError when no rated dialogue has predictions, or one dialogue is rated
    under several conditions (pick one with ``--condition``).
    """
    if mode not in RATING_MODES:
        raise ValueError(f"rating must be one of {', '.join(RATING_MODES)}, got {mode!r}")
    conditions: dict[str, set[str]] = {}
    for vote in votes:
        conditions.setdefault(vote.item, set()).add(vote.condition)
    several = sorted(item for item, found in conditions.items() if len(found) > 1)
    if several:
        raise ValueError(f"dialogue {several[0]!r} is rated under several conditions; choose one with --condition")
    index = {d: i for i, d in enumerate(dialogue_ids)}
    known = [v for v in votes if v.item in index]
    notes = []
    unknown = sorted({v.item for v in votes} - set(index))
    if unknown:
        notes.append(f"{len(unknown)} rated item(s) have no predictions and are left out (e.g. {unknown[0]!r})")
    if not known:
        raise ValueError("no rated item matches a dialogue id in the predictions")
    values = _numeric(known)
    rated = sorted({index[v.item] for v in known})
    keep = {d: i for i, d in enumerate(rated)}  # dialogues with ratings only, in prediction order
    ids = [dialogue_ids[d] for d in rated]
    if len(rated) < len(dialogue_ids):
        notes.append(f"{len(dialogue_ids) - len(rated)} dialogue(s) have no rating and are left out")
    observation = np.array([keep[index[v.item]] for v in known])
    matrix = _rating_matrix(known, ids)[1]
    if mode == "pairs":
        return Ratings(ids, observation, values, mode, notes, matrix)
    if mode == "mean":
        n = np.bincount(observation, minlength=len(ids))
        means = np.bincount(observation, weights=values, minlength=len(ids)) / n
        return Ratings(ids, np.arange(len(ids)), means, mode, notes, matrix)
    table = unit_table(known)
    majority = majority_from_counts(table.counts, table.categories, tie)
    by_item = {unit[0]: label for unit, label in zip(table.units, majority.labels)}
    chosen = [(keep[index[item]], float(label)) for item, label in by_item.items() if label is not None]
    if majority.n_ties and tie == "none":
        notes.append(f"{majority.n_ties} dialogue(s) with tied votes have no majority and are left out")
    chosen.sort()
    dialogue = np.array([d for d, _ in chosen], dtype=int)
    return Ratings(ids, dialogue, np.array([v for _, v in chosen]), mode, notes)


def weighted_pearson(
    x: np.ndarray, n: np.ndarray, sy: np.ndarray, syy: np.ndarray, weights: np.ndarray | None = None
) -> np.ndarray:
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


RESAMPLING = ("dialogues", "dialogues+annotators")


def resample_sums(ratings: Ratings, resamples: int, rng: np.random.Generator, resample: str = "dialogues"):
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
    return (weights, *_annotator_sums(ratings, annotators))


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


def _moments(x: np.ndarray, n: np.ndarray, sy: np.ndarray, syy: np.ndarray, w: np.ndarray):
    """Per row of dialogue weights ``w`` (B×D): total observations, means, variances and r (biased moments)."""
    wn = w * n
    total = wn.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mx, my = (wn @ x) / total, (w * sy).sum(axis=1) / total
        vx, vy = (wn @ x**2) / total - mx**2, (w * syy).sum(axis=1) / total - my**2
        vx, vy = np.where(vx > 1e-12 * np.maximum(np.abs(mx) ** 2, 1e-300), vx, np.nan), np.where(vy > 1e-12, vy, np.nan)
        r = np.clip(((w * sy) @ x / total - mx * my) / np.sqrt(vx * vy), -1.0, 1.0)
    return total, mx, my, vx, vy, r


def pearson_se(x: np.ndarray, n: np.ndarray, sy: np.ndarray, syy: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """The standard error of Fisher's z = atanh(r), by the sandwich (influence-function) variance of r
    with the dialogue as the cluster, for each row of dialogue ``weights`` (None: the data once; a scalar).

    r's influence function for one observation is x̃ỹ − r(x̃² + ỹ²)/2 (x̃, ỹ standardised; e.g. Davison &
    Hinkley 1997, §2.7); a dialogue's is the sum over its observations, which needs only its count n, Σy and
    Σy² (``Ratings.sufficient``); var r = Σ_d w_d ψ_d² / N² · m / (m − 1), m the dialogues counted, and
    se(z) = se(r) / (1 − r²).  It makes no normality assumption (binary votes, rater effects, clusters of
    votes), unlike Fisher's 1 / √(n − 3)."""
    single = weights is None and n.ndim == 1
    w = np.ones((1, n.shape[-1])) if weights is None else weights
    total, mx, my, vx, vy, r = _moments(x, n, sy, syy, w)
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
    keep = 1.0 - np.eye(ratings.matrix.shape[0])
    n, sy, syy = _annotator_sums(ratings, keep)
    mask = 1.0 if valid is None else valid
    return weighted_pearson(x, n * mask, sy * mask, syy * mask, np.ones_like(n))


def jackknife_votes(x: np.ndarray, ratings: Ratings, valid: np.ndarray | None = None) -> np.ndarray:
    """r with each vote of ``ratings.matrix`` left out in turn (one value per vote): in ``mean`` mode its
    dialogue's mean is recomputed from the other votes (a dialogue with that one vote drops out), in ``pairs``
    mode the observation goes.  Closed-form updates of the five sums, O(votes)."""
    keep = np.ones(x.size, bool) if valid is None else valid.astype(bool)
    j, d = np.nonzero(np.isfinite(ratings.matrix))
    y = ratings.matrix[j, d]
    inside = keep[d]
    j, d, y = j[inside], d[inside], y[inside]
    k = np.isfinite(ratings.matrix).sum(axis=0).astype(float)
    s = np.nansum(ratings.matrix, axis=0)
    if ratings.mode == "pairs":
        n_d, y_d, yy_d = k, s, np.nansum(ratings.matrix**2, axis=0)
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
        return np.clip(cov / np.sqrt(np.where(var_x > 0, var_x, np.nan) * np.where(var_y > 0, var_y, np.nan)), -1.0, 1.0)


def _annotator_sums(ratings: Ratings, annotators: np.ndarray):
    """Rating sums per dialogue (B×D each) when annotator j counts ``annotators[b, j]`` times."""
    rated = np.isfinite(ratings.matrix).astype(float)
    values = np.nan_to_num(ratings.matrix)
    count, total, squares = annotators @ rated, annotators @ values, annotators @ values**2
    if ratings.mode == "pairs":
        return count, total, squares
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(count > 0, total / np.where(count > 0, count, 1), 0.0)
    present = (count > 0).astype(float)
    return present, mean * present, mean**2 * present


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


def _z(r):
    return np.arctanh(np.clip(r, -0.999999, 0.999999))


def jackknife_variance(values: np.ndarray) -> float:
    """The jackknife variance of z from leave-one-out r values: (m − 1)/m · Σ (z_i − mean)²."""
    z = _z(values[np.isfinite(values)])
    return (z.size - 1) / z.size * float(((z - z.mean()) ** 2).sum()) if z.size >= 2 else 0.0


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
    from scipy.stats import norm
    from scipy.stats import t as student_t

    out: dict[str, list[float] | None] = dict.fromkeys(INTERVAL_FAMILIES)
    if r is None or not np.isfinite(r) or abs(r) >= 1:
        return out
    z = math.atanh(r)
    tail = 0.5 + confidence / 2

    def around(centre_low, centre_high):
        return [float(math.tanh(centre_low)), float(math.tanh(centre_high))]

    if units > 3:
        half = norm.ppf(tail) / math.sqrt(units - 3)
        out["fisher"] = around(z - half, z + half)
    var_d, var_a, df = (0.0, 0.0, float(max(units - 1, 1)))
    if jackknife is not None:
        var_d, var_a, df = jackknife_components(jackknife, jackknife_annotators, jackknife_votes)
    q = float(student_t.ppf(tail, df))
    if se is not None and np.isfinite(se) and se > 0:
        out["sandwich_t"] = around(z - q * se, z + q * se)
    if var_d + var_a > 0:
        half = q * math.sqrt(var_d + var_a)
        out["jackknife_t"] = around(z - half, z + half)
    if boot is None:
        return out
    finite = np.isfinite(boot)
    if finite.sum() < max(10, boot.size / 2):
        return out
    lo, hi = percentile_ci(boot[finite], confidence)
    out["percentile"] = [float(lo), float(hi)]
    zb = _z(boot[finite])
    spread = float(np.std(zb, ddof=1))
    if jackknife_votes is not None and jackknife_annotators is not None:  # two-way: the votes' noise once
        spread = math.sqrt(max(spread**2 - jackknife_variance(jackknife_votes), var_d))
    if spread > 0:
        out["boot_se_t"] = around(z - q * spread, z + q * spread)
    if jackknife is not None:
        out["bca"] = bca_interval(r, boot, jackknife, confidence, jackknife_annotators)
    if boot_se is not None and se is not None and np.isfinite(se) and se > 0:
        ok = finite & np.isfinite(boot_se) & (boot_se > 0)
        if ok.sum() >= max(10, boot.size / 2):
            t_star = (_z(boot[ok]) - z) / boot_se[ok]
            t_lo, t_hi = np.percentile(t_star, [100 * (1 - tail), 100 * tail])
            out["studentized"] = around(z - t_hi * se, z - t_lo * se)
    return out


def _rowwise_pearson(a: np.ndarray, b: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Pearson r of each row of ``a`` with the same row of ``b`` under row weights ``w`` (all B×D)."""
    total = w.sum(axis=1)
    ma, mb = (w * a).sum(axis=1) / total, (w * b).sum(axis=1) / total
    da, db = a - ma[:, None], b - mb[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        return (w * da * db).sum(axis=1) / np.sqrt((w * da**2).sum(axis=1) * (w * db**2).sum(axis=1))


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


def rank_jackknife_cis(x: np.ndarray, y: np.ndarray, spearman, kendall, confidence: float = 0.95) -> tuple:
    """Intervals for Spearman's ρ and Kendall's τ on Fisher's z scale with the jackknife standard error and a
    t quantile with n − 1 df (Efron & Tibshirani 1993, ch. 11; no normality assumed, unlike the fixed
    variances of ``rank_cis``); None beyond 2,000 units (n × n matrices) or below 5."""
    from scipy.stats import t as student_t

    if x.size < 5 or x.size > 2000:
        return None, None
    q = float(student_t.ppf(0.5 + confidence / 2, x.size - 1))
    out = []
    for estimate, values in zip((spearman, kendall), rank_jackknife(x, y)):
        if estimate is None or abs(estimate) >= 1 or not np.all(np.isfinite(values)):
            out.append(None)
            continue
        half = q * math.sqrt(jackknife_variance(values))
        z = math.atanh(estimate)
        out.append([math.tanh(z - half), math.tanh(z + half)])
    return tuple(out)


def rank_cis(spearman: float | None, kendall: float | None, n: int, confidence: float = 0.95) -> tuple:
    """Fisher-z intervals for Spearman's ρ (Bonett & Wright 2000: var = (1 + ρ²/2) / (n − 3)) and
    Kendall's τ (Fieller, Hartley & Pearson 1957: var = 0.437 / (n − 4)) on n units."""
    from scipy.stats import norm

    z = norm.ppf(0.5 + confidence / 2)

    def interval(r, variance):
        if r is None or abs(r) >= 1 or variance is None:
            return None
        centre, half = math.atanh(r), z * math.sqrt(variance)
        return [math.tanh(centre - half), math.tanh(centre + half)]

    return (
        interval(spearman, (1 + (spearman or 0) ** 2 / 2) / (n - 3) if n > 3 else None),
        interval(kendall, 0.437 / (n - 4) if n > 4 else None),
    )


def bootstrap_weights(n_dialogues: int, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """B×D counts: how often each dialogue is drawn in each resample."""
    draws = rng.integers(0, n_dialogues, size=(resamples, n_dialogues))
    offsets = (np.arange(resamples) * n_dialogues)[:, None]
    return np.bincount((draws + offsets).ravel(), minlength=resamples * n_dialogues).reshape(resamples, n_dialogues)


def percentile_ci(values: np.ndarray, confidence: float = 0.95, axis: int = 0):
    tail = (1 - confidence) / 2 * 100
    with np.errstate(invalid="ignore"):
        return np.nanpercentile(values, tail, axis=axis), np.nanpercentile(values, 100 - tail, axis=axis)


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


def mover_diff_ci(r_a: float, r_b: float, r_ab: float, ci_a, ci_b) -> tuple[float, float] | None:
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


def leave_one_out_pearson(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """r of paired units with each left out in turn (n values), from the five sums in closed form."""
    n = x.size - 1.0
    sx, sy, sxx, syy, sxy = x.sum() - x, y.sum() - y, (x**2).sum() - x**2, (y**2).sum() - y**2, (x * y).sum() - x * y
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.clip((n * sxy - sx * sy) / np.sqrt((n * sxx - sx**2) * (n * syy - sy**2)), -1.0, 1.0)


def jackknife_t_interval(r: float, leave_one_out: np.ndarray, confidence: float = 0.95) -> list[float] | None:
    """z ± t(n − 1) · SE_jack(z), z = atanh r, over n leave-one-out values (Efron & Tibshirani 1993, ch. 11)."""
    from scipy.stats import t as student_t

    finite = leave_one_out[np.isfinite(leave_one_out)]
    variance = jackknife_variance(finite)
    if abs(r) >= 1 or variance <= 0 or finite.size < 4:
        return None
    half = float(student_t.ppf(0.5 + confidence / 2, finite.size - 1)) * math.sqrt(variance)
    return [math.tanh(math.atanh(r) - half), math.tanh(math.atanh(r) + half)]


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
        low, high = mover_diff_ci(r_a, r_b, r_ab, ci_a, ci_b)
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


def fisher_row(r: float, n: int, confidence: float = 0.95) -> tuple[list[float], float]:
    """Fisher-z interval and the two-sided t-test p-value of a Pearson r on n units."""
    from scipy.stats import norm
    from scipy.stats import t as student_t

    if n <= 3 or abs(r) >= 1:
        return [float(r), float(r)], 0.0 if abs(r) >= 1 else 1.0
    half = norm.ppf(0.5 + confidence / 2) / math.sqrt(n - 3)
    z = math.atanh(r)
    t = r * math.sqrt((n - 2) / (1 - r**2))
    return [math.tanh(z - half), math.tanh(z + half)], float(2 * student_t.sf(abs(t), n - 2))


def _none(value) -> float | None:
    return None if value is None or not np.isfinite(value) else float(value)


def correlate_one(
    x: np.ndarray, y: np.ndarray, boot_r: np.ndarray | None, confidence: float = 0.95, n_units: int | None = None
) -> dict:
    """Pearson with Fisher-z CI and p (scipy), the bootstrap CI given, Spearman and Kendall.  With
    ``n_units`` (pairs mode: the dialogues) the Fisher CI and p use that n, not the observations."""
    from scipy import stats

    row = {"pearson": None, "pearson_ci": None, "p_value": None, "bootstrap_ci": None, "spearman": None, "kendall": None}
    if x.size < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        row["note"] = "fewer than 3 observations" if x.size < 3 else "constant values: correlation undefined"
        return row
    result = stats.pearsonr(x, y)
    ci = result.confidence_interval(confidence)
    row.update(pearson=float(result.statistic), pearson_ci=[float(ci.low), float(ci.high)], p_value=float(result.pvalue))
    if n_units is not None:  # pairs: the unit is the dialogue
        if n_units > 3:
            row["pearson_ci"], row["p_value"] = fisher_row(row["pearson"], n_units, confidence)
            row["ci_method"] = "fisher, n = dialogues (conservative)"
        else:  # Fisher over dialogues needs n > 3: no interval, no p (fisher_row's [r, r] and p = 1 measure nothing)
            row["pearson_ci"], row["p_value"] = None, None
            row["ci_method"] = f"none: {n_units} dialogues; a Fisher interval over dialogues needs more than 3"
        if boot_r is not None and np.isfinite(boot_r).sum() >= boot_r.size / 2 and abs(row["pearson"]) < 1:
            # Fisher z with the standard error of z over the dialogue bootstrap and a t quantile with
            # dialogues − 1 df (few clusters); see python -m bench.bench_coverage for its coverage beside
            # n = votes (0.80) and n = dialogues (0.995)
            from scipy.stats import t as student_t

            spread = float(np.nanstd(np.arctanh(np.clip(boot_r, -0.999999, 0.999999)), ddof=1))
            z, half = math.atanh(row["pearson"]), student_t.ppf(0.5 + confidence / 2, n_units - 1) * spread
            row["pearson_ci"] = [math.tanh(z - half), math.tanh(z + half)]
            row["ci_method"] = "fisher z, bootstrap SE over dialogues, t(dialogues - 1)"
    if boot_r is not None and np.isfinite(boot_r).sum() >= boot_r.size / 2:
        lo, hi = percentile_ci(boot_r, confidence)
        row["bootstrap_ci"] = [float(lo), float(hi)]
    row["spearman"] = _none(stats.spearmanr(x, y).statistic)
    row["kendall"] = _none(stats.kendalltau(x, y).statistic)
    return row


DEFAULT_INTERVAL = {"mean": "jackknife_t", "pairs": "jackknife_t", "two_way": "jackknife_t"}
# The difference r_a − r_b: Zou's (2007) MOVER from the jackknife-t intervals of r_a and r_b (``diff_ci``)
DIFF_DEFAULT = "mover_jackknife_t"
# Spearman's interval: ``rank_jackknife_cis`` (Bonett & Wright's Fisher one where it gives none, over 2,000
# dialogues); Kendall's stays Fieller et al.'s Fisher one, which held 0.94-0.96 (bench_coverage)
RANK_DEFAULT = {"spearman": "jackknife_t", "kendall": "fisher_fhp"}
# Without a bootstrap (--bootstrap 0) a family that needs one falls back to the first of these that exists
NO_BOOTSTRAP_FALLBACK = ("sandwich_t", "fisher")


def interval_key(mode: str, resample: str) -> str:
    """Which DEFAULT_INTERVAL entry a row uses: ``two_way`` when annotators are resampled too, else the mode."""
    return "two_way" if resample != "dialogues" else ("pairs" if mode == "pairs" else "mean")


def _pearson_row_intervals(masked, valid, ratings, sums, boot, resampled, units, resample) -> dict:
    """Every interval family for one metric's r, the default one as ``pearson_ci`` / ``ci_method``."""
    n, sy, syy = (v * valid for v in sums)
    r = float(weighted_pearson(masked, n, sy, syy))
    if not np.isfinite(r) or units <= 3:  # no interval over 3 or fewer dialogues (correlate_one says so)
        return {"intervals": dict.fromkeys(INTERVAL_FAMILIES)}
    se = float(pearson_se(masked, n, sy, syy))
    jack, jack_a, jack_v, boot_se = None, None, None, None
    if resampled is not None or units <= 2000:
        jack = jackknife_pearson(masked, n, sy, syy)[valid & (n > 0)]
    if resampled is not None:
        boot_se = pearson_se(masked, resampled[1], resampled[2], resampled[3], resampled[0])
        if resample != "dialogues":
            jack_a = jackknife_annotators(masked, ratings, valid)
            jack_v = jackknife_votes(masked, ratings, valid)
    intervals = pearson_intervals(
        r, units, boot=boot, boot_se=boot_se, se=se, jackknife=jack, jackknife_annotators=jack_a, jackknife_votes=jack_v
    )
    out = {"bca_ci": intervals["bca"], "intervals": intervals}
    family = DEFAULT_INTERVAL[interval_key(ratings.mode, resample)]
    if intervals[family] is None:
        family = next((f for f in NO_BOOTSTRAP_FALLBACK if intervals[f] is not None), family)
    if intervals[family] is not None:
        unit = "dialogues and annotators" if resample != "dialogues" else "dialogues"
        out["pearson_ci"] = intervals[family]
        out["ci_method"] = f"{family}: {INTERVAL_FAMILIES[family]} (unit: {unit})"
    return out


def correlation_report(
    metric_values: Mapping[str, np.ndarray],
    ratings: Ratings,
    *,
    resamples: int = 1000,
    seed: int = 0,
    adjust: str = "holm",
    resample: str = "dialogues",
    family: str = "reference",
    reference: str = "jga",
    fga_lambda: float = DEFAULT_FGA_LAMBDA,
) -> dict:
    """Every metric against the ratings; Williams' test with Zou's interval for each comparison of the
    declared family (``family``: each metric against ``reference`` with FGA at ``fga_lambda``, or
    ``all`` pairs; :mod:`metrics.comparisons`), p-values adjusted over that family and intervals at
    the level that agrees with the adjustment (``adjust``: holm, bonferroni, bh or none), notes.  The
    bootstrap resamples dialogues, or dialogues and annotators (``resample``, see :func:`resample_sums`);
    ``bca_ci`` is Efron's BCa interval for r, ``spearman_ci`` / ``kendall_ci`` Fisher-z intervals.

    ``metric_values[name]`` is per dialogue in ``ratings.dialogue_ids`` order; NaN values
    (AGA of a dialogue without non-empty gold) drop those observations for that metric.  ``n`` is
    the number of dialogues in every mode (``n_votes`` in pairs mode says how many votes they had).
    """
    adjust_p([], adjust)  # an unknown method is refused before any work
    rng = np.random.default_rng(seed)
    n, sy, syy = ratings.sufficient()
    weights = None
    if resamples > 0:
        weights, n_b, sy_b, syy_b = resample_sums(ratings, resamples, rng, resample)
    y = ratings.value
    pairs = ratings.mode == "pairs"
    rows, observed, undefined = [], {}, {}
    for name, per_dialogue in metric_values.items():
        valid = np.isfinite(per_dialogue)
        x_obs = per_dialogue[ratings.dialogue]
        keep = valid[ratings.dialogue]
        boot = None
        masked = np.where(valid, per_dialogue, 0.0)
        resampled = None
        if weights is not None:
            boot = weighted_pearson(masked, n_b * valid, sy_b * valid, syy_b * valid, weights)
            resampled = (weights, n_b * valid, sy_b * valid, syy_b * valid)
        units = int(np.unique(ratings.dialogue[keep]).size)
        row = {
            "metric": name,
            "n": units,
            **({"n_votes": int(keep.sum())} if pairs else {}),
            **correlate_one(x_obs[keep], y[keep], boot, n_units=units if pairs else None),
        }
        row["spearman_ci"], row["kendall_ci"] = rank_cis(row["spearman"], row["kendall"], units)
        if not pairs and row["pearson"] is not None:  # the rank intervals' other family (bench_coverage)
            rho_jack, tau_jack = rank_jackknife_cis(x_obs[keep], y[keep], row["spearman"], row["kendall"])
            row["rank_intervals"] = {
                "spearman": {"fisher_bw": row["spearman_ci"], "jackknife_t": rho_jack},
                "kendall": {"fisher_fhp": row["kendall_ci"], "jackknife_t": tau_jack},
            }
            row["spearman_ci"] = rho_jack or row["spearman_ci"]
        if row["pearson"] is None:
            undefined[name] = "fewer than 3 observations" if keep.sum() < 3 else "constant values"
        row["bca_ci"] = None
        if row["pearson"] is not None:
            row.update(_pearson_row_intervals(masked, valid, ratings, (n, sy, syy), boot, resampled, units, resample))
        if keep.sum() < keep.size:
            row["note"] = f"{int((~valid).sum())} dialogue(s) without a value left out"
        rows.append(row)
        observed[name] = (x_obs, keep)
    williams, too_few = [], {}
    if pairs:  # metrics are compared on the dialogues' mean ratings: the dialogue is the unit
        rated = n > 0
        y_unit = np.where(rated, sy / np.maximum(n, 1), np.nan)
        observed = {name: (per_dialogue, rated & np.isfinite(per_dialogue)) for name, per_dialogue in metric_values.items()}
        y = y_unit
    data = {}  # each comparison's units: (rating, metric A, metric B), for its interval
    declared = declare([row["metric"] for row in rows], kind=family, reference=reference, fga_lambda=fga_lambda, adjust=adjust)
    by_name = {row["metric"]: row for row in rows}
    for name_a, name_b in declared.pairs:
        a, b = by_name[name_a], by_name[name_b]
        if a["pearson"] is None or b["pearson"] is None:
            continue
        keep = observed[a["metric"]][1] & observed[b["metric"]][1]
        xa, xb = observed[a["metric"]][0][keep], observed[b["metric"]][0][keep]
        units = int(keep.sum())
        entry = {"a": a["metric"], "b": b["metric"], "n": units}
        if np.ptp(xa) == 0 or np.ptp(xb) == 0 or units <= 3:
            why = "both need more than 3" if units <= 3 else "a metric is constant on them"
            too_few.setdefault((units, why), []).append(f"{a['metric']} vs {b['metric']}")
            continue
        r12, r13 = np.corrcoef(y[keep], xa)[0, 1], np.corrcoef(y[keep], xb)[0, 1]
        r23 = np.corrcoef(xa, xb)[0, 1]
        entry.update(r_a=float(r12), r_b=float(r13), r_ab=float(r23), diff=float(r12 - r13))
        data[id(entry)] = (y[keep], xa, xb)
        try:
            # Williams' t (normal theory) stays for reference; the tested p is the difference interval's own
            entry["t"], entry["p_williams"] = williams_test(r12, r13, r23, units)
            entry["p_value"] = diff_test(y[keep], xa, xb)[1]
            # 80% power for this comparison at the family's level α/m (metrics.planning, Williams' power)
            entry["n_needed"] = dialogues_needed(r12, r13, r23, alpha=declared.test_alpha)
        except ValueError as why:
            entry.update(t=None, p_value=None, diff_ci=None, n_needed=None, note=str(why))
        williams.append(entry)
    tested = [w for w in williams if w["p_value"] is not None]
    adjusted = adjust_p([w["p_value"] for w in tested], adjust)
    if adjusted is not None:
        for entry, value in zip(tested, adjusted):
            entry[f"p_{adjust}"] = value
    rejected = sum(value < declared.alpha for value in adjusted or ())
    confidence = declared.interval_confidence(rejected, len(tested))  # p and interval over the same m
    for entry in tested:  # the difference's interval at the level that agrees with the adjusted test (metrics.comparisons)
        interval = diff_ci(*data[id(entry)], confidence)
        entry["diff_ci"] = list(interval) if interval is not None else None
        if entry["diff_ci"] is None:
            continue
        entry["significant"] = (entry.get(f"p_{adjust}", entry["p_value"])) < declared.alpha
        excludes = entry["diff_ci"][0] > 0 or entry["diff_ci"][1] < 0
        if entry["significant"] and not excludes and adjust in ("holm", "bh"):
            entry["note"] = (
                f"significant after {ADJUSTMENT_NAMES[adjust]}; its interval at the family's level still touches 0 "
                f"({ADJUSTMENT_NAMES[adjust]}'s step-wise test finds more than the interval shows)"
            )
    notes = []
    if resamples > 0 and resample != "dialogues":
        notes.append(
            "bootstrap over dialogues and annotators (two-way): the intervals include the uncertainty of which "
            "annotators were asked; the reported one is Fisher z with the two-way jackknife SE (dialogues, and "
            "annotators net of the votes' own noise) and Satterthwaite's df; BCa's acceleration comes from the "
            "jackknife over dialogues and annotators"
        )
    if resamples <= 0:
        notes.append(
            "no bootstrap resamples (0 asked for): no bootstrap interval was computed (bootstrap_ci and bca_ci are null); "
            "the reported "
            "intervals are jackknife ones, which need no resampling"
        )
    voted = 0 if ratings.matrix is None else int(np.isfinite(ratings.matrix).any(axis=1).sum())
    if resample == "dialogues" and 0 < voted <= FEW_ANNOTATORS:
        notes.append(
            f"only {voted} annotators gave these votes: intervals over dialogues leave out which annotators were "
            "asked and their own leniency and scale, and can be too narrow (simulated coverage of 95% intervals, "
            f"{FEW_ANNOTATORS_COVERAGE}); resampling annotators as well as dialogues covers that"
        )
    if pairs:  # the interval each metric got, said as it was (issue 26: not "conservative" for none)
        methods = {row["ci_method"] for row in rows if "ci_method" in row}
        used = [text for key, text in PAIRS_INTERVALS.items() if any(m.startswith(key) for m in methods)]
        used += sorted({m.split(" (unit:")[0].split(": ", 1)[1] for m in methods if m.split(":")[0] in INTERVAL_FAMILIES})
        notes.append(
            "rating pairs: every vote is an observation for r, but a dialogue's votes are not independent: n "
            f"counts dialogues, the interval is {'; '.join(used) or 'none'}, and metrics are compared (Williams, "
            "Zou) on the dialogues' mean ratings"
        )
    # A pair of metrics that Williams' test and Zou's interval leave out is said so, not dropped (issue 26)
    notes += [f"{NOT_COMPARED}: {name} — its correlation is undefined ({why})" for name, why in undefined.items()]
    for (units, why), names in too_few.items():
        listed = ", ".join(names) if len(names) <= 3 else f"{len(names)} metric pairs"
        notes.append(f"{NOT_COMPARED}: {listed} on {units} dialogues; {why}")
    if family == "reference" and declared.kind == "all":
        notes.append(f"the reference metric {reference} was not measured: every pair of metrics is compared")
    notes.append(f"comparisons: {declared.describe(rejected, len(tested))}")
    bootstrap = {"resamples": resamples, "seed": seed, "resample": resample}  # the unit of resampling, as calibrate's
    comparisons = {
        "family": declared.kind,
        "key": declared.key,
        "reference": declared.reference,
        "fga": declared.fga,
        "size": declared.size,
        "tested": len(tested),
        "adjust": adjust,
        "alpha": declared.alpha,
        "interval_confidence": confidence,
        "planning_alpha": declared.test_alpha,
        "text": declared.describe(rejected, len(tested)),
    }
    return {"metrics": rows, "williams": williams, "comparisons": comparisons, "notes": notes, "bootstrap": bootstrap}


def _rating_matrix(votes: Sequence[Vote], dialogue_ids: Sequence[str]) -> tuple[list[str], np.ndarray]:
    """Annotators × dialogues of numeric ratings (NaN: not rated)."""
    index = {d: i for i, d in enumerate(dialogue_ids)}
    votes = [v for v in votes if v.item in index]
    annotators = sorted({v.annotator for v in votes})
    matrix = np.full((len(annotators), len(dialogue_ids)), np.nan)
    a_index = {a: i for i, a in enumerate(annotators)}
    for vote, value in zip(votes, _numeric(votes) if votes else []):
        matrix[a_index[vote.annotator], index[vote.item]] = value
    return annotators, matrix


def icc_oneway(ratings: np.ndarray) -> tuple[float, float]:
    """ICC(1,1) and ICC(1,k) of a dialogues × ratings array (NaN: missing), one-way random effects
    (Shrout & Fleiss 1979); with unequal counts k is the ANOVA's k0 and ICC(1,k) is Spearman–Brown at
    the mean count.  Only dialogues with two or more ratings enter.  The human ceiling takes only ICC(1,1)
    from here: the reliability of means of unequal counts is ``mean_reliability``'s (harmonic mean count).

    >>> [round(v, 2) for v in icc_oneway(np.array([[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8],
    ...                                            [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7.]]))]
    [0.17, 0.44]
    """
    counts = np.sum(np.isfinite(ratings), axis=1)
    rows = ratings[counts >= 2]
    counts = counts[counts >= 2]
    if rows.shape[0] < 2:
        return float("nan"), float("nan")
    total, n = counts.sum(), rows.shape[0]
    means = np.nansum(rows, axis=1) / counts
    grand = np.nansum(rows) / total
    ms_between = float(np.sum(counts * (means - grand) ** 2) / (n - 1))
    ms_within = float(np.nansum((rows - means[:, None]) ** 2) / (total - n))
    k0 = (total - np.sum(counts**2) / total) / (n - 1)
    single = (ms_between - ms_within) / (ms_between + (k0 - 1) * ms_within) if ms_between + ms_within > 0 else float("nan")
    k = float(counts.mean())
    spread = 1 + (k - 1) * single
    # ICC(1,1) at or below −1/(k − 1) (all the variance within dialogues): Spearman–Brown is undefined
    # and there is no reliability; ICC(1,1) itself (≤ 0) is given for the mean too
    mean = k * single / spread if np.isfinite(single) and spread > 0 else single
    return float(single), float(mean)


def mean_reliability(single: float, counts: np.ndarray) -> tuple[float, float]:
    """The reliability of the dialogues' mean ratings as a set, and the k it puts into Spearman–Brown.

    Derivation (one-way random effects, issue 26): a dialogue's k_d votes are t_d + e with var t = σ²_t,
    var e = σ²_e, and t independent of k.  The mean of k_d votes has error variance σ²_e / k_d, so over
    dialogues with different counts the means have variance σ²_t + σ²_e·mean(1/k) and covariance σ²_t with
    t; the squared correlation of the means with t, their reliability, is

        σ²_t / (σ²_t + σ²_e·mean(1/k)) = ICC / (ICC + (1 − ICC)·mean(1/k)),   ICC = ICC(1,1),

    which is Spearman–Brown at the harmonic mean k_h = 1 / mean(1/k), over ``counts`` (one per dialogue,
    each ≥ 1).  With equal counts k_h = k, and ICC(1,k) as Shrout & Fleiss (1979) give it.  ICC(1,1)
    at or below −1/(k_h − 1) (all the variance within dialogues) leaves Spearman–Brown undefined: the
    reliability is ICC(1,1) itself (≤ 0), as in ``icc_oneway``.

    >>> [round(v, 3) for v in mean_reliability(0.3, np.array([1, 1, 1, 5]))]   # k_h = 1 / 0.8
    [0.349, 1.25]
    """
    k = float(counts[0]) if np.all(counts == counts[0]) else counts.size / float(np.sum(1.0 / counts))
    spread = 1 + (k - 1) * single
    return (k * single / spread if np.isfinite(single) and spread > 0 else single), k


def _ceiling_reliability(by_dialogue: np.ndarray, rating: str) -> tuple[float, float, float]:
    """ICC(1,1) (dialogues with 2 or more votes), the reliability r_max is the root of, and k_h."""
    single = icc_oneway(by_dialogue)[0]
    if rating == "pairs":  # r over votes: the ceiling of one vote
        return single, single, 1.0
    counts = np.isfinite(by_dialogue).sum(axis=1)
    counts = counts[counts >= 1]
    return (single, *mean_reliability(single, counts)) if counts.size else (single, float("nan"), float("nan"))


CEILING_DEFAULT = "jackknife_t"
# At most this many annotators behind the votes: intervals over dialogues alone get a note (bench_coverage)
FEW_ANNOTATORS = 12
FEW_ANNOTATORS_COVERAGE = (
    "the same 4 annotators on every dialogue: 0.86-0.92 for r of the mean rating, 0.47-0.74 in pairs mode; a pool of "
    "12 with their own leniency and scale: 0.92-0.95"
)


def _ceiling_sums(by_dialogue: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per dialogue (row of ``by_dialogue``): vote count k, Σ votes, Σ votes²."""
    k = np.isfinite(by_dialogue).sum(axis=1).astype(float)
    return k, np.nansum(by_dialogue, axis=1), np.nansum(by_dialogue**2, axis=1)


def ceiling_anova(k: np.ndarray, s: np.ndarray, q: np.ndarray, weights: np.ndarray) -> dict[str, np.ndarray]:
    """The one-way ANOVA of :func:`icc_oneway` for each row of dialogue ``weights`` (B×D) at once, from the
    per-dialogue count, sum and sum of squares (dialogues with 2 or more votes), and the harmonic mean
    count over the dialogues with a vote: ms_between, ms_within, their df, k0, ICC(1,1), k_h."""
    rep = (k >= 2).astype(float)
    w = weights * rep
    with np.errstate(invalid="ignore", divide="ignore"):
        units, total = w.sum(axis=1), w @ k
        grand = (w @ s) / total
        between = (w @ np.where(k > 0, s**2 / np.maximum(k, 1), 0.0)) - total * grand**2
        within = w @ (q - np.where(k > 0, s**2 / np.maximum(k, 1), 0.0))
        msb, msw = between / (units - 1), within / (total - units)
        k0 = (total - (w @ k**2) / total) / (units - 1)
        single = np.where(msb + msw > 0, (msb - msw) / (msb + (k0 - 1) * msw), np.nan)
        single = np.where(units >= 2, single, np.nan)
        rated = weights * (k >= 1)
        harmonic = rated.sum(axis=1) / (rated @ np.where(k >= 1, 1.0 / np.maximum(k, 1), 0.0))
    return {"msb": msb, "msw": msw, "df1": units - 1, "df2": total - units, "k0": k0, "single": single, "k_h": harmonic}


def _spearman_brown(single: np.ndarray, k: np.ndarray) -> np.ndarray:
    spread = 1 + (k - 1) * single
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(np.isfinite(single) & (spread > 0), k * single / np.where(spread > 0, spread, 1), single)


def ceiling_reliabilities(by_dialogue: np.ndarray, weights: np.ndarray, rating: str) -> np.ndarray:
    """``_ceiling_reliability``'s reliability for each row of dialogue weights (B), vectorised."""
    anova = ceiling_anova(*_ceiling_sums(by_dialogue), weights)
    if rating == "pairs":
        return anova["single"]
    k = _ceiling_sums(by_dialogue)[0]
    counts = k[k >= 1]
    k_h = np.full(weights.shape[0], counts[0]) if counts.size and np.all(counts == counts[0]) else anova["k_h"]
    return _spearman_brown(anova["single"], k_h)


CEILING_FAMILIES = {
    "percentile": "percentile bootstrap over dialogues",
    "bca": "BCa bootstrap over dialogues (Efron 1987)",
    "boot_se_t": "atanh(r_max) with the bootstrap standard error and a t quantile (dialogues - 1 df)",
    "jackknife_t": "atanh(r_max) with the jackknife standard error over dialogues and a t quantile (dialogues - 1 df)",
    "f_exact": "F interval of ICC(1,1) (Searle 1971; Shrout & Fleiss 1979; McGraw & Wong 1996), Spearman-Brown at k_h",
}


def ceiling_intervals(
    by_dialogue: np.ndarray, rating: str, reliability: float, boot: np.ndarray | None, confidence: float = 0.95
) -> dict[str, list[float] | None]:
    """Every CEILING_FAMILIES interval for r_max = √reliability (``boot``: bootstrap reliabilities)."""
    from scipy.stats import f as f_dist
    from scipy.stats import t as student_t

    out: dict[str, list[float] | None] = dict.fromkeys(CEILING_FAMILIES)
    k, s, q = _ceiling_sums(by_dialogue)
    d = by_dialogue.shape[0]
    tail = 0.5 + confidence / 2
    root = lambda v: float(math.sqrt(max(float(v), 0.0)))  # noqa: E731
    anova = {key: float(v[0]) for key, v in ceiling_anova(k, s, q, np.ones((1, d))).items()}
    if anova["df1"] >= 1 and anova["df2"] >= 1 and anova["msw"] > 0:
        ratio = anova["msb"] / anova["msw"]
        f_low = ratio / f_dist.ppf(tail, anova["df1"], anova["df2"])
        f_high = ratio * f_dist.ppf(tail, anova["df2"], anova["df1"])
        singles = np.array([(f - 1) / (f + anova["k0"] - 1) for f in (f_low, f_high)])
        counts = k[k >= 1]
        k_use = 1.0 if rating == "pairs" else (counts[0] if np.all(counts == counts[0]) else anova["k_h"])
        low, high = _spearman_brown(singles, np.full(2, k_use))
        out["f_exact"] = [root(low), root(high)]
    estimate = root(reliability)
    inside = 0 < estimate < 1
    q = float(student_t.ppf(tail, max(d - 1, 1)))
    jack = None
    if inside:
        z = math.atanh(estimate)
        leave_out = 1.0 - np.eye(d)
        jack = np.sqrt(np.clip(ceiling_reliabilities(by_dialogue, leave_out[k >= 1], rating), 0.0, None))
        jack_var = jackknife_variance(np.clip(jack[np.isfinite(jack)], 0.0, 0.999999))
        if jack_var > 0:
            half = q * math.sqrt(jack_var)
            out["jackknife_t"] = [float(max(math.tanh(z - half), 0.0)), float(math.tanh(z + half))]
    if boot is None:
        return out
    values = np.sqrt(np.clip(boot[np.isfinite(boot)], 0.0, None))
    if values.size < max(10, boot.size / 2):
        return out
    lo, hi = percentile_ci(values, confidence)
    out["percentile"] = [float(lo), float(hi)]
    if inside:
        spread = float(np.std(np.arctanh(np.clip(values, 0.0, 0.999999)), ddof=1))
        out["boot_se_t"] = [float(max(math.tanh(z - q * spread), 0.0)), float(math.tanh(z + q * spread))]
        out["bca"] = bca_interval(estimate, values, jack, confidence)
    return out
    values = np.sqrt(np.clip(boot[np.isfinite(boot)], 0.0, None))
    if values.size < max(10, boot.size / 2):
        return out
    lo, hi = percentile_ci(values, confidence)
    out["percentile"] = [float(lo), float(hi)]
    estimate = root(reliability)
    if 0 < estimate < 1:
        z = math.atanh(estimate)
        spread = float(np.std(np.arctanh(np.clip(values, 0.0, 0.999999)), ddof=1))
        half = float(student_t.ppf(tail, max(d - 1, 1))) * spread
        out["boot_se_t"] = [float(max(math.tanh(z - half), 0.0)), float(math.tanh(z + half))]
        leave_out = 1.0 - np.eye(d)
        rated = k >= 1
        jack = np.sqrt(np.clip(ceiling_reliabilities(by_dialogue, leave_out[rated], rating), 0.0, None))
        out["bca"] = bca_interval(estimate, values, jack, confidence)
        jack_var = jackknife_variance(np.clip(jack[np.isfinite(jack)], 0.0, 0.999999))
        if jack_var > 0:
            half = float(student_t.ppf(tail, max(d - 1, 1))) * math.sqrt(jack_var)
            out["jackknife_t"] = [float(max(math.tanh(z - half), 0.0)), float(math.tanh(z + half))]
    return out


def human_ceiling(
    votes: Sequence[Vote], dialogue_ids: Sequence[str], *, resamples: int = 1000, seed: int = 0, rating: str = "mean"
) -> dict:
    """The largest correlation a metric can reach against the human rating it is correlated with:
    r_max = √ of that rating's reliability (one-way random effects: the annotators differ between
    dialogues), with ``ci`` the CEILING_DEFAULT family of ``intervals`` (``ceiling_intervals``; the
    jackknife over dialogues on Fisher's z scale with a t quantile, which held 0.94-0.98 in bench_coverage
    where the percentile bootstrap gave 0.90-0.94), ``ci_method`` naming it, ``ci_note`` with few annotators.

    ICC(1,1), a single vote's reliability, is estimated from the dialogues with 2 or more votes (ANOVA,
    k0 for unequal counts).  ``rating`` ``mean`` (and ``majority``, for which the mean's ceiling is given:
    a majority label's own reliability is not modelled): the reliability of the dialogues' mean ratings,
    Spearman–Brown at the harmonic mean of the vote counts over every rated dialogue in ``dialogue_ids``
    (the dialogues the correlation uses, 1-vote ones included), ``mean_reliability``; equal counts k give
    ICC(1,k).  ``pairs``: r is computed over votes, so the ceiling is a single vote's, √ICC(1,1).  Each
    bootstrap resample and each leave-one-out recomputes ICC(1,1) and the harmonic mean on its dialogues.  ``k_harmonic``
    is the k used (1 in pairs mode).  ``annotator_vs_rest`` keeps each annotator against the mean of the
    others (how well one person predicts the rest), which is not a ceiling."""
    annotators, matrix = _rating_matrix(votes, dialogue_ids)
    return ceiling_report(annotators, matrix, resamples=resamples, seed=seed, rating=rating)


def ceiling_report(
    annotators: list[str], matrix: np.ndarray, *, resamples: int = 1000, seed: int = 0, rating: str = "mean"
) -> dict:
    """:func:`human_ceiling` from the annotators × dialogues matrix of ratings (NaN: none)."""
    by_dialogue = matrix.T
    counts = np.isfinite(by_dialogue).sum(axis=1)
    counts = counts[counts >= 1]
    if rating == "pairs":
        method = "r_max = sqrt(ICC(1,1)): reliability of a single vote (pairs: r is computed over votes)"
    elif counts.size and np.all(counts == counts[0]):
        method = "r_max = sqrt(ICC(1,k)): reliability of the per-dialogue mean rating"
    else:
        method = (
            "r_max = sqrt(ICC(1,k)), k the harmonic mean of the dialogues' vote counts (Spearman-Brown; ICC(1,1) "
            "from the dialogues with 2 or more votes): reliability of the per-dialogue mean rating"
        )
    result = {
        "r_max": None,
        "reliability": None,
        "ci": None,
        "method": f"{method}, one-way random effects; interval: Fisher z of r_max with the jackknife SE over dialogues, t",
        "annotator_vs_rest": _annotator_vs_rest(annotators, matrix),
    }
    single, reliability, k = _ceiling_reliability(by_dialogue, rating)
    result["reliability_single"] = single if np.isfinite(single) else None  # ICC(1,1): one rating
    if not np.isfinite(reliability):  # too few repeated dialogues, or ICC's 0/0: say which (issue 26)
        repeated = int((np.isfinite(by_dialogue).sum(axis=1) >= 2).sum())
        if repeated >= 2:
            result["note"] = (
                f"all ratings identical ({repeated} dialogues with 2 or more ratings): no variance between or within "
                "dialogues, so ICC(1,k) is 0/0 and there is no ceiling"
            )
        else:
            result["note"] = f"the ceiling needs at least 2 dialogues with 2 or more ratings each (found {repeated})"
        return result
    result["reliability"] = reliability
    result["k_harmonic"] = k
    result["r_max"] = math.sqrt(max(reliability, 0.0))
    if reliability <= 0:
        result["note"] = (
            "a single vote shows no reliability (ICC(1,1) <= 0): r_max is 0"
            if rating == "pairs"
            else "the mean rating shows no reliability (ICC(1,k) <= 0): r_max is 0"
        )
    if resamples > 0:
        weights = bootstrap_weights(by_dialogue.shape[0], resamples, np.random.default_rng(seed)).astype(float)
        boot = ceiling_reliabilities(by_dialogue, weights, rating)  # every resample at once (as the loop it replaces)
    else:
        boot = None
    result["intervals"] = ceiling_intervals(by_dialogue, rating, reliability, boot)
    family = next((f for f in (CEILING_DEFAULT, "percentile") if result["intervals"][f] is not None), None)
    result["ci"] = None if family is None else result["intervals"][family]
    if family is not None:
        result["ci_method"] = f"{family}: {CEILING_FAMILIES[family]}"
    voted = int(np.isfinite(matrix).any(axis=1).sum())
    if result["ci"] is not None and voted <= FEW_ANNOTATORS:
        result["ci_note"] = (
            f"only {voted} annotators gave these votes: the interval resamples dialogues, not the annotators' own "
            "leniency and scale, and can be too narrow (simulated coverage of 95% intervals: 0.85-0.92 with a pool of 12 "
            "such annotators)"
        )
    return result


def _annotator_vs_rest(annotators: list[str], matrix: np.ndarray) -> dict:
    """Each annotator's ratings against the mean of the others' on the dialogues both rated."""
    rows = []
    for a, name in enumerate(annotators):
        others = np.delete(matrix, a, axis=0)
        with warnings.catch_warnings():  # an all-NaN column (nobody else rated it) is expected
            warnings.simplefilter("ignore", RuntimeWarning)
            mean_others = np.nanmean(others, axis=0) if others.size else np.full(matrix.shape[1], np.nan)
        both = np.isfinite(matrix[a]) & np.isfinite(mean_others)
        r = None
        if both.sum() >= 3 and np.ptp(matrix[a][both]) > 0 and np.ptp(mean_others[both]) > 0:
            r = float(np.corrcoef(matrix[a][both], mean_others[both])[0, 1])
        rows.append({"annotator": name, "n": int(both.sum()), "pearson": r})
    defined = [row["pearson"] for row in rows if row["pearson"] is not None]
    result = {"mean_pearson": float(np.mean(defined)) if defined else None, "annotators": rows}
    if not defined:
        result["note"] = "needs two annotators with at least 3 shared dialogues and varying ratings"
    return result
