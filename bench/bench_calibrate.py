"""Benchmark: λ calibration, vectorised, beside recomputing FGA with a per-turn loop.

    python -m bench.bench_calibrate [--dialogues 1000] [--lambdas 1000] [--resamples 1000]

The engine fits r(λ) on the whole grid for the point estimate and for every bootstrap
resample, refines each fit with Brent's method, and runs 5-fold cross-validation.  The
baseline recomputes each dialogue's FGA with the authors'-style turn loop for every λ and
every resample (what a script without per-turn statistics does) on a small grid and a few
resamples; its time per (λ, resample) cell is then scaled to the full size for the ratio.
Ratings are simulated from FGA(0.5) plus noise, so the fit should find λ ≈ 0.5.
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from bench.corpus import write  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dialogues", type=int, default=1000)
    parser.add_argument("--lambdas", type=int, default=1000)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--loop-lambdas", type=int, default=5)
    parser.add_argument("--loop-resamples", type=int, default=4)
    args = parser.parse_args()

    import numpy as np

    from formats import load_dialogues
    from metrics.calibrate import FgaTerms, calibrate
    from metrics.correlation import Ratings
    from metrics.reference import fga_loop
    from metrics.turnstats import extract

    work = Path(tempfile.mkdtemp(prefix="dst-bench-calibrate-"))
    corpus = work / "corpus.json"
    n_dialogues, n_turns = write(corpus, args.dialogues)
    print(
        f"machine: {platform.machine()}, {platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} cores"
    )
    print(f"corpus: {n_dialogues} dialogues, {n_turns} turns; grid {args.lambdas} λ in [0, 10]; {args.resamples} resamples")
    dialogues = load_dialogues([corpus])

    start = time.perf_counter()
    stats = extract(dialogues)
    terms = FgaTerms.from_statistics(stats, stats.dialogue_ids)
    t_extract = time.perf_counter() - start
    truth = terms.fga([0.5])[:, 0]
    y = truth + np.random.default_rng(1).normal(0, 0.05, truth.size)
    ratings = Ratings(stats.dialogue_ids, np.arange(truth.size), y, "mean", [])
    grid = np.linspace(0, 10, args.lambdas)

    calibrate(terms, ratings, grid[:10], resamples=2, folds=0)  # warm-up: scipy imports
    start = time.perf_counter()
    result = calibrate(terms, ratings, grid, resamples=0, folds=0)
    t_point = time.perf_counter() - start
    start = time.perf_counter()
    result = calibrate(terms, ratings, grid, resamples=args.resamples, folds=5, seed=0)
    t_full = time.perf_counter() - start
    print("\nengine (per-turn statistics extracted once)")
    print(f"  statistics extraction                        {t_extract * 1e3:9.1f} ms")
    print(f"  point fit: grid + Brent                      {t_point * 1e3:9.1f} ms")
    print(f"  full: grid + Brent, {args.resamples} bootstrap refits, 5-fold CV {t_full:8.2f} s")
    low, high = (float("nan") if v is None else v for v in result["ci_lambda"])
    print(
        f"  λ* = {result['best_lambda']:.3f}  95% CI [{low:.3f}, {high:.3f}]"
        f"  r* = {result['r_best']:.3f}  cv r = {result['cv_r']:.3f}  at bound {result['at_bound']:.1%}"
    )

    pairs = [([t.gold for t in d.turns], [t.pred for t in d.turns]) for d in dialogues]
    small_grid = np.linspace(0, 10, args.loop_lambdas)
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    for _ in range(args.loop_resamples):
        drawn = rng.integers(0, len(pairs), len(pairs))
        for lam in small_grid:
            x = np.array([np.mean(fga_loop(*pairs[d], lam)) for d in drawn])
            np.corrcoef(x, y[drawn])
    t_loop = time.perf_counter() - start
    cells = args.loop_lambdas * args.loop_resamples
    per_cell = t_loop / cells
    projected = per_cell * args.lambdas * (args.resamples + 1)
    engine_cells = args.lambdas * (args.resamples + 1)
    print(f"\nper-turn loop (FGA recomputed for each λ and resample), {args.loop_lambdas} λ × {args.loop_resamples} resamples")
    print(f"  {t_loop:.2f} s for {cells} cells = {per_cell * 1e3:.1f} ms per (λ, resample)")
    print(
        f"  projected to {args.lambdas} λ × {args.resamples + 1} fits: {projected / 3600:.1f} h (grid only, no refinement, no CV)"
    )
    print(
        f"\nper (λ, resample) cell: engine {t_full / engine_cells * 1e6:.2f} µs (all steps included)"
        f"  loop {per_cell * 1e6:.0f} µs   x{per_cell / (t_full / engine_cells):,.0f}"
    )


if __name__ == "__main__":
    main()
