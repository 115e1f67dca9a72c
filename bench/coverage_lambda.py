"""Coverage of the λ* and r* intervals at 30, 50 and 100 dialogues (issue 26): which family keeps 0.95.

    python -m bench.coverage_lambda [--replicates 1000] [--sizes 30,50,100] [--resamples 1000] [--json]

Each replicate draws n dialogues with replacement from a pool of real dialogues, read with our readers and
scored with our FGA, and rates each one from FGA at a known λ0 = 0.5 plus noise that is mean-zero given the
dialogue.  Then the population r(λ) = cov(FGA(λ), FGA(λ0)) / (sd(FGA(λ)) sd(y)) is largest exactly at λ0
(the correlation of FGA(λ) with FGA(λ0) is 1 there), so the population λ* is λ0 = 0.5, and the population
r* = sd(FGA(λ0)) / √(sd(FGA(λ0))² + E var(y | dialogue)) over the pool, both exact (no simulation of the
truth needed).  Pools and noises (``DESIGNS``):

- ``fixture_gauss``: the 15 dialogues of the shared fixtures (fga_human_eval, trade_predictions), y =
  FGA(λ0) + N(0, σ²) with σ set for r* = 0.6;
- ``fixture_votes``: the same pool, y the mean of 3 binary votes with P(1) = FGA(λ0) (r* 0.60);
- ``perturbed_gauss``: the 1,000 perturbed copies of those dialogues of ``bench.corpus`` (the benchmark
  corpus), y = FGA(λ0) + N(0, σ²), σ for r* = 0.8.

λ* and r* are fitted on the grid ``GRID`` (0, then 62 values from 0.0078 to 9.0, each 12 % above the last,
λ0 among them: a log grid keeps the run within minutes; the tool's default is 0:10:1001 and refines its
grid optimum with Brent).  The unit of resampling is the dialogue.  Families: see
:func:`metrics.calibrate.lambda_intervals` and :func:`metrics.calibrate.r_intervals`.  An interval whose
upper end is the grid end counts as open above (it covers anything larger).
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

LAMBDA0 = 0.5
GRID = np.concatenate([[0.0], LAMBDA0 * 2.0 ** (np.arange(-36, 26) / 6)])  # 0, then 0.0078 … 9.0, ×2^(1/6)
SIZES = (30, 50, 100)
M_POWER = 0.7  # m-out-of-n: m = round(n ** M_POWER)


def _pool_fga(pool: str) -> np.ndarray:
    """FGA of every pool dialogue on GRID (dialogues × Λ), through our readers and metrics."""
    import os

    from formats import load_dialogues
    from metrics.calibrate import FgaTerms
    from metrics.turnstats import extract

    if pool == "fixture":
        root = Path(os.environ.get("DST_JUDGE_FIXTURES", Path(__file__).resolve().parent.parent.parent / "shared" / "fixtures"))
        dialogues = load_dialogues([root / "fga_human_eval"]) + load_dialogues([root / "trade_predictions"])
    else:
        from bench.corpus import write

        path = Path(tempfile.mkdtemp(prefix="dst-coverage-lambda-")) / "corpus.json"
        write(path, 1000)
        dialogues = load_dialogues([path])
    stats = extract(dialogues)
    return FgaTerms.from_statistics(stats, stats.dialogue_ids).fga(GRID)


class Design:
    def __init__(self, name: str, pool: str, noise: str, r_star: float = 0.6):
        self.name, self.noise = name, noise
        self.fga = _pool_fga(pool)
        self.column = int(np.argmin(np.abs(GRID - LAMBDA0)))
        f = self.fga[:, self.column]
        if noise == "gauss":
            self.sigma = f.std() * math.sqrt(1 / r_star**2 - 1)
            within = self.sigma**2
        else:
            within = float(np.mean(f * (1 - f))) / 3
        self.true_r = float(f.std() / math.sqrt(f.var() + within))

    def draw(self, rng, n: int):
        rows = rng.integers(0, self.fga.shape[0], n)
        f = self.fga[rows, self.column]
        if self.noise == "gauss":
            y = f + rng.normal(scale=self.sigma, size=n)
        else:
            y = (rng.random((n, 3)) < f[:, None]).mean(axis=1)
        return self.fga[rows], y


DESIGNS = (
    ("fixture_gauss", "fixture", "gauss", 0.6),
    ("fixture_votes", "fixture", "votes", 0.6),
    ("perturbed_gauss", "perturbed", "gauss", 0.8),
)


def _replicate(design: Design, rng, n: int, resamples: int):
    """(λ intervals by family, r intervals by family) for one simulated study; None when y is constant."""
    from metrics.calibrate import lambda_intervals, r_intervals
    from metrics.correlation import bootstrap_weights, weighted_pearson

    x, y = design.draw(rng, n)
    if np.ptp(y) == 0:
        return None
    ones = np.ones(n)
    curve = weighted_pearson(x, ones, y, y**2)
    if not np.isfinite(curve).any():
        return None
    weights = bootstrap_weights(n, resamples, rng).astype(float)
    curves = weighted_pearson(x, ones, y, y**2, weights)
    jack_curves = weighted_pearson(x, ones, y, y**2, 1.0 - np.eye(n))
    m = max(5, round(n**M_POWER))
    small = np.zeros((resamples, n))
    np.add.at(small, (np.repeat(np.arange(resamples), m), rng.integers(0, n, resamples * m)), 1.0)
    small_curves = weighted_pearson(x, ones, y, y**2, small)
    lam = lambda_intervals(GRID, curve, curves, jack_curves, small_curves=small_curves, small=m)
    r_best = float(np.nanmax(curve))
    r = r_intervals(r_best, np.nanmax(curves, axis=1), np.nanmax(jack_curves, axis=1))
    return lam, r


def _covers(interval, truth: float, open_above: bool) -> bool:
    low, high = interval
    return bool(low - 1e-9 <= truth and (open_above and high >= GRID[-1] - 1e-9 or truth <= high + 1e-9))


def rows(replicates: int, sizes: Sequence[int], resamples: int, seed: int) -> list[dict]:
    """Coverage of λ0 by every λ* family and of the population r* by every r* family, per design and n:
    {"estimate", "design", "n", "family", "coverage", "mc_se", "replicates", "unit", "default"}."""
    from metrics.calibrate import DEFAULT_LAMBDA_FAMILY, DEFAULT_R_FAMILY, LAMBDA_FAMILIES, R_FAMILIES

    rng = np.random.default_rng(seed)
    out = []
    for name, pool, noise, r_star in DESIGNS:
        design = Design(name, pool, noise, r_star)
        for n in sizes:
            hits = {("lambda_star", f): 0 for f in LAMBDA_FAMILIES} | {("r_star", f): 0 for f in R_FAMILIES}
            for _ in range(replicates):
                result = _replicate(design, rng, n, resamples)
                if result is None:
                    continue
                lam, r = result
                for family, interval in lam.items():
                    hits["lambda_star", family] += _covers(interval, LAMBDA0, True)
                for family, interval in r.items():
                    hits["r_star", family] += _covers(interval, design.true_r, False)
            for (estimate, family), hit in hits.items():
                coverage = hit / replicates
                default = family == (DEFAULT_LAMBDA_FAMILY if estimate == "lambda_star" else DEFAULT_R_FAMILY)
                out.append(
                    {
                        "estimate": estimate,
                        "design": name,
                        "n": n,
                        "family": family,
                        "coverage": coverage,
                        "mc_se": math.sqrt(coverage * (1 - coverage) / replicates),
                        "replicates": replicates,
                        "unit": "dialogues",
                        "default": default,
                    }
                )
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--sizes", default="30,50,100")
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    start = time.perf_counter()
    result = rows(args.replicates, [int(s) for s in args.sizes.split(",")], args.resamples, args.seed)
    elapsed = time.perf_counter() - start
    if args.json:
        print(json.dumps({"rows": result, "lambda0": LAMBDA0, "seconds": elapsed}, indent=1))
        return
    print(f"{args.replicates} replicates, {args.resamples} resamples over dialogues, nominal 0.95; {elapsed:.0f} s")
    for row in result:
        mark = " *" if row["default"] else ""
        print(
            f"{row['estimate']:<12} {row['design']:<16} n={row['n']:<4} {row['family']:<11} "
            f"{row['coverage']:.3f} ± {row['mc_se']:.3f}{mark}"
        )


if __name__ == "__main__":
    main()
