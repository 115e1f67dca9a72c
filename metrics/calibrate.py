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

from dataclasses import dataclass

import numpy as np

from metrics.correlation import Ratings, percentile_ci, resample_sums, weighted_pearson
from metrics.scores import _distance_counts, _per_dialogue_sum, fga_from_counts, lambda_from_forgetting
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
        distances, counts = _distance_counts(stats, per_dialogue=True)
        exact = _per_dialogue_sum(stats, stats.exact)
        n_turns = _per_dialogue_sum(stats, np.ones(stats.n_turns))
        position = {d: i for i, d in enumerate(stats.dialogue_ids)}
        rows = np.array([position[d] for d in dialogue_ids], dtype=int)
        return cls(exact[rows], n_turns[rows], distances.astype(float), counts[rows])

    def fga(self, lambdas) -> np.ndarray:
        """D × Λ."""
        return fga_from_counts(self.exact, self.n_turns, self.distances, self.counts, np.atleast_1d(lambdas))

    def turn_match_rate(self) -> np.ndarray:
        return self.fga([np.inf])[:, 0]

    def subset(self, rows: np.ndarray) -> FgaTerms:
        return FgaTerms(self.exact[rows], self.n_turns[rows], self.distances, self.counts[rows])


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


def _rating_sums(ratings: Ratings, rows: np.ndarray | None = None):
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
) -> dict:
    """The calibration result (see :mod:`metrics.__main__` for the JSON contract).  The bootstrap
    resamples dialogues, or dialogues and annotators (``resample``: ``metrics.correlation.resample_sums``)."""
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
    result = {
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
        notes.append("--bootstrap 0: no confidence interval was computed for λ* or r (ci_lambda and ci_r are null)")
    if resamples > 0:
        rng = np.random.default_rng(seed)
        weights, n_b, sy_b, syy_b = resample_sums(ratings, resamples, rng, resample)
        weights = weights.astype(float)
        curves = weighted_pearson(fga_grid, n_b, sy_b, syy_b, weights)  # B × Λ
        if n_b.ndim == 1:
            refits = np.array([fit.refine(curves[b], weights[b]) for b in range(resamples)])
        else:  # each resample has its own annotators, so its own rating sums
            refits = np.array(
                [_Fit(terms, n_b[b], sy_b[b], syy_b[b], grid).refine(curves[b], weights[b]) for b in range(resamples)]
            )
        valid = np.isfinite(refits[:, 0])
        if valid.sum() < resamples:
            notes.append(f"{resamples - int(valid.sum())} bootstrap resample(s) had constant ratings or FGA, left out")
        lam_lo, lam_hi = percentile_ci(refits[valid, 0], confidence)
        r_lo, r_hi = percentile_ci(refits[valid, 1], confidence)
        result.update(
            ci_lambda=[float(lam_lo), float(lam_hi)],
            ci_r=[float(r_lo), float(r_hi)],
            at_bound=float(refits[valid, 2].mean()) if valid.any() else None,
        )
        at_end = float(np.mean(refits[valid, 0] >= grid[-1] - 1e-9 * max(1.0, abs(grid[-1])))) if valid.any() else 0.0
        if at_end > (1 - confidence) / 2:  # the upper percentile is the grid's end: the data do not bound λ* there
            result["ci_lambda"] = [float(lam_lo), None]
            result["ci_lambda_open"] = (
                f"upper bound at or beyond the grid end (λ = {grid[-1]:g}): {at_end:.0%} of bootstrap refits end there; "
                f"r at λ → ∞ (turn-level match) is {result['r_turn']:.3f}"
                if result["r_turn"] is not None
                else f"upper bound at or beyond the grid end (λ = {grid[-1]:g}): {at_end:.0%} of bootstrap refits end there"
            )
            notes.append(result["ci_lambda_open"])
        band_low, band_high = percentile_ci(curves, confidence)
    result["curve"] = [
        {"lambda": float(lam), "r": _finite(r), "ci": None if not np.isfinite(lo) else [float(lo), float(hi)]}
        for lam, r, lo, hi in zip(grid, curve, band_low, band_high)
    ]
    result.update(_cross_validate(terms, ratings, grid, folds, seed))
    result["notes"] = notes + result.pop("cv_notes")
    return result


def _finite(value) -> float | None:
    value = float(np.ravel(value)[0]) if np.ndim(value) else float(value)
    return value if np.isfinite(value) else None


def _turns_to_forget(lam: float, fraction: float) -> float | None:
    """t_f such that λ = −ln(1 − p)/t_f (inverse of :func:`lambda_from_forgetting`)."""
    if not np.isfinite(lam) or lam <= 0:
        return None
    return float(-np.log(1 - fraction) / lam)


def _cross_validate(terms: FgaTerms, ratings: Ratings, grid: np.ndarray, folds: int, seed: int) -> dict:
    """Fit λ* without each fold, score the fold with it; pooled out-of-fold r."""
    d = ratings.n_dialogues
    if folds < 2 or d < 2 * folds:
        note = f"cross-validation: needs --folds >= 2 and at least 2 dialogues per fold ({d} dialogues)"
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


__all__ = ["FgaTerms", "calibrate", "parse_grid", "lambda_from_forgetting"]
