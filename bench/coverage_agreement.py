"""Coverage of the agreement intervals at 30, 50 and 100 items (issue 26): which interval family keeps 0.95.

    python -m bench.coverage_agreement [--replicates 1000] [--sizes 30,50,100] [--resamples 1000] [--json]

Each replicate draws a study of n items from a design with known truth, computes every coefficient's
interval in every family of :data:`metrics.agreement.FAMILIES` (percentile, BCa with a jackknife over items,
atanh ± t(n − 1)·bootstrap SE, the same with the jackknife SE, studentized bootstrap) and counts how often
it covers the truth.  The unit of resampling is the item (an item's votes move together); the raters of a
design are fixed, so the truth is the coefficient of that rater pool on infinitely many items, computed as
the same estimator on :data:`TRUTH_ITEMS` = 200,000 simulated items (its own Monte-Carlo error, about
0.002, is well below the coverage's).  Designs (``DESIGNS``):

- ``normal``: binary votes, 3 per item, vote = [t + e > 0.3], t ~ N(0, 1), e ~ N(0, 1);
- ``fixture_fga``: the 15 dialogues of the shared fixtures (fga_human_eval, trade_predictions) read with
  our readers and scored with FGA(λ = 0.5); an item is one of them drawn at random, its probability of a
  "satisfied" vote Φ(1.5 · standardised FGA + N(0, 0.7²)), 3 binary votes;
- ``rater_bias``: a fixed pool of 6 annotators with offsets −0.8 … 0.8 (so each has their own
  prevalence), 3 of them drawn per item, vote = [t + offset + e > 0.6];
- ``two_raters``: the same two biased annotators (offsets ∓0.5, vote = [t + offset + e > 0.4]) on every
  item, where Cohen's κ applies;
- ``unbalanced``: a 1-5 scale, 1-5 votes per item (uniform), vote = t + N(0, 0.8²) cut at ±0.5, ±1.5;
  α at the interval level, Fleiss' κ and AC1 over the five answers, AC2 with quadratic weights.

Estimates: Krippendorff's α (nominal for binary, interval for 1-5), Fleiss' κ, Gwet's AC1 (and AC2 on
1-5), Cohen's κ where exactly two annotators.  ``rows`` is the contract of ``bench.bench_coverage``.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

TRUTH_ITEMS = 200_000
SIZES = (30, 50, 100)
FIXTURES = Path(__file__).resolve().parent.parent.parent / "shared" / "fixtures"


def _fixture_fga() -> np.ndarray:
    """Per-dialogue FGA(0.5) of the shared fixtures' dialogues, through our readers and metrics."""
    import os

    from formats import load_dialogues
    from metrics.calibrate import FgaTerms
    from metrics.turnstats import extract

    root = Path(os.environ.get("DST_JUDGE_FIXTURES", FIXTURES))
    values = []
    for folder in ("fga_human_eval", "trade_predictions"):
        stats = extract(load_dialogues([root / folder]))
        values.append(FgaTerms.from_statistics(stats, stats.dialogue_ids).fga([0.5])[:, 0])
    return np.concatenate(values)


def _counts_from_binary(votes: np.ndarray, voted: np.ndarray) -> np.ndarray:
    """items × 2 counts from an items × raters 0/1 matrix and its mask."""
    ones = (votes * voted).sum(axis=1)
    return np.stack([voted.sum(axis=1) - ones, ones], axis=1).astype(float)


class Design:
    """One simulation design: ``draw(rng, n)`` → (counts, two-rater codes or None)."""

    name = ""
    q = 2
    level = "nominal"
    cohen = False

    def __init__(self):
        self.values = np.arange(self.q, dtype=float) + (1.0 if self.q == 5 else 0.0)
        self.weights = None
        if self.q == 5:
            from metrics.agreement import agreement_weights

            self.weights = agreement_weights(self.values, "quadratic")

    def draw(self, rng, n):
        raise NotImplementedError


class Normal(Design):
    name = "normal"

    def draw(self, rng, n):
        t = rng.normal(size=(n, 1))
        votes = (t + rng.normal(size=(n, 3)) > 0.3).astype(float)
        return _counts_from_binary(votes, np.ones_like(votes)), None


class FixtureFga(Design):
    name = "fixture_fga"

    def __init__(self):
        super().__init__()
        fga = _fixture_fga()
        self.z = (fga - fga.mean()) / fga.std()

    def draw(self, rng, n):
        from scipy.stats import norm

        p = norm.cdf(1.5 * self.z[rng.integers(0, self.z.size, n)] + rng.normal(scale=0.7, size=n))
        votes = (rng.random((n, 3)) < p[:, None]).astype(float)
        return _counts_from_binary(votes, np.ones_like(votes)), None


class RaterBias(Design):
    name = "rater_bias"
    offsets = np.linspace(-0.8, 0.8, 6)

    def draw(self, rng, n):
        t = rng.normal(size=(n, 1))
        chosen = np.argsort(rng.random((n, self.offsets.size)), axis=1)[:, :3]
        votes = (t + self.offsets[chosen] + rng.normal(size=(n, 3)) > 0.6).astype(float)
        return _counts_from_binary(votes, np.ones_like(votes)), None


class TwoRaters(Design):
    name = "two_raters"
    cohen = True

    def draw(self, rng, n):
        t = rng.normal(size=(n, 1))
        votes = (t + np.array([-0.5, 0.5]) + rng.normal(size=(n, 2)) > 0.4).astype(int)
        return _counts_from_binary(votes, np.ones_like(votes)), votes


class Unbalanced(Design):
    name = "unbalanced"
    q = 5
    level = "interval"

    def draw(self, rng, n):
        t = rng.normal(size=(n, 1))
        k = rng.integers(1, 6, n)
        voted = np.arange(5)[None, :] < k[:, None]
        codes = np.digitize(t + rng.normal(scale=0.8, size=(n, 5)), [-1.5, -0.5, 0.5, 1.5])
        counts = np.zeros((n, 5))
        np.add.at(counts, (np.repeat(np.arange(n), 5)[voted.ravel()], codes.ravel()[voted.ravel()]), 1.0)
        return counts, None


DESIGNS = (Normal, FixtureFga, RaterBias, TwoRaters, Unbalanced)


class _Cohen:
    """Cohen's κ of two annotators on shared items as a function of sums of the joint one-hot table."""

    def __init__(self, codes: np.ndarray, q: int):
        self.q = q
        self.features = np.zeros((codes.shape[0], q * q))
        self.features[np.arange(codes.shape[0]), codes[:, 0] * q + codes[:, 1]] = 1.0

    def evaluate(self, sums):
        q = self.q
        table = sums.reshape(sums.shape[:-1] + (q, q))
        total = table.sum(axis=(-2, -1))
        with np.errstate(divide="ignore", invalid="ignore"):
            observed = np.trace(table, axis1=-2, axis2=-1) / total
            chance = (table.sum(axis=-1) * table.sum(axis=-2)).sum(axis=-1) / total**2
            return {"cohen_kappa": np.where(np.isclose(chance, 1.0), np.nan, (observed - chance) / (1 - chance))}


def _statistics(design: Design, counts: np.ndarray, codes):
    from metrics.agreement import CountStatistics

    stats = [CountStatistics(counts, design.values, design.level, design.weights)]
    if design.cohen:
        stats.append(_Cohen(codes, design.q))
    return stats


def _estimates(design: Design) -> tuple[str, ...]:
    names = ("krippendorff_alpha", "fleiss_kappa", "gwet_ac1")
    if design.weights is not None:
        names += ("gwet_ac2",)
    if design.cohen:
        names += ("cohen_kappa",)
    return names


def truth(design: Design, seed: int = 12345) -> dict[str, float]:
    """Each coefficient on :data:`TRUTH_ITEMS` items of the design (the population value)."""
    rng = np.random.default_rng(seed)
    counts, codes = design.draw(rng, TRUTH_ITEMS)
    out = {}
    for stats in _statistics(design, counts, codes):
        out.update({k: float(v) for k, v in stats.evaluate(stats.features.sum(axis=0)).items()})
    return {name: out[name] for name in _estimates(design)}


def _replicate(design: Design, rng, n: int, resamples: int, studentized: bool) -> dict[str, dict[str, tuple]]:
    """Every family's interval for every estimate, for one simulated study of n items."""
    from metrics.agreement import FAMILIES, interval_families, jackknife_sums

    counts, codes = design.draw(rng, n)
    weights = rng.multinomial(n, np.full(n, 1.0 / n), size=resamples).astype(float)
    out: dict[str, dict[str, tuple]] = {}
    for stats in _statistics(design, counts, codes):
        point = stats.evaluate(stats.features.sum(axis=0))
        drawn = stats.evaluate(weights @ stats.features)
        jack = stats.evaluate(jackknife_sums(stats.features))
        inner = stats.evaluate(jackknife_sums(stats.features, weights)) if studentized else None
        for name in point:
            if name not in _estimates(design):
                continue
            finite = drawn[name][np.isfinite(drawn[name])]
            if not np.isfinite(point[name]) or finite.size < resamples / 2:
                out[name] = {}
                continue
            student = None
            if inner is not None:
                value = np.nan_to_num(inner[name])
                mean = (weights * value).sum(axis=1) / n
                se = np.sqrt((n - 1) / n * (weights * (value - mean[:, None]) ** 2).sum(axis=1))
                with np.errstate(divide="ignore", invalid="ignore"):
                    student = (drawn[name] - point[name]) / se
            jackknife = jack[name][np.isfinite(jack[name])]
            families = FAMILIES if studentized else tuple(f for f in FAMILIES if f != "studentized")
            out[name] = interval_families(float(point[name]), finite, jackknife, studentized=student, families=families)
    return out


def rows(replicates: int, sizes: Sequence[int], resamples: int, seed: int, studentized: bool = True) -> list[dict]:
    """Coverage of every (estimate, design, n, family): {"estimate", "design", "n", "family", "coverage",
    "mc_se", "replicates", "unit", "default"}; mc_se = √(c(1 − c)/R).  An interval that could not be
    computed (the coefficient undefined in that study) counts as a miss."""
    from metrics.agreement import DEFAULT_FAMILY, FAMILIES

    families = FAMILIES if studentized else tuple(f for f in FAMILIES if f != "studentized")
    out = []
    rng = np.random.default_rng(seed)
    for cls in DESIGNS:
        design = cls()
        true = truth(design)
        for n in sizes:
            hits = {(e, f): 0 for e in _estimates(design) for f in families}
            for _ in range(replicates):
                intervals = _replicate(design, rng, n, resamples, studentized)
                for estimate in _estimates(design):
                    for family, (low, high) in intervals.get(estimate, {}).items():
                        hits[estimate, family] += bool(low <= true[estimate] <= high)
            for (estimate, family), hit in hits.items():
                coverage = hit / replicates
                out.append(
                    {
                        "estimate": estimate,
                        "design": design.name,
                        "n": n,
                        "family": family,
                        "coverage": coverage,
                        "mc_se": math.sqrt(coverage * (1 - coverage) / replicates),
                        "replicates": replicates,
                        "unit": "items",
                        "default": family == DEFAULT_FAMILY,
                    }
                )
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--sizes", default="30,50,100")
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-studentized", action="store_true", help="skip the studentized bootstrap (the slow one)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    start = time.perf_counter()
    result = rows(args.replicates, sizes, args.resamples, args.seed, studentized=not args.no_studentized)
    elapsed = time.perf_counter() - start
    if args.json:
        truths = {cls.name: truth(cls()) for cls in DESIGNS}
        print(json.dumps({"rows": result, "truth": truths, "seconds": elapsed}, indent=1))
        return
    print(f"{args.replicates} replicates, {args.resamples} resamples over items, nominal 0.95; {elapsed:.0f} s")
    for row in result:
        mark = " *" if row["default"] else ""
        print(
            f"{row['estimate']:<19} {row['design']:<12} n={row['n']:<4} {row['family']:<18} "
            f"{row['coverage']:.3f} ± {row['mc_se']:.3f}{mark}"
        )


if __name__ == "__main__":
    main()
