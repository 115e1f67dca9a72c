"""A study designer: k and the dialogues chosen together, for an estimand that does not depend on k
(issue 29).

**The estimand.** r(metric, mean of k votes) shrinks as k falls, since the mean of fewer votes is
less reliable; a k = 1 design and a k = 3 design would estimate different quantities.  The target here
is the correlation of the metric with the dialogue's *expected* rating over the rater population,

    ρ(metric, T) = r(metric, dialogue mean rating) / √R,   R = ICC / (ICC + (1 − ICC)·mean(1/k)),

R the reliability of the dialogue means (the human ceiling's, ``metrics.correlation.mean_reliability``),
ICC = ICC(1,1) estimated on the dialogues with two or more votes (the overlap subset), mean(1/k) over
every rated dialogue.  With equal k on every dialogue this is r / r_max, today's r scaled by the ceiling.
Its interval is a jackknife over dialogues that re-estimates the ICC in each leave-one-out, so the
correction's uncertainty enters (:func:`corrected_r`, :func:`corrected_difference`).

**The designer.** For a budget of judgements (or a target interval width), :func:`design` searches
n dialogues with one vote each except a random overlap subset of m dialogues with k_o ∈ {2, 3} votes,
and predicts each design's 95% interval width for the question:

* ``comparison``: ρ(A, T) − ρ(B, T).  The width is the central 95% range of (r̂_A − r̂_B)/√R̂: the
  difference of the observed correlations normal with Olkin & Finn's (1990; Steiger 1980) large-sample
  variance at the attenuated correlations ρ·√R, R̂ over the exact distribution of the ICC estimate on
  the overlap subset (:func:`icc_estimate_quantiles`), so that the skew of 1/√R̂ near an ICC of zero is
  in the width.
* ``agreement``: ICC(1,1) itself; only the overlap subset matters (Fisher 1925's variance,
  2(1 − ρ)²(1 + (k − 1)ρ)² / (k(k − 1)(m − 1))).
* ``lambda``: λ*, the argmax of r(FGA_λ, rating), which the correction does not move: one vote per
  dialogue but the smallest identified overlap subset, the dialogues drawn with π from their λ scores
  and weighted 1/π.  The width is the one the Analysis page will report: the mean width of its λ*
  interval (the 1/π-weighted argmax on the page's grid, ``AnalysisSettings().grid``, 0..10 in 1,001 λ,
  refined between grid points, with its percentile bootstrap over the judged dialogues) over simulated
  studies (:class:`LambdaSimulator`, :func:`lambda_width`), with its Monte-Carlo standard error; there is
  no closed form.

It refuses designs whose estimate is not identified: fewer than ``MIN_OVERLAP`` dialogues with two or
more votes, or an ICC whose predicted standard error leaves a non-positive estimate likely
(ICC / SE < ``MIN_ICC_Z``), or a budget that covers no such design.

>>> round(predicted_width("comparison", 0.4, 0.3, 0.8, icc=0.3, n=300, m=300, k_o=3), 3)
0.186
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, cast, overload

import numpy as np
from numpy.typing import ArrayLike

from metrics.adaptive import SCORE_GRID, inclusion_probabilities, lambda_scores
from metrics.calibrate import DEFAULT_GRID, IDENTIFIED_SHARE, refined_argmax
from metrics.correlation import jackknife_variance, leave_one_out_pearson

QUESTIONS = ("comparison", "lambda", "agreement")
MIN_OVERLAP = 10  # dialogues with two or more votes, at least, for the ICC (and so the estimand) to be identified
MIN_ICC_Z = 3.0  # predicted ICC / SE(ICC) at least this: a non-positive ICC estimate (no correction) stays unlikely
K_OVERLAP = (2, 3)
UNIT = "dialogues"


@dataclass(frozen=True)
class Estimate:
    """One estimate with its interval; ``unit`` is what the interval resamples (dialogues)."""

    estimate: float
    low: float | None
    high: float | None
    n: int
    method: str
    unit: str = UNIT

    @property
    def width(self) -> float | None:
        return None if self.low is None or self.high is None else self.high - self.low


# ---------------------------------------------------------------- the estimand


def rating_matrix(ratings_by_dialogue: np.ndarray | Sequence[Iterable[float]]) -> np.ndarray:
    """Dialogues × votes (NaN: none) from a 2-D array or a sequence of per-dialogue vote sequences."""
    if isinstance(ratings_by_dialogue, np.ndarray) and ratings_by_dialogue.ndim == 2:
        return ratings_by_dialogue.astype(float)
    rows = [np.asarray(list(r), dtype=float) for r in ratings_by_dialogue]
    width = max((r.size for r in rows), default=0)
    out = np.full((len(rows), max(width, 1)), np.nan)
    for i, r in enumerate(rows):
        out[i, : r.size] = r
    return out


def _sums(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    k = np.isfinite(matrix).sum(axis=1).astype(float)
    s = np.nansum(matrix, axis=1)
    q = np.nansum(matrix**2, axis=1)
    return k, s, q


def _icc_from_totals(
    units: float | np.ndarray,
    total: float | np.ndarray,
    total_k2: float | np.ndarray,
    sum_s: float | np.ndarray,
    between_raw: float | np.ndarray,
    within: float | np.ndarray,
) -> np.ndarray:
    """ICC(1,1) of the one-way ANOVA (k0 for unequal counts) from totals over the overlap dialogues;
    arrays broadcast (the leave-one-out totals at once)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        grand = sum_s / total
        msb = (between_raw - total * grand**2) / (units - 1)
        msw = within / (total - units)
        k0 = (total - total_k2 / total) / (units - 1)
        single = (msb - msw) / (msb + (k0 - 1) * msw)
    return np.where((units >= 2) & (msb + msw > 0), single, np.nan)


def _reliability(single: float | np.ndarray, inv_k_mean: float | np.ndarray) -> np.ndarray:
    """Spearman-Brown at the harmonic k: ICC / (ICC + (1 − ICC)·mean(1/k)); NaN when ICC ≤ 0."""
    with np.errstate(invalid="ignore", divide="ignore"):
        r = single / (single + (1 - single) * inv_k_mean)
    return np.where(np.isfinite(single) & (single > 0), r, np.nan)


def reliability_parts(matrix: np.ndarray) -> tuple[float, float, np.ndarray, np.ndarray]:
    """ICC(1,1) (overlap dialogues), the reliability of the means, and both with each rated dialogue
    left out in turn (for the jackknife)."""
    k, s, q = _sums(matrix)
    if np.any(k < 1):
        raise ValueError("every dialogue passed needs at least one vote")
    rep = k >= 2
    kr, sr, qr = np.where(rep, k, 0.0), np.where(rep, s, 0.0), np.where(rep, q, 0.0)
    ratio = np.where(rep, s**2 / k, 0.0)
    totals = (rep.sum(), kr.sum(), (kr**2).sum(), sr.sum(), ratio.sum(), (qr - ratio).sum())
    single = float(_icc_from_totals(*map(np.float64, totals)))
    loo = [t - part for t, part in zip(totals, (rep.astype(float), kr, kr**2, sr, ratio, qr - ratio), strict=True)]
    single_loo = _icc_from_totals(*loo)
    inv = 1.0 / k
    d = k.size
    inv_mean = inv.mean()
    inv_loo = (inv.sum() - inv) / (d - 1)
    return single, float(_reliability(single, inv_mean)), single_loo, _reliability(single_loo, inv_loo)


def _check_overlap(matrix: np.ndarray) -> None:
    overlap = int((np.isfinite(matrix).sum(axis=1) >= 2).sum())
    if overlap < MIN_OVERLAP:
        raise ValueError(
            f"the corrected correlation is not identified: {overlap} dialogues with 2 or more votes, "
            f"at least {MIN_OVERLAP} are needed to estimate the ICC"
        )


def _t(n: int, confidence: float) -> float:
    from scipy.stats import t as student_t

    return float(student_t.ppf(0.5 + confidence / 2, max(n - 1, 1)))


def corrected_r(
    metric: ArrayLike, ratings_by_dialogue: np.ndarray | Sequence[Iterable[float]], *, confidence: float = 0.95
) -> Estimate:
    """ρ(metric, T) = r(metric, dialogue mean rating) / √(reliability of the means), with a jackknife-t
    interval over dialogues on Fisher's z (the ICC and mean(1/k) re-estimated without each dialogue)."""
    x = np.asarray(metric, dtype=float)
    matrix = rating_matrix(ratings_by_dialogue)
    _check_overlap(matrix)
    y = np.nanmean(matrix, axis=1)
    r = float(np.corrcoef(x, y)[0, 1])
    single, rel, _, rel_loo = reliability_parts(matrix)
    if not rel > 0:
        raise ValueError(f"the corrected correlation is not identified: ICC(1,1) = {single:.3f} is not positive")
    value = r / math.sqrt(rel)
    with np.errstate(invalid="ignore"):
        loo = leave_one_out_pearson(x, y) / np.sqrt(rel_loo)
    method = "r(metric, mean rating) / sqrt(reliability of the means), ICC(1,1) on the overlap dialogues"
    low: float | None
    high: float | None
    low = high = None
    finite = loo[np.isfinite(loo)]
    if abs(value) < 1 and finite.size >= 4 and np.all(np.abs(finite) < 1):
        half = _t(finite.size, confidence) * math.sqrt(jackknife_variance(finite))
        low, high = math.tanh(math.atanh(value) - half), math.tanh(math.atanh(value) + half)
        method += "; jackknife-t over dialogues on Fisher's z"
    elif finite.size >= 4:
        half = _t(finite.size, confidence) * math.sqrt(_raw_var(finite))
        low, high = value - half, value + half
        method += "; jackknife-t over dialogues (raw scale: |estimate| near 1)"
    return Estimate(value, low, high, int(x.size), method)


def _raw_var(values: np.ndarray) -> float:
    m = values.size
    return float((m - 1) / m * np.sum((values - values.mean()) ** 2))


def corrected_difference(
    metric_a: ArrayLike,
    metric_b: ArrayLike,
    ratings_by_dialogue: np.ndarray | Sequence[Iterable[float]],
    *,
    confidence: float = 0.95,
) -> Estimate:
    """ρ(A, T) − ρ(B, T) = (r_a − r_b) / √R, with a jackknife-t interval over dialogues (raw scale; the
    ICC and mean(1/k) re-estimated without each dialogue, so the correction's uncertainty enters)."""
    xa, xb = np.asarray(metric_a, dtype=float), np.asarray(metric_b, dtype=float)
    matrix = rating_matrix(ratings_by_dialogue)
    _check_overlap(matrix)
    y = np.nanmean(matrix, axis=1)
    single, rel, _, rel_loo = reliability_parts(matrix)
    if not rel > 0:
        raise ValueError(f"the corrected difference is not identified: ICC(1,1) = {single:.3f} is not positive")
    diff = (float(np.corrcoef(xa, y)[0, 1]) - float(np.corrcoef(xb, y)[0, 1])) / math.sqrt(rel)
    with np.errstate(invalid="ignore"):
        loo = (leave_one_out_pearson(xa, y) - leave_one_out_pearson(xb, y)) / np.sqrt(rel_loo)
    finite = loo[np.isfinite(loo)]
    low: float | None
    high: float | None
    low = high = None
    if finite.size >= 4:
        half = _t(finite.size, confidence) * math.sqrt(_raw_var(finite))
        low, high = diff - half, diff + half
    method = "(r_a - r_b) / sqrt(reliability of the means); jackknife-t over dialogues, ICC re-estimated in each"
    return Estimate(diff, low, high, int(y.size), method)


# ---------------------------------------------------------------- predicted widths


def icc_variance(icc: float, k: float, m: int) -> float:
    """Large-sample variance of ICC(1,1) from m dialogues with k votes each (Fisher 1925)."""
    if m < 2 or k < 2:
        return math.inf
    return 2 * (1 - icc) ** 2 * (1 + (k - 1) * icc) ** 2 / (k * (k - 1) * (m - 1))


def _var_diff_r(
    r_a: float | np.ndarray, r_b: float | np.ndarray, r_ab: float | np.ndarray, n: float | np.ndarray
) -> float | np.ndarray:
    """n·Var(r_a − r_b) of two correlations sharing a variable (Olkin & Finn 1990; Steiger 1980, eq. 3)."""
    cov = 0.5 * (2 * r_ab - r_a * r_b) * (1 - r_a**2 - r_b**2 - r_ab**2) + r_ab**3
    return ((1 - r_a**2) ** 2 + (1 - r_b**2) ** 2 - 2 * cov) / n


CORRECTION_POINTS = 64  # conditional quantiles of the ICC estimate's exact distribution used for the prediction


def icc_estimate_quantiles(icc: float, k_o: int, m: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """The ICC(1,1) estimate of m dialogues with k_o votes each at ``CORRECTION_POINTS`` equally likely
    points of its exact distribution under the normal one-way model (MSB/MSW is
    (1 + (k_o − 1)ICC)/(1 − ICC) times an F(m − 1, m(k_o − 1)) variable; Searle, Casella & McCulloch
    1992, 3.5), conditional on a positive estimate (the estimator refuses the others), and P(estimate ≤ 0).
    ``m`` broadcasts: the points are the last axis."""
    from scipy.stats import f as f_dist

    m = np.asarray(m, dtype=float)[..., None]
    scale = (1 + (k_o - 1) * icc) / (1 - icc)
    d1, d2 = np.maximum(m - 1, 1.0), np.maximum(m * (k_o - 1), 1.0)
    p_zero = f_dist.cdf(1 / scale, d1, d2)
    u = (np.arange(CORRECTION_POINTS) + 0.5) / CORRECTION_POINTS
    ratio = scale * f_dist.ppf(p_zero + (1 - p_zero) * u, d1, d2)
    return (ratio - 1) / (ratio + k_o - 1), p_zero[..., 0]


def _mixture_width(centre: ArrayLike, sd: ArrayLike, factor: np.ndarray, confidence: float, iterations: int = 40) -> np.ndarray:
    """Width of the central ``confidence`` interval of (centre + sd·Z)·factor_j, j equally likely
    (``factor`` has the points on its last axis): the mixture's quantiles by bisection, vectorised."""
    from scipy.special import ndtr

    centre, sd = np.asarray(centre, dtype=float)[..., None], np.asarray(sd, dtype=float)[..., None]
    lo_end = np.minimum((centre - 8 * sd) * factor, (centre + 8 * sd) * factor).min(axis=-1)
    hi_end = np.maximum((centre - 8 * sd) * factor, (centre + 8 * sd) * factor).max(axis=-1)

    def quantile(p: float) -> np.ndarray:
        lo, hi = lo_end.copy(), hi_end.copy()
        for _ in range(iterations):
            mid = (lo + hi) / 2
            cdf = ndtr((mid[..., None] / factor - centre) / sd).mean(axis=-1)
            below = cdf < p
            lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
        return cast(np.ndarray, (lo + hi) / 2)

    tail = (1 - confidence) / 2
    return cast(np.ndarray, quantile(1 - tail) - quantile(tail))


def predicted_width(
    question: str,
    r_a: float,
    r_b: float,
    r_ab: float,
    *,
    icc: float,
    n: ArrayLike,
    m: ArrayLike,
    k_o: int,
    confidence: float = 0.95,
) -> float | np.ndarray:
    """Predicted interval width (arrays broadcast over n, m) for n dialogues, m of them with k_o votes and
    the rest one; ``r_a``, ``r_b`` are the corrected (k-free) correlations, ``r_ab`` the metrics'.

    ``comparison``: the central ``confidence`` range of (r̂_a − r̂_b)/√R̂.  The numerator is normal with
    Olkin & Finn's variance at the attenuated correlations (scaled by t(n − 1)/z); R̂ follows the ICC
    estimate's exact distribution on the overlap subset (:func:`icc_estimate_quantiles`, conditional on a
    positive estimate), so the correction's nonlinearity near an ICC of 0 is in the width (a delta method
    is not: at ICC 0.26, 900 dialogues of which 60 with 2 votes, it predicted 0.182 where 0.239 was
    simulated; this gives 0.253)."""
    from scipy.stats import norm
    from scipy.stats import t as student_t

    n, m = np.asarray(n, dtype=float), np.asarray(m, dtype=float)
    var_icc = 2 * (1 - icc) ** 2 * (1 + (k_o - 1) * icc) ** 2 / (k_o * (k_o - 1) * np.maximum(m - 1, 1e-9))
    if question == "agreement":
        width = 2 * student_t.ppf(0.5 + confidence / 2, np.maximum(m - 1, 1)) * np.sqrt(var_icc)
    elif question == "comparison":
        n, m = np.broadcast_arrays(n, m)
        h = ((n - m) + m / k_o) / n  # mean(1/k)
        rel = icc / (icc + (1 - icc) * h)
        a, b = r_a * np.sqrt(rel), r_b * np.sqrt(rel)
        z = norm.ppf(0.5 + confidence / 2)
        sd = np.sqrt(_var_diff_r(a, b, r_ab, n)) * student_t.ppf(0.5 + confidence / 2, np.maximum(n - 1, 1)) / z
        icc_hat, _ = icc_estimate_quantiles(icc, k_o, m)
        icc_hat = np.maximum(icc_hat, 1e-12)
        rel_hat = icc_hat / (icc_hat + (1 - icc_hat) * h[..., None])
        width = _mixture_width(a - b, sd, 1 / np.sqrt(rel_hat), confidence)
    else:
        raise ValueError(_unsupported(question))
    return float(width) if np.ndim(width) == 0 else width


def _unsupported(question: str) -> str:
    if question == "lambda":
        return "question 'lambda': its width is simulated (lambda_width), there is no closed form"
    return f"question must be one of {', '.join(QUESTIONS)}, got {question!r}"


# ---------------------------------------------------------------- the designer


@dataclass(frozen=True)
class Design:
    """n dialogues from a pool of ``pool``: m of them (a random subset, probability m/n each) get
    ``k_overlap`` votes, the rest one.  ``pi_dialogue`` is each pool dialogue's chance to be judged (the
    mean chance with ``weighting``: then each dialogue's π follows its λ score, ``metrics.adaptive``, n is
    the expected number judged and each judged dialogue is weighted 1/π in every estimate)."""

    label: str
    n: int
    m: int
    k_overlap: int
    judgements: int
    width: float | None
    pool: int
    weighting: str | None = None  # "lambda": the n dialogues by Poisson sampling with π from the λ scores
    width_se: float | None = None  # the Monte-Carlo standard error of a simulated width (the question 'lambda')
    pi_dialogue: float = field(init=False)
    pi_overlap: float = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "pi_dialogue", self.n / self.pool if self.pool else 0.0)
        object.__setattr__(self, "pi_overlap", self.m / self.n if self.n else 0.0)

    def votes_per_dialogue(self, seed: int) -> np.ndarray:
        """The design drawn over the pool: votes per pool dialogue (0: not judged), seeded."""
        rng = np.random.default_rng([int(seed), 29])
        chosen = rng.choice(self.pool, size=self.n, replace=False)
        k = np.zeros(self.pool, dtype=int)
        k[chosen] = 1
        k[rng.choice(chosen, size=self.m, replace=False)] = self.k_overlap
        return k

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Proposal:
    question: str
    proposal: Design
    uniform_k3: Design | None
    fga_11x100: Design | None
    icc: float
    r_a: float
    r_b: float | None  # None for the question 'lambda' (one metric over a λ grid)
    r_ab: float | None
    notes: tuple[str, ...] = ()
    uniform_needed: int | None = None

    def saving_vs_uniform(self) -> float | None:
        """1 − the proposal's judgements / uniform k = 3's for the same width (None: uniform cannot reach it)."""
        return None if self.uniform_needed is None else 1 - self.proposal.judgements / self.uniform_needed

    def as_dict(self) -> dict[str, Any]:
        out = {
            "question": self.question,
            "icc": self.icc,
            "r_a": self.r_a,
            "r_b": self.r_b,
            "r_ab": self.r_ab,
            "proposal": self.proposal.as_dict(),
            "uniform_k3": None if self.uniform_k3 is None else self.uniform_k3.as_dict(),
            "fga_11x100": None if self.fga_11x100 is None else self.fga_11x100.as_dict(),
            "uniform_k3_judgements_for_same_width": self.uniform_needed,
            "saving_vs_uniform_k3": self.saving_vs_uniform(),
            "notes": list(self.notes),
        }
        return out


def pool_correlation(metric_scores: Mapping[str, Sequence[float]], a: str, b: str) -> tuple[float, int]:
    """r(A, B) over the pool's dialogues where both are defined, and the pool size."""
    if a not in metric_scores or b not in metric_scores:
        raise ValueError(f"metric scores need {a!r} and {b!r} (have: {', '.join(metric_scores)})")
    xa, xb = np.asarray(metric_scores[a], dtype=float), np.asarray(metric_scores[b], dtype=float)
    ok = np.isfinite(xa) & np.isfinite(xb)
    if ok.sum() < 3 or np.ptp(xa[ok]) == 0 or np.ptp(xb[ok]) == 0:
        raise ValueError(f"r({a}, {b}) is undefined on the pool")
    return float(np.corrcoef(xa[ok], xb[ok])[0, 1]), int(xa.size)


def _identified(icc: float, k_o: int, m: np.ndarray) -> np.ndarray:
    se = np.sqrt(2 * (1 - icc) ** 2 * (1 + (k_o - 1) * icc) ** 2 / (k_o * (k_o - 1) * np.maximum(m - 1, 1e-9)))
    return cast(np.ndarray, (m >= MIN_OVERLAP) & (icc / se >= MIN_ICC_Z))


@overload
def _width(
    question: str, r_a: float, r_b: float, r_ab: float, icc: float, n: int, m: int, k_o: int, confidence: float
) -> float: ...
@overload
def _width(
    question: str, r_a: float, r_b: float, r_ab: float, icc: float, n: np.ndarray, m: np.ndarray, k_o: int, confidence: float
) -> np.ndarray: ...
def _width(
    question: str, r_a: float, r_b: float, r_ab: float, icc: float, n: ArrayLike, m: ArrayLike, k_o: int, confidence: float
) -> float | np.ndarray:
    """:func:`predicted_width`: a float for a number of dialogues n and m, an array for arrays of them."""
    return predicted_width(question, r_a, r_b, r_ab, icc=icc, n=n, m=m, k_o=k_o, confidence=confidence)


def _candidates(
    question: str, pool: int, icc: float, k_options: Sequence[int]
) -> Iterator[tuple[int, np.ndarray, np.ndarray | None]]:
    """Every (n, m, k_o) on a grid: n all of 1..pool (agreement: n = m), m all up to 2000 then geometric."""
    dense = np.arange(MIN_OVERLAP, min(pool, 2000) + 1)
    m_grid = np.unique(np.concatenate([dense, np.geomspace(2000, max(pool, 2000), 200).astype(int)]))
    m_grid = m_grid[(m_grid >= MIN_OVERLAP) & (m_grid <= pool)]
    for k_o in k_options:
        ms = m_grid[_identified(icc, k_o, m_grid)]
        if question == "agreement":
            yield k_o, ms, ms
        else:
            yield k_o, ms, None


def design(
    question: str,
    metric_scores: Mapping[str, Sequence[float]],
    budget: int | None = None,
    target_width: float | None = None,
    *,
    icc: float,
    r_a: float = 0.4,
    r_b: float = 0.3,
    metric_a: str = "fga_0.5",
    metric_b: str = "jga",
    k_options: Sequence[int] = K_OVERLAP,
    confidence: float = 0.95,
    grid: ArrayLike | None = None,
) -> Proposal:
    """The design with the narrowest predicted interval for ``budget`` judgements (or the fewest
    judgements whose predicted width is at most ``target_width``), beside uniform k = 3 and the FGA
    study's 11 × 100.  ``r_a``, ``r_b``: prior corrected correlations of the two metrics with the
    expected rating; ``icc``: a pilot's or prior single-rating ICC(1,1); ``grid``: the question 'lambda''s
    analysis grid, on which the Analysis page estimates λ* (default ``AnalysisSettings().grid``, 0..10 in
    1,001 λ; the pool scored there and on ``adaptive.SCORE_GRID``: :data:`DESIGN_GRID`).  ValueError when no
    identified design fits."""
    if question not in QUESTIONS:
        raise ValueError(_unsupported(question))
    if (budget is None) == (target_width is None):
        raise ValueError("give a budget of judgements or a target width, one of them")
    if not 0 < icc < 1:
        raise ValueError(f"the single-rating ICC must lie in (0, 1), got {icc}")
    if question == "lambda":
        return _design_lambda(metric_scores, budget, target_width, icc, r_a, metric_a, k_options, confidence, grid)
    r_ab, pool = pool_correlation(metric_scores, metric_a, metric_b)
    from metrics.planning import check

    check(r_a, r_b, r_ab)
    best: tuple[tuple[Any, Any], int, int, int, float, int] | None = None  # (key, n, m, k_o, width, judgements)
    for k_o, ms, fixed_n in _candidates(question, pool, icc, k_options):
        if ms.size == 0:
            continue
        if fixed_n is not None:  # agreement: only the overlap dialogues are needed
            ns = fixed_n
            widths = _width(question, r_a, r_b, r_ab, icc, ns, ms, k_o, confidence)
            cost = ms * k_o
            mm = ms
        elif budget is not None:  # spend the budget: n = budget − m (k_o − 1), at most the pool
            ns = np.minimum(budget - ms * (k_o - 1), pool)
            ok = ns >= ms
            ns, mm = ns[ok], ms[ok]
            if ns.size == 0:
                continue
            widths = _width(question, r_a, r_b, r_ab, icc, ns, mm, k_o, confidence)
            cost = ns + mm * (k_o - 1)
        else:  # the fewest judgements: for each m, the smallest n reaching the target (bisection over n)
            ms = np.unique(ms[np.unique(np.geomspace(1, ms.size, 160).astype(int) - 1)])  # m smooth: 160 values
            lo = np.maximum(ms, 4).astype(float)
            hi = np.full(ms.size, float(pool))
            assert target_width is not None  # no budget: a target width (checked above)
            reach = _width(question, r_a, r_b, r_ab, icc, hi, ms, k_o, confidence) <= target_width
            if not reach.any():
                continue
            lo, hi, mm = lo[reach], hi[reach], ms[reach]
            first = _width(question, r_a, r_b, r_ab, icc, lo, mm, k_o, confidence) <= target_width
            hi = np.where(first, lo, hi)  # already at the smallest n
            while np.any(hi - lo > 1):
                mid = np.floor((lo + hi) / 2)
                ok = _width(question, r_a, r_b, r_ab, icc, mid, mm, k_o, confidence) <= target_width
                lo, hi = np.where(ok | (hi - lo <= 1), lo, mid), np.where(ok & (hi - lo > 1), mid, hi)
            ns = hi.astype(int)
            widths = _width(question, r_a, r_b, r_ab, icc, ns, mm, k_o, confidence)
            cost = ns + mm * (k_o - 1)
        keep = (cost <= budget) if budget is not None else (widths <= cast(float, target_width))  # one of the two is given
        if not keep.any():
            continue
        ns, mm, widths, cost = ns[keep], mm[keep], widths[keep], cost[keep]
        order = np.lexsort((cost, widths)) if budget is not None else np.lexsort((widths, cost))
        i = order[0]
        key = (widths[i], cost[i]) if budget is not None else (cost[i], widths[i])
        if best is None or key < best[0]:
            best = (key, int(ns[i]), int(mm[i]), k_o, float(widths[i]), int(cost[i]))
    if best is None:
        raise _no_design(budget, target_width, pool, icc)
    _, n, m, k_o, width, judgements = best
    proposal = Design("designer", n, m, k_o, judgements, width, pool)
    uniform = _uniform(question, r_a, r_b, r_ab, icc, pool, budget, target_width, confidence)
    fga = _fixed(question, r_a, r_b, r_ab, icc, pool, 100, 11, "FGA study 11 x 100", confidence)
    needed = _uniform_judgements(question, r_a, r_b, r_ab, icc, pool, width, confidence)
    notes = [f"r_a, r_b: corrected correlations with the expected rating (prior {r_a:g}, {r_b:g}); r_ab from the pool"]
    if question == "comparison":
        notes.append("the overlap subset: a simple random sample of the judged dialogues, probability m / n each")
    return Proposal(question, proposal, uniform, fga, icc, r_a, r_b, r_ab, tuple(notes), needed)


def _no_design(budget: int | None, target_width: float | None, pool: int, icc: float) -> ValueError:
    need = f"a budget of {budget} judgements" if budget is not None else f"a width of {target_width}"
    return ValueError(
        f"no identified design for {need} on a pool of {pool} dialogues at ICC {icc}: the overlap subset needs at "
        f"least {MIN_OVERLAP} dialogues with 2-3 votes and an ICC estimate with ICC/SE >= {MIN_ICC_Z:g} "
        f"(at k = 2, at least {_min_overlap(icc, 2)} dialogues)"
    )


def _min_overlap(icc: float, k_o: int) -> int:
    m = np.arange(MIN_OVERLAP, 100_000)
    ok = np.nonzero(_identified(icc, k_o, m))[0]
    return int(m[ok[0]]) if ok.size else -1


def _fixed(
    question: str, r_a: float, r_b: float, r_ab: float, icc: float, pool: int, n: int, k: int, label: str, confidence: float
) -> Design | None:
    n = min(n, pool)
    if n < max(MIN_OVERLAP, 4):
        return None
    width = _width(question, r_a, r_b, r_ab, icc, n, n, k, confidence)
    return Design(label, n, n, k, n * k, float(width), pool)


def _uniform(
    question: str,
    r_a: float,
    r_b: float,
    r_ab: float,
    icc: float,
    pool: int,
    budget: int | None,
    target_width: float | None,
    confidence: float,
) -> Design | None:
    if budget is not None:
        return _fixed(question, r_a, r_b, r_ab, icc, pool, budget // 3, 3, "uniform k = 3", confidence)
    assert target_width is not None  # design(): a budget or a target width
    needed = _uniform_judgements(question, r_a, r_b, r_ab, icc, pool, target_width, confidence)
    return None if needed is None else _fixed(question, r_a, r_b, r_ab, icc, pool, needed // 3, 3, "uniform k = 3", confidence)


def _uniform_judgements(
    question: str, r_a: float, r_b: float, r_ab: float, icc: float, pool: int, width: float, confidence: float
) -> int | None:
    """Judgements uniform k = 3 needs for ``width`` (None: not within the pool)."""
    ns = np.arange(MIN_OVERLAP, pool + 1)
    if ns.size == 0:
        return None
    w = _width(question, r_a, r_b, r_ab, icc, ns, ns, 3, confidence)
    hit = np.nonzero(w <= width * (1 + 1e-12))[0]
    return None if hit.size == 0 else int(3 * ns[hit[0]])


# ---------------------------------------------------------------- the question 'lambda' (λ*)

LAMBDA_STUDIES = (200, 500)  # simulated studies behind a predicted λ* width: at least, at most
LAMBDA_SEARCH_STUDIES = (100, 200)  # the same while searching the size that reaches a width
LAMBDA_PRECISION = 0.025  # more studies (in hundreds) until the predicted width's Monte-Carlo SE is at most this share of it
LAMBDA_RESAMPLES = 200  # bootstrap resamples in each simulated study (the page draws 1,000: see LambdaSimulator)
COARSE_STEP = 10  # r(λ) first at every 10th grid point, then at the grid points around the best of those


def analysis_grid(spec: Sequence[float] = DEFAULT_GRID) -> np.ndarray:
    """The grid λ* is estimated on, ``numpy.linspace(START, STOP, NUM)`` of a (START, STOP, NUM) as
    ``AnalysisSettings.grid`` holds it (default :data:`metrics.calibrate.DEFAULT_GRID`: 0..10, 1,001 λ).

    >>> g = analysis_grid(); (g.size, float(g[0]), float(g[-1]))
    (1001, 0.0, 10.0)
    """
    start, stop, num = spec
    return np.linspace(float(start), float(stop), int(num))


def design_lambdas(grid: ArrayLike | None = None) -> tuple[float, ...]:
    """The λ a pool is scored on for the question 'lambda': the analysis grid (``grid``, default
    :func:`analysis_grid`), on which the Analysis page estimates λ* and the designer predicts its interval,
    and ``metrics.adaptive.SCORE_GRID`` (0.05..2), whose FGA spread gives each dialogue its π; one λ per
    label ``f"{λ:g}"`` (the columns ``fga_<λ>``), in order.

    >>> lams = design_lambdas([0.0, 1.0, 2.5]); len(lams), lams[:3], lams[-2:]
    (42, (0.0, 0.05, 0.1), (2.0, 2.5))
    """
    chosen = analysis_grid() if grid is None else np.asarray(grid, dtype=float).ravel()
    out: dict[str, float] = {}
    for value in np.sort(np.concatenate([chosen, np.asarray(SCORE_GRID)])):
        out.setdefault(f"{value:g}", float(value))
    return tuple(out.values())


DESIGN_GRID = design_lambdas()  # the λ the app and the CLI score a pool on for the question 'lambda'


def nearest_on_grid(lam: float, grid: Sequence[float] = DESIGN_GRID) -> float:
    """The grid's λ nearest to ``lam`` (the prior best λ of the question 'lambda')."""
    return float(min(grid, key=lambda g: abs(g - lam)))


def fga_grid(metric_scores: Mapping[str, Sequence[float]]) -> tuple[np.ndarray, np.ndarray]:
    """The pool's FGA over a λ grid from the scores keyed ``fga_<λ>``: (the grid, sorted; dialogues × λ).
    ValueError for fewer than 3 λ values, a λ given twice, or a dialogue without a value (every pool
    dialogue must be scored to be drawn)."""
    found = []
    for key in metric_scores:
        if key.startswith("fga_"):
            try:
                found.append((float(key[4:]), key))
            except ValueError:
                continue
    found.sort()
    if len(found) < 3:
        raise ValueError(
            f"the question 'lambda' needs FGA at 3 or more λ values (columns fga_<λ>), have {len(found)}: "
            f"{', '.join(k for _, k in found) or 'none'}"
        )
    lams = [lam for lam, _ in found]
    twice = sorted({key for (lam, key) in found if lams.count(lam) > 1})
    if twice:
        raise ValueError(f"the same λ is given twice: {', '.join(twice)}")
    grid = np.array(lams)
    values = np.column_stack([np.asarray(metric_scores[k], dtype=float) for _, k in found])
    missing = ~np.isfinite(values)
    if missing.any():
        row, col = (int(v) for v in np.argwhere(missing)[0])
        raise ValueError(
            f"{int(missing.any(axis=1).sum())} pool dialogue(s) have no FGA value (first: dialogue {row + 1}, "
            f"{found[col][1]}): every dialogue of the pool must be scored"
        )
    return grid, values


def grid_columns(found: np.ndarray, values: np.ndarray, wanted: ArrayLike, what: str) -> np.ndarray:
    """The pool's FGA at each λ of ``wanted`` (dialogues × λ) from :func:`fga_grid`'s (sorted λ, values); a
    column matches a λ up to its label's rounding (``f"{λ:g}"``: six significant digits).  ValueError naming
    the λ the pool was not scored at."""
    lams = np.asarray(wanted, dtype=float).ravel()
    right = np.clip(np.searchsorted(found, lams), 0, found.size - 1)
    left = np.clip(right - 1, 0, found.size - 1)
    nearest = np.where(np.abs(found[left] - lams) <= np.abs(found[right] - lams), left, right)
    missing = lams[np.abs(found[nearest] - lams) > 1e-5 * np.maximum(np.abs(lams), 1e-3)]
    if missing.size:
        shown = ", ".join(f"{v:g}" for v in missing[:5]) + (", ..." if missing.size > 5 else "")
        raise ValueError(
            f"the question 'lambda' needs the pool's FGA on {what} ({lams.min():g}..{lams.max():g}, {lams.size:,} λ): no "
            f"column fga_<λ> for {missing.size:,} of them ({shown}); score the pool on metrics.design.design_lambdas() "
            "(python -m metrics design does, from prediction files)"
        )
    return values[:, nearest]


def _low_rank(values: np.ndarray, most: int = 160) -> tuple[np.ndarray, np.ndarray]:
    """``values`` (D × Λ) as ``left @ right`` (D × q, q × Λ) to rounding, so that a weighted sum over dialogues
    costs q, not Λ, per resample.  A pool's FGA over a λ grid has a small rank (a dialogue's FGA(λ) is a sum of
    1 − e^{−λx} over its few distinct type-2 distances x: 24 for the bench's pool on 1,001 λ; its square 35):
    Gram-Schmidt with column pivoting (each step the column furthest from the basis so far, orthogonalised
    twice) finds it with whole-array products only, no LAPACK call (whose threads crawl on a busy server), and
    the factors are kept only when they give ``values`` back to 1e-10 of its largest entry; otherwise
    ``values`` and the identity (the same numbers, no saving)."""
    dialogues, size = values.shape
    if min(dialogues, size) <= most:
        return values, np.eye(size)
    residual = values.copy()
    norms = np.einsum("ij,ij->j", residual, residual)
    largest = float(norms.max())
    basis: list[np.ndarray] = []
    while len(basis) < most:
        j = int(np.argmax(norms))
        if not norms[j] > 1e-24 * largest:
            break
        q = residual[:, j] / math.sqrt(norms[j])
        for b in basis:  # once more against the basis: the residual's rounding
            q -= b * (b @ q)
        q /= math.sqrt(float(q @ q))
        residual -= np.outer(q, q @ residual)
        norms = np.einsum("ij,ij->j", residual, residual)
        basis.append(q)
    if not basis or len(basis) >= most:
        return values, np.eye(size)
    left = np.column_stack(basis)
    right = left.T @ values
    if np.abs(values - left @ right).max() > 1e-10 * max(float(np.abs(values).max()), 1e-300):
        return values, np.eye(size)
    return left, right


@dataclass(frozen=True)
class LambdaWidth:
    """λ*'s interval in simulated studies of one design, as the Analysis page reports it: ``mean`` (the
    predicted width) with its Monte-Carlo standard error ``se``, the ``median`` width, ``wide``: the share of
    studies whose interval spans more than half the grid (λ* not identified there), ``studies`` with an
    interval, and ``median_lambda``, the median estimate."""

    mean: float
    se: float
    median: float
    wide: float
    studies: int
    median_lambda: float


class LambdaSimulator:
    """λ* and its interval as the Analysis page computes them for a designed study
    (``metrics.analysis.design_summary`` → ``metrics.adaptive.lambda_star(refine=True)``), in simulated
    studies of a pool: the grid argmax of the 1/π-weighted r(FGA_λ, dialogue mean rating) over ``grid``,
    refined between grid points (``metrics.calibrate.refined_argmax``), and the percentile interval of that
    refit over bootstrap resamples of the judged dialogues, weights kept with them; with equal weights this
    is ``metrics.calibrate.calibrate``'s λ* and percentile interval (refined by a parabola there, by Brent's
    method here: the same λ to 1e-3 on the 0..10 grid).

    A study draws n pool dialogues at random (or by Poisson sampling with π from the λ ``scores``, each
    weighted 1/π: the designer's λ design), gives a random m of those drawn k_o votes and the rest one, under
    the normal model: the expected rating T = ρ·z(FGA at λ0) + √(1 − ρ²)·noise (so λ* = λ0 for the pool),
    each vote T plus rater noise of variance (1 − ICC)/ICC.  Each study and resample is a row of dialogue
    weights; r(λ) comes from weighted sums of the pool's FGA and its square, low-rank over the grid
    (:func:`_low_rank`), first at every ``COARSE_STEP``-th grid point, then at every point within one coarse
    step of the best (the whole grid where that best sits at the window's edge), so that the argmax is the
    grid's own unless r(λ) has two separate maxima within rounding of each other."""

    def __init__(self, fga: ArrayLike, grid: ArrayLike, lam0: float, scores: ArrayLike | None = None):
        self.fga = np.asarray(fga, dtype=float)
        self.grid = np.asarray(grid, dtype=float)
        if self.fga.ndim != 2 or self.fga.shape[1] != self.grid.size or self.grid.size < 3:
            raise ValueError("FGA needs a column per λ of a grid of 3 or more λ")
        column = self.fga[:, int(np.argmin(np.abs(self.grid - lam0)))]
        self.z0 = (column - column.mean()) / column.std()
        centred = self.fga - self.fga.mean(axis=0)  # a correlation does not see the shift; the sums stay small
        self.left, self.right = _low_rank(centred)
        self.left2, self.right2 = _low_rank(centred**2)
        self.scores = None if scores is None else np.asarray(scores, dtype=float)
        self.coarse = np.unique(np.append(np.arange(0, self.grid.size, COARSE_STEP), self.grid.size - 1))

    def _score(self, sums: tuple[np.ndarray, ...], columns: np.ndarray | slice) -> np.ndarray:
        """r at the grid points ``columns`` for every curve, from each curve's sums, up to a positive factor per
        curve (1/√ of the ratings' weighted variance), which moves neither the argmax nor the parabola's
        vertex; NaN where r is undefined (FGA or the ratings constant in the curve's dialogues)."""
        total, sy, syy, p1, q1, p2 = sums
        right, right2 = self.right[:, columns], self.right2[:, columns]
        t = total[:, None]
        sx = p1 @ right
        score = q1 @ right
        score *= t
        score -= sx * sy[:, None]
        spread = p2 @ right2  # Σ w (x − c)², then the weighted variance of x times total²
        valid = spread > 0
        spread *= t
        limit = spread * 1e-12
        np.multiply(sx, sx, out=sx)
        spread -= sx
        valid &= spread > limit
        valid &= ((total * syy - sy * sy) > 1e-12 * np.maximum(total * syy, 1e-300))[:, None]  # the ratings vary
        np.sqrt(spread, out=spread, where=valid)
        np.divide(score, spread, out=score, where=valid)
        score[~valid] = np.nan
        return cast(np.ndarray, score)

    def _window(self, sums: tuple[np.ndarray, ...], start: np.ndarray, span: int) -> np.ndarray:
        """:meth:`_score` at the ``span`` grid points from each curve's ``start``, the curves that share a
        start together."""
        out = np.empty((start.size, span))
        order = np.argsort(start, kind="stable")
        firsts, at = np.unique(start[order], return_index=True)
        for first, lo, hi in zip(firsts.tolist(), at.tolist(), [*at[1:].tolist(), start.size], strict=True):
            rows = order[lo:hi]
            out[rows] = self._score(tuple(part[rows] for part in sums), slice(first, first + span))
        return out

    def _refined(self, sums: tuple[np.ndarray, ...]) -> np.ndarray:
        """Each curve's λ*, as ``refined_argmax`` of its r over the whole grid gives it."""
        size = self.grid.size
        coarse = self._score(sums, self.coarse)
        empty = ~np.isfinite(coarse).any(axis=1)
        centre = self.coarse[np.argmax(np.where(np.isfinite(coarse), coarse, -np.inf), axis=1)]
        span = min(2 * COARSE_STEP + 1, size)
        start = np.clip(centre - COARSE_STEP, 0, size - span)
        window = self._window(sums, start, span)
        at = np.argmax(np.where(np.isfinite(window), window, -np.inf), axis=1)
        best = start + at
        edge = ((at == 0) & (best > 0)) | ((at == span - 1) & (best < size - 1))  # the maximum may lie beyond
        inner = np.clip(best, 1, size - 2)
        c0, c1, c2 = (
            np.take_along_axis(window, (inner - start + d).clip(0, span - 1)[:, None], axis=1)[:, 0] for d in (-1, 0, 1)
        )
        x0, x1, x2 = self.grid[inner - 1], self.grid[inner], self.grid[inner + 1]
        with np.errstate(invalid="ignore", divide="ignore"):  # refined_argmax's parabola, on the same three points
            num = (x1 - x0) ** 2 * (c1 - c2) - (x1 - x2) ** 2 * (c1 - c0)
            den = (x1 - x0) * (c1 - c2) - (x1 - x2) * (c1 - c0)
            vertex = np.clip(x1 - 0.5 * num / den, x0, x2)
        at_end = (best == 0) | (best == size - 1) | ~np.isfinite(vertex) | (den <= 0)
        out = np.where(empty, np.nan, np.where(at_end, self.grid[best], vertex))
        rows = np.flatnonzero(edge & ~empty)
        if rows.size:
            picked = tuple(part[rows] for part in sums)
            out[rows] = refined_argmax(self._score(picked, slice(None)), self.grid)
        return out

    def intervals(
        self,
        rho: float,
        icc: float,
        n: int,
        m: int,
        k_o: int,
        *,
        weighted: bool = False,
        confidence: float = 0.95,
        studies: int = LAMBDA_STUDIES[0],
        resamples: int = LAMBDA_RESAMPLES,
        seed: int = 29,
        chunk: int | None = None,
    ) -> np.ndarray:
        """Studies × (λ̂, low, high): each simulated study's estimate and percentile interval (NaN: none, as
        the page gives none for fewer than 3 judged dialogues or no defined r).  ``chunk`` studies at a time
        (default: about 600,000 dialogue draws a chunk, which stay in cache),
        each a block of dialogue weights (the study's, then its resamples') over its judged dialogues.  Seeded
        by the design: the same design gives the same figures."""
        if weighted and self.scores is None:
            raise ValueError("a weighted design needs the dialogues' λ scores")
        pool = self.fga.shape[0]
        rng = np.random.default_rng([int(seed), int(n), int(m), int(k_o), int(weighted)])
        resampling = np.random.default_rng([int(seed), int(n), int(m), int(k_o), int(weighted), 1])  # the bootstraps' own
        pi = inclusion_probabilities(cast(np.ndarray, self.scores), expected=n) if weighted else np.full(pool, 1.0)
        sigma, spread = math.sqrt((1 - icc) / icc), math.sqrt(1 - rho**2)
        tail = (1 - confidence) / 2 * 100
        out = np.full((studies, 3), np.nan)
        if chunk is None:
            chunk = int(min(max(600_000 // (resamples * max(n, 1)), 4), 40))
        for first in range(0, studies, chunk):
            s = min(chunk, studies - first)
            if weighted:  # Poisson sampling with π
                taken = rng.random((s, pool)) < pi[None, :]
            else:  # n at random
                taken = np.zeros((s, pool), dtype=bool)
                np.put_along_axis(taken, rng.random((s, pool)).argsort(axis=1)[:, : min(n, pool)], True, axis=1)
            sizes = taken.sum(axis=1)
            width = max(int(sizes.max()), 1)
            rows = np.argsort(~taken, axis=1, kind="stable")[:, :width]  # each study's judged dialogues first
            judged = np.arange(width)[None, :] < sizes[:, None]
            keys = np.where(judged, rng.random((s, width)), np.inf)  # the overlap subset: a random m of them
            overlap = np.zeros((s, width), dtype=bool)
            if m > 0:
                np.put_along_axis(overlap, keys.argsort(axis=1)[:, : min(m, width)], True, axis=1)
            k = np.where(overlap & judged, k_o, 1.0)
            y = rho * self.z0[rows] + spread * rng.normal(size=(s, width)) + sigma / np.sqrt(k) * rng.normal(size=(s, width))
            w = np.where(judged, 1 / pi[rows], 0.0)
            wy = w * y
            # per judged dialogue, what each curve sums: its weight, weight × rating, × rating², and × the
            # low-rank FGA and FGA² (so a curve's sums are one product with its dialogue counts)
            parts = np.concatenate(
                [
                    w[..., None],
                    wy[..., None],
                    (wy * y)[..., None],
                    w[..., None] * self.left[rows],
                    wy[..., None] * self.left[rows],
                ]
                + [w[..., None] * self.left2[rows]],
                axis=2,
            )
            # the bootstrap: each resample draws its study's judged dialogues with replacement; a study's
            # positions past its own judged dialogues fall in a spare bin
            scaled = resampling.random((s, resamples, width), dtype=np.float32) * sizes[:, None, None].astype(np.float32)
            draws = np.minimum(scaled.astype(np.int64), width - 1)
            for index in np.flatnonzero(sizes < width):
                draws[index, :, sizes[index] :] = width
            draws += (np.arange(s * resamples) * (width + 1)).reshape(s, resamples, 1)
            counts = np.bincount(draws.ravel(), minlength=s * resamples * (width + 1)).reshape(s, resamples, width + 1)
            summed = np.concatenate([parts.sum(axis=1)[:, None, :], np.matmul(counts[..., :width].astype(float), parts)], axis=1)
            curves = s * (resamples + 1)
            summed = summed.reshape(curves, parts.shape[2])
            k1 = self.left.shape[1]
            head, p1, q1, p2 = summed[:, :3], summed[:, 3 : 3 + k1], summed[:, 3 + k1 : 3 + 2 * k1], summed[:, 3 + 2 * k1 :]
            sums = (head[:, 0], head[:, 1], head[:, 2], p1, q1, p2)
            stars = self._refined(sums).reshape(s, resamples + 1)
            boot = stars[:, 1:]
            block = out[first : first + s]
            block[:, 0] = np.where(sizes >= 3, stars[:, 0], np.nan)
            has = np.isfinite(stars[:, 0]) & np.isfinite(boot).any(axis=1) & (sizes >= 3)
            whole = has & np.isfinite(boot).all(axis=1)
            for chosen, quantile in ((whole, np.percentile), (has & ~whole, np.nanpercentile)):
                if chosen.any():
                    block[chosen, 1], block[chosen, 2] = quantile(boot[chosen], [tail, 100 - tail], axis=1)
        return out

    def width(
        self,
        rho: float,
        icc: float,
        n: int,
        m: int,
        k_o: int,
        *,
        studies: tuple[int, int] = LAMBDA_STUDIES,
        precision: float = LAMBDA_PRECISION,
        seed: int = 29,
        **options: Any,
    ) -> LambdaWidth:
        """The width of λ*'s interval over simulated studies (:meth:`intervals`, same options): ``studies[0]``,
        then a hundred more at a time (each hundred seeded on its own) until the mean width's Monte-Carlo SE is at
        most ``precision`` of it or ``studies[1]`` are done."""
        least, most = studies
        found = self.intervals(rho, icc, n, m, k_o, studies=least, seed=seed, **options)
        batch = 0
        while True:
            widths = (found[:, 2] - found[:, 1])[np.isfinite(found[:, 1])]
            if widths.size >= 2 and widths.std(ddof=1) / math.sqrt(widths.size) <= precision * widths.mean():
                break
            if found.shape[0] >= most:
                break
            batch += 1
            more = self.intervals(
                rho, icc, n, m, k_o, studies=min(100, most - found.shape[0]), seed=seed + 7919 * batch, **options
            )
            found = np.vstack([found, more])
        if widths.size < 2:
            raise ValueError(f"no λ* interval in the simulated studies of {n} dialogues")
        half = (self.grid[-1] - self.grid[0]) / 2
        return LambdaWidth(
            mean=float(widths.mean()),
            se=float(widths.std(ddof=1) / math.sqrt(widths.size)),
            median=float(np.median(widths)),
            wide=float(np.mean(widths > half)),
            studies=int(widths.size),
            median_lambda=float(np.nanmedian(found[:, 0])),
        )


def lambda_width(
    fga: ArrayLike,
    grid: ArrayLike,
    lam0: float,
    rho: float,
    icc: float,
    n: int,
    m: int,
    k_o: int,
    *,
    scores: ArrayLike | None = None,
    confidence: float = 0.95,
    studies: tuple[int, int] = LAMBDA_STUDIES,
) -> LambdaWidth:
    """Predicted width of λ*'s interval (:class:`LambdaSimulator`): the mean width of the interval the
    Analysis page reports, over simulated studies of n dialogues, m of them with k_o votes; ``scores`` (the
    dialogues' λ scores) given: drawn with π from them and weighted 1/π."""
    simulator = LambdaSimulator(fga, grid, lam0, scores)
    return simulator.width(rho, icc, n, m, k_o, weighted=scores is not None, confidence=confidence, studies=studies)


def _reach(
    width_of: Callable[[int], float], target: float, *, start: int, low: int, high: int, evaluations: int = 7, ratio: float = 1.08
) -> tuple[int | None, float | None]:
    """The n in [low, high] whose simulated width is ``target``: (the smallest n simulated whose width is at most
    ``target``, None when even ``high`` is wider; the n interpolated on log n against log width between the two
    simulated sizes that bracket ``target``, None without a bracket).  From ``start``, steps of × 1.6 until the
    target is bracketed, then the log-log secant inside the bracket until its ends are within ``ratio`` of each
    other; ``evaluations`` simulations at most.  The width need not shrink as 1/√n (λ*'s does not: the share of
    intervals that run to the grid's end falls faster), only fall with n."""
    seen: dict[int, float] = {}

    def at(n: int) -> float:
        if n not in seen:
            seen[n] = width_of(n)
        return seen[n]

    n = int(min(max(start, low), high))
    narrow: int | None = None  # the smallest n known to reach the target
    wide: int | None = None  # the largest n below it known not to
    while len(seen) < evaluations:
        if at(n) <= target:
            narrow = n if narrow is None else min(narrow, n)
        else:
            wide = n if wide is None else max(wide, n)
        if narrow is not None and wide is not None and wide < narrow:
            if narrow / wide <= ratio or narrow - wide <= 1:
                break
            lo, hi = math.log(wide), math.log(narrow)
            w_lo, w_hi = math.log(max(seen[wide], 1e-12)), math.log(max(seen[narrow], 1e-12))
            share = (w_lo - math.log(target)) / (w_lo - w_hi) if w_lo > w_hi else 0.5
            n = int(round(math.exp(lo + min(max(share, 0.2), 0.8) * (hi - lo))))
            n = min(max(n, wide + 1), narrow - 1)
        elif narrow is None:
            if n >= high:
                break
            n = min(high, max(n + 1, math.ceil(n * 1.6)))
        else:
            if n <= low:
                break
            n = max(low, min(n - 1, math.floor(n / 1.6)))
    if narrow is None or wide is None or wide > narrow:
        return narrow, None
    lo, hi, w_lo, w_hi = math.log(wide), math.log(narrow), math.log(max(seen[wide], 1e-12)), math.log(max(seen[narrow], 1e-12))
    share = (w_lo - math.log(target)) / (w_lo - w_hi) if w_lo > w_hi else 1.0
    return narrow, math.exp(lo + min(max(share, 0.0), 1.0) * (hi - lo))


def _n_reliability(icc: float, n: np.ndarray, m: np.ndarray, k_o: int) -> np.ndarray:
    """n·R: λ*'s precision grows with it (width ∝ 1/√(nR)): the rater noise of a mean, 1/R, over n dialogues."""
    h = ((n - m) + m / k_o) / n
    return cast(np.ndarray, n * icc / (icc + (1 - icc) * h))


def _design_lambda(
    metric_scores: Mapping[str, Sequence[float]],
    budget: int | None,
    target_width: float | None,
    icc: float,
    r_a: float,
    metric_a: str,
    k_options: Sequence[int],
    confidence: float,
    grid: ArrayLike | None,
) -> Proposal:
    """λ*: the argmax of r(FGA_λ, rating) is not moved by the common factor √R, so no correction enters and
    the most dialogues win (width ∝ 1/√(nR), nR = n·ICC/(ICC + (1 − ICC)·mean(1/k)), largest at k = 1);
    an overlap subset, the smallest identified one, is kept so that agreement and the human ceiling stay
    estimable.  The dialogues are drawn with π from how much their FGA moves with λ
    (``metrics.adaptive.lambda_scores`` over ``SCORE_GRID``, as the store draws them; Poisson sampling, n
    expected) and weighted 1/π, as the adaptive design of issue 17 does.

    Every width is the one the Analysis page will report: the mean width of its λ* interval (on ``grid``, the
    study's analysis grid, default ``AnalysisSettings().grid``) over simulated studies
    (:class:`LambdaSimulator`), at the chosen design and the references; the judgements uniform k = 3 needs
    for the proposal's width are found by simulating uniform k = 3 at other sizes (that mean width does not
    shrink as 1/√n: a share of the studies' intervals run to the grid's end, and that share falls faster)."""
    found, values = fga_grid(metric_scores)
    lams = analysis_grid() if grid is None else np.asarray(grid, dtype=float).ravel()
    fga = grid_columns(found, values, lams, "the analysis grid")
    scores = lambda_scores(grid_columns(found, values, SCORE_GRID, "the λ scores' grid"))
    try:
        lam0 = float(metric_a[4:]) if metric_a.startswith("fga_") else 0.5
    except ValueError:
        lam0 = 0.5
    if not lams[0] <= lam0 <= lams[-1]:
        raise ValueError(f"the prior λ {lam0:g} lies outside the analysis grid {lams[0]:g}..{lams[-1]:g}")
    if not 0 < r_a < 1:
        raise ValueError(f"the prior r(FGA, expected rating) must lie in (0, 1), got {r_a}")
    pool = fga.shape[0]
    j0 = int(np.argmin(np.abs(lams - lam0)))
    if np.ptp(fga[:, j0]) == 0:
        raise ValueError(f"FGA at λ {lams[j0]:g} is the same on every pool dialogue: nothing to correlate with")
    best: tuple[Any, int, int, int] | None = None  # (key, n, m, k_o)
    for k_o in k_options:
        ms = np.arange(MIN_OVERLAP, pool + 1)
        ms = ms[_identified(icc, k_o, ms)]
        if ms.size == 0:
            continue
        if budget is not None:
            ns = np.minimum(budget - ms * (k_o - 1), pool)
        else:
            ns = np.full(ms.size, pool)
        ok = ns >= ms
        if not ok.any():
            continue
        ns, ms = ns[ok], ms[ok]
        score = _n_reliability(icc, ns, ms, k_o)
        cost = ns + ms * (k_o - 1)
        if budget is not None:
            i = int(np.lexsort((cost, -score))[0])
            key = (-score[i], cost[i])
        else:
            i = 0
            key = None
        candidate = (key, int(ns[i]), int(ms[i]), k_o)
        if budget is None:
            best = candidate if best is None else best  # target: chosen below from nR
        elif best is None or cast("tuple[Any, Any]", key) < best[0]:  # with a budget every key is a tuple
            best = candidate
    if best is None:
        raise _no_design(budget, target_width, pool, icc)

    simulator = LambdaSimulator(fga, lams, lam0, scores)
    simulated: dict[tuple[int, int, int, bool, bool], LambdaWidth] = {}

    def predicted(n: int, m: int, k_o: int, weighted: bool = False, search: bool = False) -> LambdaWidth:
        """The width at a design: while searching a size, fewer studies (``LAMBDA_SEARCH_STUDIES``)."""
        key = (n, m, k_o, weighted, search)
        if key not in simulated:
            studies = LAMBDA_SEARCH_STUDIES if search else LAMBDA_STUDIES
            simulated[key] = simulator.width(
                r_a, icc, n, m, k_o, weighted=weighted, confidence=confidence, studies=studies, precision=LAMBDA_PRECISION
            )
        return simulated[key]

    def width(n: int, m: int, k_o: int, weighted: bool = False) -> float:
        return predicted(n, m, k_o, weighted, search=True).mean

    def design_of(label: str, n: int, m: int, k_o: int, weighted: bool = False) -> Design:
        found = predicted(n, m, k_o, weighted)
        return Design(label, n, m, k_o, n + m * (k_o - 1), found.mean, pool, "lambda" if weighted else None, found.se)

    if budget is None:  # the fewest dialogues whose simulated width reaches the target (width ∝ 1/√n, then checked)
        assert target_width is not None  # design(): a budget or a target width
        k_o = min(k_options, key=lambda k: _min_overlap(icc, k) * (k - 1) if _min_overlap(icc, k) > 0 else math.inf)
        m = _min_overlap(icc, k_o)
        if m < 0 or m > pool:
            raise ValueError(f"no identified overlap subset within the pool of {pool} dialogues at ICC {icc}")
        n, _ = _reach(lambda size: width(size, m, k_o, True), target_width, start=max(m, min(pool, 300)), low=m, high=pool)
        if n is None:
            raise ValueError(
                f"no design on a pool of {pool} dialogues reaches a λ* width of {target_width} at ICC {icc} "
                f"(all {pool} judged: about {width(pool, m, k_o, True):.3f})"
            )
        n3, _ = _reach(lambda size: width(size, size, 3), target_width, start=min(pool, 300), low=MIN_OVERLAP, high=pool)
    else:
        _, n, m, k_o = best
        n3 = min(budget // 3, pool)
    proposal = design_of("designer", n, m, k_o, weighted=True)
    assert proposal.width is not None  # a simulated width
    reached = proposal.width
    for _ in range(4):  # a target: the searched size checked with the proposal's own (larger) simulation
        if target_width is None or reached <= target_width or n >= pool:
            break
        n = min(pool, max(n + 1, math.ceil(n * (reached / target_width) ** 2)))
        proposal = design_of("designer", n, m, k_o, weighted=True)
        reached = predicted(n, m, k_o, True).mean
    span = float(lams[-1] - lams[0])
    mine = predicted(n, m, k_o, True)  # the proposal's
    pinned = mine.median < IDENTIFIED_SHARE * span  # else most studies' intervals span most of the grid: no width to compare
    uniform = None
    uniform_needed = None
    if n3 is not None and n3 >= MIN_OVERLAP:
        uniform = design_of("uniform k = 3", n3, n3, 3)
        assert uniform.width is not None  # a simulated width
    if uniform is not None and uniform.width is not None and pinned:
        guess = max(MIN_OVERLAP, math.ceil(uniform.n * (uniform.width / reached) ** 2)) if reached > 0 else pool
        _, same = _reach(lambda size: width(size, size, 3), reached, start=min(guess, pool), low=MIN_OVERLAP, high=pool)
        uniform_needed = 3 * math.ceil(same) if same is not None else None
    n11 = min(100, pool)
    fga11 = design_of("FGA study 11 x 100", n11, n11, 11) if n11 >= MIN_OVERLAP else None
    unpinned = []
    if not pinned:
        unpinned.append(
            f"λ* is not pinned down by this design: the Analysis page's 95% interval would span more than half the grid "
            f"(λ {lams[0]:g}..{lams[-1]:g}) in {mine.wide:.0%} of simulated studies (median width {mine.median:.2f}); it "
            "needs more dialogues or a stronger prior r"
        )
    elif mine.wide >= 0.01:
        unpinned.append(
            f"in {mine.wide:.0%} of simulated studies the Analysis page's 95% interval spans more than half the grid "
            f"(λ {lams[0]:g}..{lams[-1]:g}): the predicted (mean) width {mine.mean:.2f} is above the median {mine.median:.2f}"
        )
    notes = (
        *unpinned,
        f"r_a: prior corrected r(FGA at λ {lam0:g}, expected rating) = {r_a:g}; λ* is not moved by the correction",
        "the dialogues drawn with π from how much their FGA moves with λ (Poisson sampling: n and the judgements "
        "are expected numbers, the draw records the realised ones), each weighted 1/π: λ* is for the whole pool",
        f"widths predicted for the interval the Analysis page reports: λ* the 1/π-weighted argmax of r(FGA_λ, mean "
        f"rating) on its grid λ {lams[0]:g}..{lams[-1]:g} ({lams.size:,} λ), refined between grid points, with a "
        f"percentile bootstrap over the judged dialogues; the mean width over {mine.studies:,} simulated studies "
        f"(normal model, {LAMBDA_RESAMPLES} resamples each; Monte-Carlo SE {mine.se:.3f})",
        "uniform k = 3's judgements for the same width: uniform k = 3 simulated at other sizes",
        "the overlap subset (the smallest whose ICC is identified) keeps agreement and the human ceiling estimable, "
        "for the dialogues drawn (they lean to those whose FGA moves with λ), not for the pool",
    )
    return Proposal("lambda", proposal, uniform, fga11, icc, r_a, None, None, notes, uniform_needed)
