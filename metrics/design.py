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
  and weighted 1/π; the width is simulated (:func:`lambda_width`), there is no closed form.

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

from metrics.adaptive import inclusion_probabilities, lambda_scores
from metrics.calibrate import refined_argmax
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
) -> Proposal:
    """The design with the narrowest predicted interval for ``budget`` judgements (or the fewest
    judgements whose predicted width is at most ``target_width``), beside uniform k = 3 and the FGA
    study's 11 × 100.  ``r_a``, ``r_b``: prior corrected correlations of the two metrics with the
    expected rating; ``icc``: a pilot's or prior single-rating ICC(1,1).  ValueError when no identified
    design fits."""
    if question not in QUESTIONS:
        raise ValueError(_unsupported(question))
    if (budget is None) == (target_width is None):
        raise ValueError("give a budget of judgements or a target width, one of them")
    if not 0 < icc < 1:
        raise ValueError(f"the single-rating ICC must lie in (0, 1), got {icc}")
    if question == "lambda":
        return _design_lambda(metric_scores, budget, target_width, icc, r_a, metric_a, k_options, confidence)
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

LAMBDA_REPLICATES = 2000  # simulated studies behind a predicted λ* width
DESIGN_GRID = tuple(round(float(x), 2) for x in np.linspace(0.05, 2.0, 40))  # the λ grid the app and CLI score a pool on


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


def simulated_lambda_stars(
    fga: ArrayLike,
    grid: ArrayLike,
    lam0: float,
    rho: float,
    icc: float,
    n: int,
    m: int,
    k_o: int,
    *,
    weighted: bool = False,
    replicates: int = LAMBDA_REPLICATES,
    seed: int = 29,
    chunk: int = 250,
) -> np.ndarray:
    """λ̂ (:func:`refined_argmax` of r(FGA_λ, mean rating)) in simulated studies of n pool dialogues drawn
    at random, m of them with k_o votes, the rest one, under the normal model: the expected rating
    T = ρ·z(FGA at λ0) + √(1 − ρ²)·noise (so λ* = λ0), each vote T plus rater noise of variance
    (1 − ICC)/ICC.  ``weighted``: the dialogues by Poisson sampling with π from the λ scores (n expected),
    each weighted 1/π in a weighted Pearson r (Hájek).  A study is a row of weights over the pool (0: not
    drawn), so ``chunk`` studies are a few matrix products.  Seeded by the design: the same design gives
    the same figures."""
    fga = np.asarray(fga, dtype=float)
    pool = fga.shape[0]
    j0 = int(np.argmin(np.abs(np.asarray(grid) - lam0)))
    z0 = (fga[:, j0] - fga[:, j0].mean()) / fga[:, j0].std()
    x = fga - fga.mean(axis=0)  # centring once does not change a correlation
    rng = np.random.default_rng([int(seed), int(n), int(m), int(k_o), int(weighted)])
    pi = inclusion_probabilities(lambda_scores(fga), expected=n) if weighted else None
    sigma = math.sqrt((1 - icc) / icc)
    stars = []
    for start in range(0, replicates, chunk):
        b = min(chunk, replicates - start)
        if weighted:
            assert pi is not None  # weighted
            taken = rng.random((b, pool)) < pi
            w = np.where(taken, 1 / pi, 0.0)
        else:
            order = rng.random((b, pool)).argsort(axis=1)
            taken = np.zeros((b, pool), dtype=bool)
            np.put_along_axis(taken, order[:, :n], True, axis=1)
            w = taken.astype(float)
        keys = np.where(taken, rng.random((b, pool)), np.inf)  # the overlap subset: a random m of those drawn
        overlap = np.zeros((b, pool), dtype=bool)
        if m > 0:
            np.put_along_axis(overlap, np.argsort(keys, axis=1)[:, :m], True, axis=1)
            overlap &= taken
        k = np.where(overlap, k_o, 1.0)
        y = rho * z0 + math.sqrt(1 - rho**2) * rng.normal(size=(b, pool)) + sigma / np.sqrt(k) * rng.normal(size=(b, pool))
        total = w.sum(axis=1, keepdims=True)
        mean_x = (w @ x) / total
        mean_y = (w * y).sum(axis=1, keepdims=True) / total
        cov = ((w * y) @ x) / total - mean_y * mean_x
        var_x = (w @ x**2) / total - mean_x**2
        var_y = (w * y**2).sum(axis=1, keepdims=True) / total - mean_y**2
        with np.errstate(invalid="ignore", divide="ignore"):
            curves = cov / np.sqrt(var_x * var_y)
        stars.append(refined_argmax(curves, grid))
    return np.concatenate(stars)


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
    weighted: bool = False,
    confidence: float = 0.95,
    replicates: int = LAMBDA_REPLICATES,
) -> float:
    """Predicted width of λ*'s interval: the central ``confidence`` range of :func:`simulated_lambda_stars`."""
    stars = simulated_lambda_stars(fga, grid, lam0, rho, icc, n, m, k_o, weighted=weighted, replicates=replicates)
    low, high = np.quantile(stars, [(1 - confidence) / 2, (1 + confidence) / 2])
    return float(high - low)


def _reach(width_of: Callable[[int], float], target: float, *, start: int, low: int, high: int, rounds: int = 8) -> int | None:
    """The smallest n in [low, high] whose (simulated) width is at most ``target``, found by the 1/√n law
    from ``start`` and checked by simulation at each step; None when even ``high`` is wider."""
    n, best = int(start), None
    for _ in range(rounds):
        w = width_of(n)
        if w <= target:
            best = n if best is None else min(best, n)
            guess = max(low, math.ceil(n * (w / target) ** 2))
            if guess >= n or best - guess < max(2, 0.02 * best):
                break
            n = guess
        else:
            if n >= high:
                break
            n = min(high, max(n + 1, math.ceil(n * (w / target) ** 2 * 1.02)))
    return best


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
) -> Proposal:
    """λ*: the argmax of r(FGA_λ, rating) is not moved by the common factor √R, so no correction enters and
    the most dialogues win (width ∝ 1/√(nR), nR = n·ICC/(ICC + (1 − ICC)·mean(1/k)), largest at k = 1);
    an overlap subset, the smallest identified one, is kept so that agreement and the human ceiling stay
    estimable.  The dialogues are drawn with π from how much their FGA moves with λ
    (``metrics.adaptive.lambda_scores``; Poisson sampling, n expected) and weighted 1/π, as the adaptive
    design of issue 17 does.  Widths are simulated (:func:`lambda_width`) at the chosen design and the
    references; the judgements uniform k = 3 needs for the proposal's width follow from its simulated
    width by width ∝ 1/√n."""
    grid, fga = fga_grid(metric_scores)
    try:
        lam0 = float(metric_a[4:]) if metric_a.startswith("fga_") else 0.5
    except ValueError:
        lam0 = 0.5
    if not grid[0] <= lam0 <= grid[-1]:
        raise ValueError(f"the prior λ {lam0:g} lies outside the pool's grid {grid[0]:g}..{grid[-1]:g}")
    if not 0 < r_a < 1:
        raise ValueError(f"the prior r(FGA, expected rating) must lie in (0, 1), got {r_a}")
    pool = fga.shape[0]
    j0 = int(np.argmin(np.abs(grid - lam0)))
    if np.ptp(fga[:, j0]) == 0:
        raise ValueError(f"FGA at λ {grid[j0]:g} is the same on every pool dialogue: nothing to correlate with")
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

    def width(n: int, m: int, k_o: int, weighted: bool = False) -> float:
        return lambda_width(fga, grid, lam0, r_a, icc, n, m, k_o, weighted=weighted, confidence=confidence)

    if budget is None:  # the fewest dialogues whose simulated width reaches the target (width ∝ 1/√n, then checked)
        assert target_width is not None  # design(): a budget or a target width
        k_o = min(k_options, key=lambda k: _min_overlap(icc, k) * (k - 1) if _min_overlap(icc, k) > 0 else math.inf)
        m = _min_overlap(icc, k_o)
        if m < 0 or m > pool:
            raise ValueError(f"no identified overlap subset within the pool of {pool} dialogues at ICC {icc}")
        n = _reach(lambda size: width(size, m, k_o, True), target_width, start=max(m, min(pool, 300)), low=m, high=pool)
        if n is None:
            raise ValueError(
                f"no design on a pool of {pool} dialogues reaches a λ* width of {target_width} at ICC {icc} "
                f"(all {pool} judged: about {width(pool, m, k_o, True):.3f})"
            )
        n3 = _reach(lambda size: width(size, size, 3), target_width, start=min(pool, 300), low=MIN_OVERLAP, high=pool)
    else:
        _, n, m, k_o = best
        n3 = min(budget // 3, pool)
    proposal = Design("designer", n, m, k_o, n + m * (k_o - 1), width(n, m, k_o, True), pool, "lambda")
    assert proposal.width is not None  # width() is a float
    uniform = None
    uniform_needed = None
    if n3 is not None and n3 >= MIN_OVERLAP:
        uniform = Design("uniform k = 3", n3, n3, 3, 3 * n3, width(n3, n3, 3), pool)
        assert uniform.width is not None  # width() is a float
        same = math.ceil(n3 * (uniform.width / proposal.width) ** 2) if proposal.width > 0 else None
        uniform_needed = 3 * same if same is not None and same <= pool else None
    n11 = min(100, pool)
    fga11 = Design("FGA study 11 x 100", n11, n11, 11, 11 * n11, width(n11, n11, 11), pool) if n11 >= MIN_OVERLAP else None
    span = float(grid[-1] - grid[0])
    unpinned = []
    if proposal.width >= 0.9 * span:  # the estimates spread over the grid: no width to compare
        uniform_needed = None
        unpinned.append(
            f"λ* is not pinned down by this design: its predicted 95% interval spans {proposal.width:.2f} of the grid's "
            f"{span:.2f} (λ {grid[0]:g}..{grid[-1]:g}); it needs more dialogues or a stronger prior r"
        )
    notes = (
        *unpinned,
        f"r_a: prior corrected r(FGA at λ {lam0:g}, expected rating) = {r_a:g}; λ* is not moved by the correction",
        "the dialogues drawn with π from how much their FGA moves with λ (Poisson sampling: n and the judgements "
        "are expected numbers, the draw records the realised ones), each weighted 1/π: λ* is for the whole pool",
        f"λ* widths simulated (normal model, {LAMBDA_REPLICATES:,} studies, λ* refined between grid points); uniform's "
        "judgements for the same width by width ∝ 1/√n",
        "the overlap subset (the smallest whose ICC is identified) keeps agreement and the human ceiling estimable, "
        "for the dialogues drawn (they lean to those whose FGA moves with λ), not for the pool",
    )
    return Proposal("lambda", proposal, uniform, fga11, icc, r_a, None, None, notes, uniform_needed)
