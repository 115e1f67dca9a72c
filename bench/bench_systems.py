"""Simulation: do the system-level intervals and tests (``metrics.systems``) hold at the sizes studies have?

    python -m bench.bench_systems [--replicates 300] [--systems 4,5,6,10,20] [--dialogues 30,100]
                                  [--resamples 1000] [--seed 0] [--json]

**The population.** 200 trackers and 2,000 dialogues, drawn once.  A tracker has a quality q ~ N(0, 1),
a style z ~ N(0, 1) (which people see and the metrics do not) and two biases β₁, β₂ ~ N(0, 0.12²); a dialogue
has 3 + Poisson(5) turns and a difficulty h ~ N(0, 1); a tracker's turn is right with probability
Φ(0.9 + 0.8 q − 0.7 h + u), u ~ N(0, 0.5²) a tracker × dialogue interaction (trackers err more in some
dialogues than others), and the turns right are drawn once.  Three metrics score the turns: ``a`` (the
exact state: JGA), ``b`` (JGA + β₁) and ``c`` (JGA + β₂): two metrics partly off by the same amount, so
b − c is the paired test's null (its population difference is near 0) and a − c its power.  People
rate a dialogue with 2-5 binary votes from a pool of 30 raters with leniency N(0, 0.6²): a vote is 1
when 2.2 (share of right turns − 0.6) + 0.35 z + leniency + N(0, 1) > 0.

**The truth** of each statistic is its value over the whole population: the 200 trackers' corpus
metrics on the 2,000 dialogues against their expected ratings (the vote rate averaged over the rater pool):
the population that resampling systems and dialogues together (BOOT-BOTH) aims at.  A test's truth is the
difference of the two metrics' population values (b − c near 0, a − c about 0.1 on Pearson).

**A study** draws k trackers and n dialogues without replacement, simulates the turns and the votes, and
runs ``metrics.systems.meta_evaluate`` as the analysis does (``resamples`` draws), with intervals and tests
from 4 systems on (the analysis gives intervals from 5 systems and tests from 6: this table is why).  The bench counts, per
statistic, how often metric a's 95% interval covers the truth and its mean width, and for the paired
tests of b − c and a − c how often the interval covers the population difference and how often p < 0.05.
MC SE of a coverage c over R studies is √(c(1 − c)/R).
"""

from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np

from metrics.systems import STATISTICS, SystemScores, meta_evaluate, statistics_of

POPULATION_SYSTEMS = 200
POPULATION_DIALOGUES = 2000
POOL = 30


def population(rng: np.random.Generator) -> dict[str, np.ndarray]:
    """The 200 trackers' turns on the 2,000 dialogues, drawn once: the finite population studies sample."""
    from scipy.stats import norm

    quality = rng.normal(size=POPULATION_SYSTEMS)
    style = rng.normal(size=POPULATION_SYSTEMS)
    bias = 0.12 * rng.normal(size=(2, POPULATION_SYSTEMS))
    difficulty = rng.normal(size=POPULATION_DIALOGUES)
    turns = 3 + rng.poisson(5, size=POPULATION_DIALOGUES)
    interaction = 0.5 * rng.normal(size=(POPULATION_SYSTEMS, POPULATION_DIALOGUES))
    p = norm.cdf(0.9 + 0.8 * quality[:, None] - 0.7 * difficulty[None, :] + interaction)
    right = rng.binomial(np.broadcast_to(turns, p.shape), p).astype(float)
    leniency = 0.6 * rng.normal(size=POOL)
    return {"style": style, "bias": bias, "turns": turns, "right": right, "leniency": leniency}


def _vote_rate(share: np.ndarray, style: np.ndarray, leniency: np.ndarray) -> np.ndarray:
    from scipy.stats import norm

    return norm.cdf(2.2 * (share - 0.6) + 0.35 * style + leniency)


def _metrics(world: dict[str, np.ndarray], systems: np.ndarray, dialogues: np.ndarray) -> dict[str, np.ndarray]:
    """Each metric's per-dialogue numerator: a (JGA); b and c (JGA plus a tracker-specific bias of about
    12 points, each its own: two metrics partly off by the same amount)."""
    turns = world["turns"][dialogues].astype(float)
    right = world["right"][np.ix_(systems, dialogues)]
    bias = world["bias"][:, systems, None] * turns[None, None, :]
    return {"a": right, "b": right + bias[0], "c": right + bias[1]}


def truth(world: dict[str, np.ndarray]) -> dict[str, dict[str, float]]:
    """Every statistic over the whole population: each tracker's corpus metric on the 2,000 dialogues
    against its expected rating (the vote rate averaged over the rater pool, per dialogue, then over the
    dialogues); for b − c and a − c, the differences of those."""
    everyone_s = np.arange(POPULATION_SYSTEMS)
    everyone_d = np.arange(POPULATION_DIALOGUES)
    share = world["right"] / world["turns"][None, :]
    style = world["style"][:, None]
    rate = np.mean([_vote_rate(share, style, lenient) for lenient in world["leniency"]], axis=0).mean(axis=1)
    found = {}
    for name, numerator in _metrics(world, everyone_s, everyone_d).items():
        corpus = numerator.sum(axis=1) / world["turns"].sum()
        values = statistics_of(corpus[None], rate[None], everyone_s[None])
        found[name] = {k: float(v[0]) for k, v in values.items()}
    return {
        **found,
        "b-c": {k: found["b"][k] - found["c"][k] for k in STATISTICS},
        "a-c": {k: found["a"][k] - found["c"][k] for k in STATISTICS},
    }


def study(world: dict[str, np.ndarray], k: int, n: int, rng: np.random.Generator) -> SystemScores:
    """One study: k trackers and n dialogues drawn from the population, 2-5 votes per tracker and dialogue
    from distinct raters of the pool."""
    systems = rng.choice(POPULATION_SYSTEMS, size=k, replace=False)
    dialogues = rng.choice(POPULATION_DIALOGUES, size=n, replace=False)
    turns = world["turns"][dialogues].astype(float)
    numerators = _metrics(world, systems, dialogues)
    share = numerators["a"] / turns[None, :]
    counts = rng.integers(2, 6, size=(k, n))
    raters = np.argsort(rng.random((k, n, POOL)), axis=2)[..., :5]  # distinct raters; the first `counts` vote
    rate = _vote_rate(share[..., None], world["style"][systems][:, None, None], world["leniency"][raters])
    votes = rng.random(rate.shape) < rate
    used = np.arange(5)[None, None, :] < counts[..., None]
    ratings = (votes & used).sum(axis=2) / counts
    denominators = np.tile(turns, (k, 1))
    return SystemScores(
        tuple(f"s{i}" for i in range(k)),
        tuple(f"d{j}" for j in range(n)),
        numerators,
        {name: denominators for name in numerators},
        ratings,
    )


def _difference(found: dict, a: str, b: str) -> tuple[float, float, float] | None:
    """The paired test of metric ``a`` against ``b`` on Pearson: its interval (as a − b) and p."""
    test = next((c for c in found["comparisons"] if {c["a"], c["b"]} == {a, b}), None)
    if test is None or test["ci"] is None or test["p"] is None:
        return None
    sign = 1.0 if test["a"] == a else -1.0
    low, high = sorted((sign * test["ci"][0], sign * test["ci"][1]))
    return low, high, test["p"]


def _rate(flags: list[bool]) -> dict[str, float | None]:
    c = np.array(flags, dtype=float)
    if not c.size:
        return {"rate": None, "mc_se": None, "studies": 0}
    return {"rate": float(c.mean()), "mc_se": float(math.sqrt(c.mean() * (1 - c.mean()) / c.size)), "studies": int(c.size)}


def run(replicates: int, systems: list[int], dialogues: list[int], resamples: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    world = population(rng)
    true = truth(world)
    rows = []
    for k in systems:
        for n in dialogues:
            covered: dict[str, list[bool]] = {s: [] for s in STATISTICS}
            widths: dict[str, list[float]] = {s: [] for s in STATISTICS}
            undefined = []
            tests: dict[str, dict[str, list]] = {pair: {"covered": [], "reject": [], "width": []} for pair in ("b-c", "a-c")}
            start = time.perf_counter()
            for r in range(replicates):
                found = meta_evaluate(
                    study(world, k, n, rng), resamples=resamples, seed=r, statistic="pearson", min_intervals=4, min_tests=4
                )
                metric_a = next(m for m in found["metrics"] if m["metric"] == "a")
                undefined.append(metric_a.get("undefined_draws", 0))
                for s in STATISTICS:
                    ci = metric_a[f"{s}_ci"]
                    if ci is not None:
                        covered[s].append(bool(ci[0] <= true["a"][s] <= ci[1]))
                        widths[s].append(ci[1] - ci[0])
                for pair, kept in tests.items():
                    test = _difference(found, *pair.split("-"))
                    if test is not None:
                        kept["covered"].append(bool(test[0] <= true[pair]["pearson"] <= test[1]))
                        kept["reject"].append(test[2] < 0.05)
                        kept["width"].append(test[1] - test[0])
            row: dict = {"systems": k, "dialogues": n, "replicates": replicates, "seconds": time.perf_counter() - start}
            for s in STATISTICS:
                row[s] = {**_rate(covered[s]), "width": float(np.mean(widths[s])) if widths[s] else None}
            for pair, kept in tests.items():
                row[pair] = {
                    "coverage": _rate(kept["covered"]),
                    "rejects": _rate(kept["reject"]),
                    "width": float(np.mean(kept["width"])) if kept["width"] else None,
                }
            row["undefined_draws"] = float(np.mean(undefined)) / resamples
            rows.append(row)
    return {"truth": true, "resamples": resamples, "seed": seed, "rows": rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=300)
    parser.add_argument("--systems", default="4,5,6,10,20")
    parser.add_argument("--dialogues", default="30,100")
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    result = run(
        args.replicates,
        [int(v) for v in args.systems.split(",")],
        [int(v) for v in args.dialogues.split(",")],
        args.resamples,
        args.seed,
    )
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    truth_a = ", ".join(f"{s} {result['truth']['a'][s]:.3f}" for s in STATISTICS)
    print(f"population truth of metric a: {truth_a}")
    print(f"b − c (Pearson, null): {result['truth']['b-c']['pearson']:.4f}; a − c: {result['truth']['a-c']['pearson']:.4f}")
    print("coverage ± MC SE (mean width) of metric a's 95% intervals; the paired tests b − c (null) and a − c:")
    print(f"{'k':>3} {'n':>4}  " + "  ".join(f"{s:>20}" for s in STATISTICS) + "   b−c cover (p<.05)   a−c cover (p<.05)")
    for row in result["rows"]:
        cells = []
        for s in STATISTICS:
            cell = row[s]
            text = "—" if cell["rate"] is None else f"{cell['rate']:.3f}±{cell['mc_se']:.3f} ({cell['width']:.2f})"
            cells.append(text.rjust(20))
        for pair in ("b-c", "a-c"):
            d = row[pair]
            text = "—" if d["coverage"]["rate"] is None else f"{d['coverage']['rate']:.3f} ({d['rejects']['rate']:.3f})"
            cells.append(text.rjust(18))
        print(f"{row['systems']:>3} {row['dialogues']:>4}  " + "  ".join(cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
