"""λ calibration: which λ makes per-dialogue FGA correlate best with human ratings.

FGA(λ) of dialogue d is (M1_d + Σ_u c_du (1 − e^{−λ x_u})) / N_d over the distinct type-2
distances x_u, so a whole λ grid is one matrix product (``fga_from_counts``), and a
bootstrap resample of dialogues is a row of weights: r(λ) for B resamples × Λ values is
three more matrix products (:func:`metrics.correlation.weighted_pearson`).

Steps: r(λ) on the grid (which should include 0, where FGA is JGA, and large λ); bounded
optimisation (Brent, ``scipy.optimize.minimize_scalar``) between the best grid point's
neighbours; the same refit on every bootstrap resample for CIs of λ* and r*; k-fold
cross-validation (fit λ* on k−1 folds, score the held-out fold with it; the pooled
held-out FGA values are correlated with the ratings once: ``cv_r``); ``at_bound``, the
share of bootstrap refits whose best grid point is the grid's first or last value.
``r_turn`` is r at λ = ∞ (the turn-match rate M2/N).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from metrics.correlation import Ratings, percentile_ci, resample_sums, weighted_pearson
from metrics.scores import distance_counts, fga_from_counts, lambda_from_forgetting, per_dialogue_sum
from metrics.turnstats import TurnStatistics


@dataclass
class FgaTerms:
    """What per-dialogue FGA needs, for any λ: M1, N, distinct distances, their counts."""

    exact: np.ndarray  # D
    n_turns: np.ndarray  # D
    distances: np.ndarray  # U
    counts: np.ndarray  # D × U

    @classmethod
    def from_statistics(cls, stats: TurnStatistics, dialogue_ids: list[str]) -> FgaTerms:
        """Terms for the listed dialogues, in that order."""
        distances, counts = distance_counts(stats, per_dialogue=True)
        exact = per_dialogue_sum(stats, stats.exact)
        n_turns = per_dialogue_sum(stats, np.ones(stats.n_turns))
        position = {d: i for i, d in enumerate(stats.dialogue_ids)}
        rows = np.array([position[d] for d in dialogue_ids], dtype=int)
        return cls(exact[rows], n_turns[rows], distances.astype(float), counts[rows])

    def fga(self, lambdas: ArrayLike) -> np.ndarray:
        """D × Λ."""
        return fga_from_counts(self.exact, self.n_turns, self.distances, self.counts, np.atleast_1d(lambdas))

    def turn_match_rate(self) -> np.ndarray:
        return self.fga([np.inf])[:, 0]

    def subset(self, rows: np.ndarray) -> FgaTerms:
        return FgaTerms(self.exact[rows], self.n_turns[rows], self.distances, self.counts[rows])


# The λ grid λ* is estimated on, START, STOP, NUM (numpy.linspace): the Analysis page's, the CLI's and the
# designer's (``metrics.analysis.AnalysisSettings.grid``; ``metrics.design`` predicts λ*'s interval on it)
DEFAULT_GRID: tuple[float, float, int] = (0.0, 10.0, 1001)


def parse_grid(text: str) -> np.ndarray:
    """``START:STOP:NUM`` → NUM values from START to STOP inclusive (numpy.linspace).

    >>> parse_grid("0:1:5").tolist()
    [0.0, 0.25, 0.5, 0.75, 1.0]
    """
    try:
        start, stop, num = text.split(":")
        grid = np.linspace(float(start), float(stop), int(num))
    except ValueError:
        raise ValueError(f"cannot read the grid {text!r}: give START:STOP:NUM, e.g. 0:10:1001") from None
    if grid.size < 2 or not np.all(np.isfinite(grid)) or grid[0] < 0 or np.any(np.diff(grid) <= 0):
        raise ValueError(f"the grid {text!r} needs NUM >= 2 increasing values >= 0")
    return grid


class _Fit:
    """r(λ) for one weighting of the dialogues; finds λ* on a grid, then refines it."""

    def __init__(self, terms: FgaTerms, n: np.ndarray, sy: np.ndarray, syy: np.ndarray, grid: np.ndarray):
        self.terms, self.n, self.sy, self.syy, self.grid = terms, n, sy, syy, grid

    def r(self, lam: float, weights: np.ndarray | None = None) -> float:
        x = self.terms.fga([lam])[:, 0]
        value = weighted_pearson(x, self.n, self.sy, self.syy, None if weights is None else weights[None, :])
        return float(np.ravel(value)[0])

    def refine(self, curve: np.ndarray, weights: np.ndarray | None = None) -> tuple[float, float, bool]:
        """(λ*, r*, best grid point is a bound) from a grid curve, refined by Brent's method."""
        from scipy.optimize import minimize_scalar

        if not np.isfinite(curve).any():
            return float("nan"), float("nan"), False
        best = int(np.nanargmax(curve))
        at_bound = best in (0, self.grid.size - 1)
        lam, r_best = float(self.grid[best]), float(curve[best])
        low, high = self.grid[max(best - 1, 0)], self.grid[min(best + 1, self.grid.size - 1)]
        found = minimize_scalar(
            lambda v: -np.nan_to_num(self.r(v, weights), nan=-2.0),
            bounds=(low, high),
            method="bounded",
            options={"xatol": 1e-4 * max(high - low, 1e-12)},
        )
        if found.success and -found.fun > r_best + 1e-12:
            lam, r_best = float(found.x), float(-found.fun)
        return lam, r_best, at_bound


_GOLDEN_MEAN = 0.5 * (3.0 - math.sqrt(5.0))
_SQRT_EPS = math.sqrt(2.2e-16)


def bounded_minimize(
    func: Callable[[np.ndarray, np.ndarray], np.ndarray], low: np.ndarray, high: np.ndarray, xatol: np.ndarray, maxfun: int = 500
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``scipy.optimize.minimize_scalar(method="bounded")`` (Brent's fminbound) on many problems in lockstep:
    the same steps, golden-section or parabolic, taken by each problem on its own, with one call of
    ``func(x, rows)`` per step for every problem still running (``rows``: their indices, ``x``: their
    points).  Returns (x, f(x), success) per problem, as scipy's ``x``, ``fun`` and ``success``.

    >>> x, f, ok = bounded_minimize(lambda x, rows: (x - np.array([0.3, 0.7])[rows]) ** 2,
    ...                             np.zeros(2), np.ones(2), np.full(2, 1e-8))
    >>> np.round(x, 6).tolist(), ok.tolist()
    ([0.3, 0.7], [True, True])
    """
    a, b = np.asarray(low, dtype=float).copy(), np.asarray(high, dtype=float).copy()
    xatol = np.broadcast_to(np.asarray(xatol, dtype=float), a.shape)
    everyone = np.arange(a.size)
    fulc = a + _GOLDEN_MEAN * (b - a)
    nfc, xf = fulc.copy(), fulc.copy()
    rat, e = np.zeros_like(a), np.zeros_like(a)
    fx = np.asarray(func(xf, everyone), dtype=float)
    ffulc, fnfc = fx.copy(), fx.copy()
    num = np.ones(a.size, dtype=int)
    xm = 0.5 * (a + b)
    tol1 = _SQRT_EPS * np.abs(xf) + xatol / 3.0
    tol2 = 2.0 * tol1
    running = np.abs(xf - xm) > (tol2 - 0.5 * (b - a))
    with np.errstate(invalid="ignore", divide="ignore"):
        while running.any():
            rows = np.flatnonzero(running)
            A, B, XF, FX, E, RAT = a[rows], b[rows], xf[rows], fx[rows], e[rows], rat[rows]
            NFC, FNFC, FULC, FFULC = nfc[rows], fnfc[rows], fulc[rows], ffulc[rows]
            XM, T1, T2 = xm[rows], tol1[rows], tol2[rows]
            parabola = np.abs(E) > T1
            r = (XF - NFC) * (FX - FFULC)
            q = (XF - FULC) * (FX - FNFC)
            p = (XF - FULC) * q - (XF - NFC) * r
            q = 2.0 * (q - r)
            p = np.where(q > 0.0, -p, p)
            q = np.abs(q)
            accepted = parabola & (np.abs(p) < np.abs(0.5 * q * E)) & (p > q * (A - XF)) & (p < q * (B - XF))
            step = (p + 0.0) / q
            near = ((XF + step - A) < T2) | ((B - XF - step) < T2)
            towards = np.sign(XM - XF) + ((XM - XF) == 0)
            step = np.where(near, T1 * towards, step)
            golden_e = np.where(XF >= XM, A - XF, B - XF)
            E = np.where(accepted, RAT, np.where(parabola, golden_e, golden_e))
            RAT = np.where(accepted, step, _GOLDEN_MEAN * golden_e)
            sign = np.sign(RAT) + (RAT == 0)
            X = XF + sign * np.maximum(np.abs(RAT), T1)
            FU = np.asarray(func(X, rows), dtype=float)
            num[rows] += 1
            better = FU <= FX
            right = X >= XF
            A = np.where(better, np.where(right, XF, A), np.where(~right, X, A))
            B = np.where(better, np.where(~right, XF, B), np.where(right, X, B))
            shift = ~better & ((FU <= FNFC) | (NFC == XF))
            replace = ~better & ~shift & ((FU <= FFULC) | (FULC == XF) | (FULC == NFC))
            new_fulc = np.where(better | shift, NFC, np.where(replace, X, FULC))
            new_ffulc = np.where(better | shift, FNFC, np.where(replace, FU, FFULC))
            new_nfc = np.where(better, XF, np.where(shift, X, NFC))
            new_fnfc = np.where(better, FX, np.where(shift, FU, FNFC))
            XF, FX = np.where(better, X, XF), np.where(better, FU, FX)
            a[rows], b[rows], xf[rows], fx[rows], e[rows], rat[rows] = A, B, XF, FX, E, RAT
            nfc[rows], fnfc[rows], fulc[rows], ffulc[rows] = new_nfc, new_fnfc, new_fulc, new_ffulc
            xm[rows] = 0.5 * (A + B)
            tol1[rows] = _SQRT_EPS * np.abs(XF) + xatol[rows] / 3.0
            tol2[rows] = 2.0 * tol1[rows]
            running[rows] = (np.abs(XF - xm[rows]) > (tol2[rows] - 0.5 * (B - A))) & (num[rows] < maxfun)
    success = (num < maxfun) & ~np.isnan(xf) & ~np.isnan(fx)
    return xf, fx, success


def _rows_pearson(x: np.ndarray, n: np.ndarray, sy: np.ndarray, syy: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """:func:`weighted_pearson` of column k of ``x`` (D × K) under row k of ``weights`` (K × D), for each k:
    the diagonal of the K × K result without computing the rest.  ``n``, ``sy``, ``syy`` D or K × D."""
    wn = weights * n
    xt = x.T
    total = wn.sum(axis=1)
    sx = (wn * xt).sum(axis=1)
    sxx = (wn * xt**2).sum(axis=1)
    sxy = (weights * sy * xt).sum(axis=1)
    s_y = (weights * sy).sum(axis=1)
    s_yy = (weights * syy).sum(axis=1)
    cov = total * sxy - sx * s_y
    var_x = total * sxx - sx**2
    var_y = total * s_yy - s_y**2
    with np.errstate(invalid="ignore", divide="ignore"):
        var_x = np.where(var_x > 1e-12 * np.maximum(total * sxx, 1e-300), var_x, np.nan)
        var_y = np.where(var_y > 1e-12 * np.maximum(total * s_yy, 1e-300), var_y, np.nan)
        return np.asarray(np.clip(cov / np.sqrt(var_x * var_y), -1.0, 1.0))


def refine_many(
    terms: FgaTerms, n: np.ndarray, sy: np.ndarray, syy: np.ndarray, grid: np.ndarray, curves: np.ndarray, weights: np.ndarray
) -> np.ndarray:
    """``_Fit.refine`` for every resample at once (B × 3: λ*, r*, best grid point is a bound): each row's
    grid maximum refined by Brent's bounded method between its grid neighbours (:func:`bounded_minimize`).
    ``n``, ``sy``, ``syy`` are D, or B × D when each resample has its own rating sums."""
    b = curves.shape[0]
    out = np.full((b, 3), np.nan)
    fitted = np.flatnonzero(np.isfinite(curves).any(axis=1))
    out[:, 2] = 0.0
    if not fitted.size:
        return out
    best = np.nanargmax(curves[fitted], axis=1)
    last = grid.size - 1
    lam = grid[best]
    r_best = curves[fitted, best]
    low, high = grid[np.maximum(best - 1, 0)], grid[np.minimum(best + 1, last)]
    per_row = n.ndim == 2

    def objective(x: np.ndarray, rows: np.ndarray) -> np.ndarray:
        chosen = fitted[rows]
        values = terms.fga(x)  # D × (rows)
        if per_row:
            r = _rows_pearson(values, n[chosen], sy[chosen], syy[chosen], weights[chosen])
        else:
            r = _rows_pearson(values, n, sy, syy, weights[chosen])
        return np.asarray(-np.nan_to_num(r, nan=-2.0))

    x, f, ok = bounded_minimize(objective, low, high, 1e-4 * np.maximum(high - low, 1e-12))
    improved = ok & (-f > r_best + 1e-12)
    out[fitted, 0] = np.where(improved, x, lam)
    out[fitted, 1] = np.where(improved, -f, r_best)
    out[fitted, 2] = ((best == 0) | (best == last)).astype(float)
    return out


# The interval families bench/coverage_lambda.py compares (issue 26); the DEFAULT ones are what calibrate reports.
LAMBDA_FAMILIES = ("percentile", "bca", "profile", "profile_pointwise", "m_out_of_n")
R_FAMILIES = ("percentile", "bca", "atanh_t", "atanh_t_bc")
DEFAULT_LAMBDA_FAMILY = "percentile"
DEFAULT_R_FAMILY = "atanh_t_bc"


def grid_best(curves: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """λ at each curve's (row's) largest r; NaN for a curve with no finite r."""
    curves = np.atleast_2d(curves)
    finite = np.isfinite(curves).any(axis=1)
    best = np.nanargmax(np.where(finite[:, None], np.nan_to_num(curves, nan=-np.inf), 0.0), axis=1)
    return np.where(finite, grid[best], np.nan)


def profile_set(
    grid: np.ndarray, curve: np.ndarray, curves: np.ndarray, confidence: float = 0.95, pointwise: bool = False
) -> np.ndarray:
    """The λ on the grid that the data cannot tell from the best: a confidence set for the argmax by test
    inversion (Hansen, Lunde & Nason 2011, a model confidence set over the grid).  λ stays when
    r̂(λ̂) − r̂(λ), how far it is below the best, is no larger than the ``confidence`` quantile of its
    bootstrap null max_λ' D*(λ') − D*(λ), with D*(λ) = r*(λ) − r̂(λ) the resample's curve centred on the
    estimate's (the bootstrap of the maximal difference, over dialogues).  ``pointwise``: the null is
    D*(λ̂) − D*(λ), the difference to the estimated best only (a test of each λ against λ̂, which ignores
    that λ̂ was chosen).  Returns a boolean mask."""
    gap, limit = profile_limits(curve, curves, confidence, pointwise)
    return np.asarray(np.isfinite(curve) & (gap <= limit + 1e-12), dtype=bool)


def profile_limits(
    curve: np.ndarray, curves: np.ndarray, confidence: float = 0.95, pointwise: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`profile_set`'s two sides at each λ: the gap r̂(λ̂) − r̂(λ) and the bootstrap limit it is held
    to (NaN where r is undefined; a limit of +inf when no resample could be used: every λ stays)."""
    finite: np.ndarray = np.isfinite(curve)
    gap = np.full(curve.shape, np.nan)
    limit = np.full(curve.shape, np.nan)
    if not finite.any():
        return gap, limit
    gap[finite] = curve[finite].max() - curve[finite]
    deviation = curves[:, finite] - curve[None, finite]
    deviation = deviation[np.isfinite(deviation).all(axis=1)]  # a resample with constant ratings: left out
    if deviation.shape[0] == 0:
        limit[finite] = np.inf
        return gap, limit
    top = deviation[:, int(np.argmax(curve[finite]))] if pointwise else deviation.max(axis=1)
    null = top[:, None] - deviation  # B × Λ
    limit[finite] = np.quantile(null, confidence, axis=0)
    return gap, limit


# λ* counts as identified when its confidence set keeps at most this share of the grid's points
IDENTIFIED_SHARE = 0.5


def lambda_confidence_set(
    grid: np.ndarray, curve: np.ndarray, curves: np.ndarray, n_dialogues: int, confidence: float = 0.95
) -> dict[str, Any]:
    """The confidence set for λ* by test inversion (:func:`profile_set`: every λ whose r the bootstrap cannot
    tell from the best, over dialogues; it covered 0.99-1.00 at 30-100 dialogues in
    ``bench/coverage_lambda.py``, where the percentile interval of the refits covered 0.94-0.98 and, closed
    at both ends, 0.80 in an independent audit), as a set: ``low`` / ``high`` its hull, ``runs`` its
    stretches of consecutive grid points [[from, to], ...] (more than one where r(λ) has two humps),
    ``share`` the share of the grid's points (where r is defined) it keeps,
    ``identified`` whether that share is at most :data:`IDENTIFIED_SHARE` (more: the data cannot tell λ* at
    this n), and ``dialogues_to_identify``: about how many dialogues would bring it to that share if r(λ)
    kept this shape, each λ's bootstrap limit shrinking as 1/√n (None: identified already, or beyond a
    million dialogues; a rough guide, not a plan).

    >>> grid = np.linspace(0, 10, 11)
    >>> curve = 0.5 - 0.002 * (grid - 2) ** 2
    >>> curves = curve + np.random.default_rng(0).normal(scale=0.01, size=(200, 11))
    >>> found = lambda_confidence_set(grid, curve, curves, 40)
    >>> found["runs"], round(found["share"], 2), found["identified"], found["dialogues_to_identify"]
    ([[0.0, 6.0]], 0.64, False, 159)
    """
    gap, limit = profile_limits(curve, curves, confidence)
    defined = np.isfinite(gap)
    kept = defined & (gap <= limit + 1e-12)
    share = float(kept.sum() / defined.sum()) if defined.any() else 1.0  # of the grid points where r is defined
    out: dict[str, Any] = {
        "confidence": confidence,
        "method": "test inversion: every λ whose r is not significantly below the best (bootstrap over dialogues, "
        "the maximal centred difference; Hansen, Lunde & Nason 2011)",
        "low": float(grid[kept].min()) if kept.any() else None,
        "high": float(grid[kept].max()) if kept.any() else None,
        "runs": _runs(grid, kept),
        "share": share,
        "identified": bool(defined.any() and share <= IDENTIFIED_SHARE),
        "dialogues_to_identify": None,
    }
    if not out["identified"] and defined.any():
        for scale in np.unique(np.ceil(np.geomspace(n_dialogues, 1_000_000, 200)).astype(int)):
            # an infinite limit (no usable resample) keeps its λ at any n
            if np.sum(defined & (gap <= limit * np.sqrt(n_dialogues / scale) + 1e-12)) / defined.sum() <= IDENTIFIED_SHARE:
                out["dialogues_to_identify"] = int(scale)
                break
    return out


def _runs(grid: np.ndarray, kept: np.ndarray) -> list[list[float]]:
    """The stretches of consecutive kept grid points, as [first λ, last λ]."""
    runs: list[list[float]] = []
    start = None
    for i, keep in enumerate(kept):
        if keep and start is None:
            start = i
        if start is not None and (not keep or i == kept.size - 1):
            end = i if keep else i - 1
            runs.append([float(grid[start]), float(grid[end])])
            start = None
    return runs


def lambda_intervals(
    grid: np.ndarray,
    curve: np.ndarray,
    curves: np.ndarray,
    jackknife_curves: np.ndarray | None,
    *,
    confidence: float = 0.95,
    families: Sequence[str] = LAMBDA_FAMILIES,
    small_curves: np.ndarray | None = None,
    small: int | None = None,
    refits: tuple[float, np.ndarray, np.ndarray] | None = None,
) -> dict[str, tuple[float, float]]:
    """Intervals for λ* from the estimate's r(λ) ``curve`` (Λ), B bootstrap curves over dialogues (B × Λ) and
    the D leave-one-dialogue-out curves (λ* of each: its grid argmax; ``refits`` = (λ̂, bootstrap λ*,
    jackknife λ*) refined off the grid replace them when given):

    - ``percentile``: quantiles of the resamples' argmax (the same on the log λ scale: percentiles are
      invariant under a monotone transformation);
    - ``bca``: Efron's (1987) BCa, acceleration from the jackknife over dialogues;
    - ``profile``: the hull of :func:`profile_set` (test inversion; Hansen et al. 2011);
    - ``profile_pointwise``: the same with each λ tested against λ̂ only;
    - ``m_out_of_n``: resamples of ``small`` = m < D dialogues (``small_curves``), their argmax spread
      scaled by √(m/D) around λ̂ (Bickel, Götze & van Zwet 1997).
    """
    alpha = (1 - confidence) / 2
    if refits is None:
        best, drawn, jack = float(grid_best(curve[None, :], grid)[0]), grid_best(curves, grid), grid_best(jackknife_curves, grid)  # type: ignore[arg-type]  # possible bug: jackknife_curves None (allowed) without refits fails in grid_best
    else:
        best, drawn, jack = refits
    drawn = drawn[np.isfinite(drawn)]
    out: dict[str, tuple[float, float]] = {}
    if "percentile" in families or "bca" in families:
        from metrics.agreement import interval_families

        out.update(
            interval_families(
                best,
                drawn,
                jack[np.isfinite(jack)],
                confidence=confidence,
                families=[f for f in ("percentile", "bca") if f in families],
            )
        )
    for name in ("profile", "profile_pointwise"):
        if name in families:
            kept = grid[profile_set(grid, curve, curves, confidence, pointwise=name == "profile_pointwise")]
            out[name] = (float(kept.min()), float(kept.max())) if kept.size else (best, best)
    if "m_out_of_n" in families and small_curves is not None and small:
        spread = grid_best(small_curves, grid)
        spread = spread[np.isfinite(spread)]
        scale = np.sqrt(small / jack.size)
        low, high = np.quantile(spread, [alpha, 1 - alpha])
        out["m_out_of_n"] = (float(max(grid[0], best + scale * (low - best))), float(best + scale * (high - best)))
    return out


def r_intervals(
    r_best: float,
    drawn: np.ndarray,
    jackknife: np.ndarray,
    *,
    confidence: float = 0.95,
    families: Sequence[str] = R_FAMILIES,
    n: int | None = None,
) -> dict[str, tuple[float, float]]:
    """Intervals for r* = max r(λ) from its bootstrap refits ``drawn`` and its leave-one-dialogue-out values
    (``jackknife``, only BCa reads them; ``n`` dialogues, default their number): the percentile and BCa of
    the resamples' own maxima; ``atanh_t``, Fisher z of r* ± t(n − 1) × the bootstrap standard error of
    atanh(r*) (:func:`metrics.agreement.interval_families`); and ``atanh_t_bc``, the same centred on
    2·atanh(r*) − mean atanh(r*_b): r* is the largest of many correlations, biased upwards, and the
    bootstrap's estimate of that bias moves it back (Efron & Tibshirani 1993, §10.3).  The default: it held
    0.937-0.952 at 30-100 dialogues where the percentile interval gave 0.902-0.936."""
    from scipy.stats import t

    from metrics.agreement import interval_families

    n = int(n if n is not None else jackknife.size)
    drawn, jackknife = drawn[np.isfinite(drawn)], jackknife[np.isfinite(jackknife)]
    quantile = t.ppf((1 + confidence) / 2, max(n - 1, 1))
    z, z_drawn = _atanh(r_best), _atanh(drawn)
    out: dict[str, tuple[float, float]] = {}
    if "percentile" in families or "bca" in families:
        out.update(
            interval_families(
                r_best, drawn, jackknife, confidence=confidence, families=[f for f in ("percentile", "bca") if f in families]
            )
        )
    for name, centre in (("atanh_t", z), ("atanh_t_bc", 2 * z - z_drawn.mean())):
        if name in families:
            half = quantile * z_drawn.std(ddof=1)
            out[name] = (float(np.tanh(centre - half)), float(np.tanh(centre + half)))
    return out


def _atanh(r: ArrayLike) -> Any:
    return np.arctanh(np.clip(r, -1 + 1e-9, 1 - 1e-9))


def _rating_sums(ratings: Ratings, rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n, sy, syy = ratings.sufficient()
    if rows is None:
        return n, sy, syy
    return n[rows], sy[rows], syy[rows]


def calibrate(
    terms: FgaTerms,
    ratings: Ratings,
    grid: np.ndarray,
    *,
    resamples: int = 1000,
    folds: int = 5,
    seed: int = 0,
    confidence: float = 0.95,
    forget_fraction: float = 0.95,
    resample: str = "dialogues",
    lambda_family: str = DEFAULT_LAMBDA_FAMILY,
    r_family: str = DEFAULT_R_FAMILY,
) -> dict[str, Any]:
    """The calibration result (see :mod:`metrics.__main__` for the JSON contract).  The bootstrap
    resamples dialogues, or dialogues and annotators (``resample``: ``metrics.correlation.resample_sums``).

    ``ci_lambda`` and ``ci_r`` are of the families ``lambda_family`` (:data:`LAMBDA_FAMILIES`) and
    ``r_family`` (:data:`R_FAMILIES`), named under ``bootstrap.ci``; the defaults are those that held
    0.95 at 30-100 dialogues (docs/statistics/intervals.md; ``bench/coverage_lambda.py``).  Their
    jackknife (BCa's acceleration, the t's degrees of freedom) leaves out one dialogue at a time, also when
    annotators are resampled too."""
    if lambda_family not in LAMBDA_FAMILIES or lambda_family in ("m_out_of_n",):
        raise ValueError(f"lambda_family must be one of percentile, bca, profile, profile_pointwise, got {lambda_family!r}")
    if r_family not in R_FAMILIES:
        raise ValueError(f"r_family must be one of {', '.join(R_FAMILIES)}, got {r_family!r}")
    if ratings.value.size < 3 or np.ptp(ratings.value) == 0:
        raise ValueError("the ratings need at least 3 observations that are not all the same")
    n, sy, syy = _rating_sums(ratings)
    fit = _Fit(terms, n, sy, syy, grid)
    fga_grid = terms.fga(grid)  # D × Λ, computed once
    curve = weighted_pearson(fga_grid, n, sy, syy)
    notes = list(ratings.notes)
    if not np.isfinite(curve).any():
        raise ValueError("FGA is the same for every rated dialogue, so no correlation can be computed")
    if np.nanmax(curve) - np.nanmin(curve) < 1e-12:
        notes.append("r does not depend on λ here (no type-2 turn in the rated dialogues); λ* is the first grid value")
    best_lambda, r_best, best_at_bound = fit.refine(curve)
    result: dict[str, Any] = {
        "best_lambda": best_lambda,
        "r_best": r_best,
        "best_at_bound": best_at_bound,
        "r_jga": _finite(weighted_pearson(terms.fga([0.0])[:, 0], n, sy, syy)),
        "r_turn": _finite(weighted_pearson(terms.turn_match_rate(), n, sy, syy)),
        "n_dialogues": ratings.n_dialogues,
        "n_ratings": int(ratings.value.size),
        "rating": ratings.mode,
        "forgetting": {"p": forget_fraction, "turns_to_forget": _turns_to_forget(best_lambda, forget_fraction)},
    }
    band_low = band_high = np.full(grid.size, np.nan)
    result.update(
        ci_lambda=None, ci_r=None, at_bound=None, bootstrap={"resamples": resamples, "seed": seed, "resample": resample}
    )
    if resamples <= 0:
        notes.append(
            "no bootstrap resamples (0 asked for): no confidence interval was computed for λ* or r (ci_lambda and ci_r are null)"
        )
    if resamples > 0:
        rng = np.random.default_rng(seed)
        weights, n_b, sy_b, syy_b = resample_sums(ratings, resamples, rng, resample)
        weights = weights.astype(float)
        curves = weighted_pearson(fga_grid, n_b, sy_b, syy_b, weights)  # B × Λ
        # every resample's λ* refined at once (each resample with its own rating sums when annotators are drawn too)
        refits = refine_many(terms, n_b, sy_b, syy_b, grid, curves, weights)
        valid = np.isfinite(refits[:, 0])
        if valid.sum() < resamples:
            notes.append(f"{resamples - int(valid.sum())} bootstrap resample(s) had constant ratings or FGA, left out")
        if valid.sum() < 2:
            notes.append("fewer than 2 bootstrap resamples could be fitted: no interval for λ* or r")
            result["curve"] = [{"lambda": float(lam), "r": _finite(r), "ci": None} for lam, r in zip(grid, curve)]
            result.update(_cross_validate(terms, ratings, grid, folds, seed))
            result["notes"] = notes + result.pop("cv_notes")
            return result
        # the jackknife over dialogues only when BCa needs its acceleration (D more refits)
        bca = "bca" in (lambda_family, r_family)
        jack = _jackknife_refits(fit, fga_grid, n, sy, syy) if bca else np.full((ratings.n_dialogues, 2), np.nan)
        lam_ci = lambda_intervals(
            grid,
            curve,
            curves,
            None,
            confidence=confidence,
            families=(lambda_family,),
            refits=(best_lambda, refits[valid, 0], jack[:, 0]),
        ).get(lambda_family)
        r_ci = r_intervals(
            r_best, refits[valid, 1], jack[:, 1], confidence=confidence, families=(r_family,), n=ratings.n_dialogues
        ).get(r_family)
        for what, found, family in (("λ*", lam_ci, lambda_family), ("r at λ*", r_ci, r_family)):
            if found is None:  # BCa where it is undefined (metrics.correlation.bca_interval)
                notes.append(f"no {family} interval for {what} (every resample on one side of the estimate)")
        result.update(
            ci_lambda=None if lam_ci is None else [float(lam_ci[0]), float(lam_ci[1])],
            ci_r=None if r_ci is None else [float(r_ci[0]), float(r_ci[1])],
            at_bound=float(refits[valid, 2].mean()) if valid.any() else None,
        )
        result["bootstrap"]["ci"] = {"lambda": lambda_family, "r": r_family}
        at_end = float(np.mean(refits[valid, 0] >= grid[-1] - 1e-9 * max(1.0, abs(grid[-1])))) if valid.any() else 0.0
        grid_end = grid[-1] - 1e-9 * max(1.0, abs(grid[-1]))
        lam_lo, lam_hi = lam_ci if lam_ci is not None else (None, None)
        if lam_ci is not None and (at_end > (1 - confidence) / 2 or lam_hi >= grid_end):  # λ* not bounded above
            assert lam_lo is not None  # lam_ci is not None
            result["ci_lambda"] = [float(lam_lo), None]
            result["ci_lambda_open"] = (
                f"upper bound at or beyond the grid end (λ = {grid[-1]:g}): {at_end:.0%} of bootstrap refits end there; "
                f"r at λ → ∞ (turn-level match) is {result['r_turn']:.3f}"
                if result["r_turn"] is not None
                else f"upper bound at or beyond the grid end (λ = {grid[-1]:g}): {at_end:.0%} of bootstrap refits end there"
            )
            notes.append(result["ci_lambda_open"])
        band_low, band_high = percentile_ci(curves, confidence)
        # the honest statement of what the data say about λ*: its words are metrics.summary's
        result["lambda_set"] = lambda_confidence_set(grid, curve, curves[valid], ratings.n_dialogues, confidence)
    result["curve"] = [
        {"lambda": float(lam), "r": _finite(r), "ci": None if not np.isfinite(lo) else [float(lo), float(hi)]}
        for lam, r, lo, hi in zip(grid, curve, band_low, band_high)
    ]
    result.update(_cross_validate(terms, ratings, grid, folds, seed))
    result["notes"] = notes + result.pop("cv_notes")
    return result


def _jackknife_refits(
    fit: _Fit, fga_grid: np.ndarray, n: np.ndarray, sy: np.ndarray, syy: np.ndarray, chunk: int = 256
) -> np.ndarray:
    """(λ*, r*) with each dialogue left out in turn (D × 2): its curve on the grid, refined as the estimate's."""
    d = n.size
    out = np.empty((d, 2))
    for start in range(0, d, chunk):
        rows = np.arange(start, min(d, start + chunk))
        weights = np.ones((rows.size, d))
        weights[np.arange(rows.size), rows] = 0.0
        curves = weighted_pearson(fga_grid, n, sy, syy, weights)
        for i, row in enumerate(rows):
            out[row] = fit.refine(curves[i], weights[i])[:2]
    return out


def _finite(value: float | np.ndarray) -> float | None:
    value = float(np.ravel(value)[0]) if np.ndim(value) else float(value)
    return value if np.isfinite(value) else None


def _turns_to_forget(lam: float, fraction: float) -> float | None:
    """t_f such that λ = −ln(1 − p)/t_f (inverse of :func:`lambda_from_forgetting`)."""
    if not np.isfinite(lam) or lam <= 0:
        return None
    return float(-np.log(1 - fraction) / lam)


def _cross_validate(terms: FgaTerms, ratings: Ratings, grid: np.ndarray, folds: int, seed: int) -> dict[str, Any]:
    """Fit λ* without each fold, score the fold with it; pooled out-of-fold r."""
    d = ratings.n_dialogues
    if folds < 2 or d < 2 * folds:
        note = f"cross-validation: needs at least 2 folds and at least 2 dialogues per fold ({d} dialogues)"
        return {"cv_r": None, "cv_folds": [], "cv_notes": [note]}
    order = np.random.default_rng(seed).permutation(d)
    fold_of = np.empty(d, dtype=int)
    fold_of[order] = np.arange(d) % folds
    held_out = np.empty(d)
    fold_rows = []
    n, sy, syy = _rating_sums(ratings)
    for k in range(folds):
        train = np.flatnonzero(fold_of != k)
        test = np.flatnonzero(fold_of == k)
        sub = terms.subset(train)
        fit = _Fit(sub, n[train], sy[train], syy[train], grid)
        lam, r_train, _ = fit.refine(weighted_pearson(sub.fga(grid), n[train], sy[train], syy[train]))
        if not np.isfinite(lam):
            lam = 0.0
        held_out[test] = terms.subset(test).fga([lam])[:, 0]
        fold_rows.append({"fold": k, "lambda": lam, "r_train": _finite(r_train), "n_test": int(test.size)})
    return {"cv_r": _finite(weighted_pearson(held_out, n, sy, syy)), "cv_folds": fold_rows, "cv_notes": []}


__all__ = ["FgaTerms", "calibrate", "parse_grid", "lambda_from_forgetting", "refined_argmax"]


def refined_argmax(curves: ArrayLike, grid: ArrayLike) -> np.ndarray:
    """The λ of the highest value of each curve (last axis over ``grid``), refined between the best grid
    point's neighbours by the parabola through the three points; at the grid's ends, the end.

    >>> float(refined_argmax(np.array([0.1, 0.3, 0.35, 0.2]), np.array([0.0, 0.5, 1.0, 1.5])))
    0.875
    """
    curves = np.asarray(curves, dtype=float)
    grid = np.asarray(grid, dtype=float)
    empty = ~np.isfinite(curves).any(axis=-1)  # no correlation at any λ (a constant rating): no λ*
    best = np.argmax(np.where(np.isfinite(curves), curves, -np.inf), axis=-1)
    if grid.size < 3:
        return np.where(empty, np.nan, grid[best])
    inner = np.clip(best, 1, grid.size - 2)
    c0, c1, c2 = (np.take_along_axis(curves, (inner + d)[..., None], axis=-1)[..., 0] for d in (-1, 0, 1))
    x0, x1, x2 = grid[inner - 1], grid[inner], grid[inner + 1]
    with np.errstate(invalid="ignore", divide="ignore"):
        num = (x1 - x0) ** 2 * (c1 - c2) - (x1 - x2) ** 2 * (c1 - c0)
        den = (x1 - x0) * (c1 - c2) - (x1 - x2) * (c1 - c0)
        vertex = np.clip(x1 - 0.5 * num / den, x0, x2)
    at_end = (best == 0) | (best == grid.size - 1) | ~np.isfinite(vertex) | (den <= 0)
    return np.where(empty, np.nan, np.where(at_end, grid[best], vertex))
