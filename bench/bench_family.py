"""Simulation: does the declared family of comparisons keep its family-wise error at 0.05?  Issue 40, item 3.

    python -m bench.bench_family [--replicates 2000] [--sizes 30,100] [--nulls heavy,bounded] [--seed 0]
                                 [--json]

The analysis compares each metric with the reference (JGA) and FGA at one λ: 6 comparisons for the default
metrics, their p-values adjusted by Holm and their intervals at the Bonferroni level 1 − 0.05/6 (99.2%;
``metrics.comparisons``).  Under a global null every metric correlates equally with the human rating, so
any rejection is an error.  Each study goes through ``correlation_report`` as the analysis calls it
(``family="reference"``, ``adjust="holm"``, no bootstrap: the reported intervals need none), and the bench
counts the studies where Holm rejects at least one comparison (``fwer_holm``), where at least one 99.2%
interval leaves 0 out (``fwer_intervals``: the simultaneous intervals' error), and the share of single
comparisons whose unadjusted p < 0.05 (``size``, nominal 0.05) and whose 99.2% interval leaves 0 out
(``size_family``, nominal 0.05/6 = 0.0083: the intervals checked at the level they are reported).

Nulls (7 metrics named as the analysis names them: jga, m2, fga_0.5, sa, aga, rsa, f1; exchangeable, so
every ρ(metric, rating) is equal):

- ``heavy``: a dialogue's quality t ~ N(0, 1); each metric t + 0.8·T₃ (Student's t with 3 df, its own
  draw per metric: heavy-tailed, outliers in one metric at a time) plus a shared 0.6·N(0, 1) (the metrics
  agree with each other beyond t: corr between metrics 1.36 / 3.28 ≈ 0.41); the rating the mean of 3 votes
  t + 0.7·T₃;
- ``bounded``: tied, bounded metrics as a tracker's: each dialogue has 4-12 turns and a difficulty h ~
  N(0, 1); each metric is 1 − (share of turns it counts wrong), the turns wrong with probability
  Φ(−1.65 + h) drawn apart per metric (1 on most dialogues: 60-70% ties at 1); the rating the mean of
  2-5 binary votes from a pool of 30 raters with leniency N(0, 0.6²), a vote 1 when 0.6 − 1.5·h +
  leniency + N(0, 1) > 0.

MC SE of a family-wise error near 0.05 over R studies is √(0.05·0.95/R) (0.005 at R = 2,000); the target
is FWER ≤ 0.05 + 2 MC SE.
"""

from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np

NAMES = ("jga", "m2", "fga_0.5", "sa", "aga", "rsa", "f1")
NULLS = ("heavy", "bounded")
SIZES = (30, 100)
ALPHA = 0.05


def _votes_matrix(rng: np.random.Generator, pool: int, n: int, counts: np.ndarray) -> np.ndarray:
    """pool × n booleans: which raters rate which dialogue (``counts`` distinct raters each)."""
    order = np.argsort(rng.random((pool, n)), axis=0)
    return order < counts[None, :]


def draw(null: str, n: int, rng: np.random.Generator) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """One study under ``null``: {metric: values per dialogue} and the rating per dialogue (mean vote)."""
    from scipy.stats import norm

    if null == "heavy":
        t = rng.normal(size=n)
        shared = 0.6 * rng.normal(size=n)
        metrics = {name: t + shared + 0.8 * rng.standard_t(3, size=n) for name in NAMES}
        rating = (t[None, :] + 0.7 * rng.standard_t(3, size=(3, n))).mean(axis=0)
        return metrics, rating
    turns = rng.integers(4, 13, n)
    h = rng.normal(size=n)
    live = np.arange(12)[None, :] < turns[:, None]
    p_wrong = norm.cdf(-1.65 + h)
    metrics = {}
    for name in NAMES:
        wrong = live & (rng.random((n, 12)) < p_wrong[:, None])
        metrics[name] = 1 - wrong.sum(axis=1) / turns
    leniency = rng.normal(scale=0.6, size=30)
    rated = _votes_matrix(rng, 30, n, rng.integers(2, 6, n))
    votes = (0.6 - 1.5 * h[None, :] + leniency[:, None] + rng.normal(size=(30, n)) > 0).astype(float)
    rating = np.where(rated, votes, 0).sum(axis=0) / rated.sum(axis=0)
    return metrics, rating


def study(metrics: dict[str, np.ndarray], rating: np.ndarray) -> dict:
    """What the analysis reports for one study's declared family: Holm-adjusted p's, raw p's, the family's
    intervals and their level."""
    from metrics.correlation import Ratings, correlation_report

    n = rating.size
    ratings = Ratings([f"d{i}" for i in range(n)], np.arange(n), rating, "mean", [])
    report = correlation_report(metrics, ratings, resamples=0, adjust="holm", family="reference")
    rows = [w for w in report["williams"] if w.get("p_value") is not None]
    return {
        "p": [w["p_value"] for w in rows],
        "p_holm": [w.get("p_holm", w["p_value"]) for w in rows],
        "excludes": [bool(w["diff_ci"] and (w["diff_ci"][0] > 0 or w["diff_ci"][1] < 0)) for w in rows],
        "level": report["comparisons"]["interval_confidence"],
        "m": len(rows),
    }


def run(replicates: int, sizes=SIZES, nulls=NULLS, seed: int = 0) -> list[dict]:
    rows = []
    for null in nulls:
        for n in sizes:
            rng = np.random.default_rng([seed, NULLS.index(null), n])
            family_holm = family_intervals = single = single_family = comparisons = 0
            levels, ms = set(), set()
            for _ in range(replicates):
                found = study(*draw(null, n, rng))
                family_holm += any(p < ALPHA for p in found["p_holm"])
                family_intervals += any(found["excludes"])
                single += sum(p < ALPHA for p in found["p"])
                single_family += sum(found["excludes"])
                comparisons += found["m"]
                levels.add(round(found["level"], 6))
                ms.add(found["m"])

            def share(count: int, of: int) -> tuple[float, float]:
                c = count / of
                return c, math.sqrt(max(c * (1 - c), 1e-12) / of)

            (fwer, fwer_se), (fwer_ci, fwer_ci_se) = share(family_holm, replicates), share(family_intervals, replicates)
            (size, size_se), (size_f, size_f_se) = share(single, comparisons), share(single_family, comparisons)
            rows.append(
                {
                    "null": null,
                    "n": n,
                    "replicates": replicates,
                    "comparisons": sorted(ms),
                    "interval_level": sorted(levels),
                    "fwer_holm": fwer,
                    "fwer_holm_se": fwer_se,
                    "fwer_intervals": fwer_ci,
                    "fwer_intervals_se": fwer_ci_se,
                    "size": size,
                    "size_se": size_se,
                    "size_family": size_f,
                    "size_family_se": size_f_se,
                    "holds": fwer <= ALPHA + 2 * fwer_se and fwer_ci <= ALPHA + 2 * fwer_ci_se,
                }
            )
    return rows


def table(rows: list[dict]) -> str:
    lines = [
        f"{'null':<8} {'n':>4} {'studies':>7} {'m':>3} {'level':>6} {'FWER Holm':>14} {'FWER CIs':>14} "
        f"{'size (0.05)':>14} {'size at level':>16} holds"
    ]
    for r in rows:
        lines.append(
            f"{r['null']:<8} {r['n']:>4} {r['replicates']:>7} {max(r['comparisons']):>3} {max(r['interval_level']):>6.3f} "
            f"{r['fwer_holm']:>8.3f}±{r['fwer_holm_se']:.3f} {r['fwer_intervals']:>8.3f}±{r['fwer_intervals_se']:.3f} "
            f"{r['size']:>8.3f}±{r['size_se']:.3f} {r['size_family']:>10.4f}±{r['size_family_se']:.4f} "
            f"{'yes' if r['holds'] else 'NO'}"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--replicates", type=int, default=2000)
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--nulls", default=",".join(NULLS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    nulls = tuple(v for v in args.nulls.split(",") if v)
    unknown = sorted(set(nulls) - set(NULLS))
    if unknown:
        parser.error(f"unknown null(s) {', '.join(unknown)}; known: {', '.join(NULLS)}")
    started = time.perf_counter()
    rows = run(args.replicates, tuple(int(v) for v in args.sizes.split(",")), nulls, args.seed)
    settings = {
        "replicates": args.replicates,
        "sizes": args.sizes,
        "nulls": list(nulls),
        "seed": args.seed,
        "seconds": round(time.perf_counter() - started, 1),
    }
    if args.json:
        print(json.dumps({"rows": rows, "settings": settings}, indent=1))
        return
    print(f"{args.replicates} studies per cell; target FWER <= 0.05 + 2 MC SE")
    print(table(rows))


if __name__ == "__main__":
    main()
