"""λ*'s bootstrap refits in one pass: ``metrics.calibrate.bounded_minimize`` takes scipy's bounded Brent steps
for many problems at once, and ``refine_many`` gives every resample the λ* and r* that one refine per
resample gave (the analysis's largest cost, once a scalar optimisation per resample)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from formats import load_dialogues
from formats.tidy import Vote
from metrics.calibrate import FgaTerms, _Fit, bounded_minimize, refine_many
from metrics.correlation import ratings_for, resample_sums, weighted_pearson
from metrics.turnstats import extract


def test_lockstep_brent_takes_scipys_steps():
    rng = np.random.default_rng(2)
    centres, widths, bumps = rng.uniform(0.1, 0.9, 50), rng.uniform(0.05, 2, 50), rng.uniform(0, 0.3, 50)

    def f(x, rows):
        return (x - centres[rows]) ** 2 / widths[rows] + bumps[rows] * np.sin(17 * x)

    x, fx, ok = bounded_minimize(f, np.zeros(50), np.ones(50), np.full(50, 1e-5))
    for i in range(50):
        found = minimize_scalar(
            lambda v, i=i: f(np.array([v]), np.array([i]))[0], bounds=(0, 1), method="bounded", options={"xatol": 1e-5}
        )
        assert x[i] == pytest.approx(found.x, abs=1e-12) and fx[i] == pytest.approx(found.fun, abs=1e-12)
        assert ok[i] == found.success


@pytest.mark.parametrize("resample", ["dialogues", "dialogues+annotators"])
def test_every_resample_gets_the_refit_one_refine_gave(fixtures, resample):
    dialogues = load_dialogues([fixtures / "fga_human_eval"]) + load_dialogues([fixtures / "trade_predictions"])
    stats = extract(dialogues)
    ids = stats.dialogue_ids
    terms = FgaTerms.from_statistics(stats, ids)
    rng = np.random.default_rng(4)
    votes = (rng.random((len(ids), 3)) < 0.3 + 0.6 * terms.fga([0.7])[:, :1]).astype(float)
    ratings = ratings_for(
        [Vote(ids[d], f"a{k}", "q", str(int(votes[d, k]))) for d in range(len(ids)) for k in range(3)], ids, "mean"
    )
    grid = np.linspace(0, 10, 1001)
    weights, n_b, sy_b, syy_b = resample_sums(ratings, 120, np.random.default_rng(1), resample)
    weights = weights.astype(float)
    curves = weighted_pearson(terms.fga(grid), n_b, sy_b, syy_b, weights)
    together = refine_many(terms, n_b, sy_b, syy_b, grid, curves, weights)
    for b in range(120):
        one = (_Fit(terms, n_b, sy_b, syy_b, grid) if n_b.ndim == 1 else _Fit(terms, n_b[b], sy_b[b], syy_b[b], grid)).refine(
            curves[b], weights[b]
        )
        if np.isnan(one[0]):
            assert np.isnan(together[b, 0])
            continue
        # r* to rounding; λ* where r is flat to 1e-15 may move within its grid step's refinement
        assert together[b, 1] == pytest.approx(one[1], abs=1e-12)
        assert together[b, 0] == pytest.approx(one[0], abs=1e-3)
        assert together[b, 2] == one[2]
