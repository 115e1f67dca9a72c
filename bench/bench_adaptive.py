"""Benchmark: uniform vs adaptive allocation of a fixed budget of judgements (issue 17).

    python -m bench.bench_adaptive [--replicates 60] [--budget 300] [--pool 1000] [--k 3]
                                   [--scale binary|five] [--resamples 400] [--json]

The pool is the fixture dialogues repeated with seeded perturbations of their predictions
(``bench/corpus.py``, as the other benches use) plus, with ``--synthetic N``, N synthetic
dialogues whose metric scores are drawn around the pool's.  Every dialogue's JGA and FGA (at a λ grid)
is computed by ``metrics`` from its belief states.  Simulated annotators: a pool of 20 raters with
their own bias (logit / scale offset, SD 0.3) rate a dialogue from its hidden quality, which follows
the chosen metric (``--truth fga_0.5`` by default) plus dialogue noise; binary votes
(Bernoulli of the logistic) or 1-5 ratings (the rounded normal), k votes per judged dialogue.

For each question (r(FGA) - r(JGA); λ*) and each replicate: *uniform* judges budget / k
dialogues drawn at random; *adaptive* draws dialogues with the probabilities of
``metrics.adaptive`` (expected budget / k dialogues) and weights them by 1/π.  The truth is the
same estimator on the whole pool, averaged over 20 draws of its votes (what judging every dialogue
k times would give).  Reported per design: mean CI width, RMSE, bias and CI coverage; ``saving``
= 1 - (judgements adaptive needs for uniform's mean CI width) / budget, found by running adaptive
at smaller budgets and interpolating (negative: adaptive needs more).
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from metrics import adaptive

LAMBDA_GRID = tuple(round(x, 2) for x in np.linspace(0.05, 1.0, 20))
FRACTIONS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


def pool_metrics(n_pool: int, synthetic: int, seed: int = 0) -> dict[str, np.ndarray]:
    """JGA and FGA over the λ grid for every dialogue of the pool."""
    import tempfile
    from pathlib import Path

    from bench.corpus import build
    from formats import load_dialogues
    from metrics.analysis import per_dialogue_metrics
    from metrics.corpus import ScoreSettings

    with tempfile.TemporaryDirectory() as work:
        path = Path(work) / "pool.json"
        path.write_text(json.dumps(build(n_pool, seed=seed)))
        dialogues = load_dialogues([path])
    settings = ScoreSettings(lambdas=LAMBDA_GRID, lambda_labels=tuple(f"{x:g}" for x in LAMBDA_GRID))
    _ids, values = per_dialogue_metrics(dialogues, settings)
    jga = values["jga"]
    fga = np.column_stack([values[f"fga_{x:g}"] for x in LAMBDA_GRID])
    if synthetic:
        rng = np.random.default_rng(seed + 1)
        rows = rng.integers(0, len(jga), synthetic)
        jitter = rng.normal(0, 0.05, synthetic)
        jga = np.concatenate([jga, np.clip(jga[rows] + jitter, 0, 1)])
        fga = np.vstack([fga, np.clip(fga[rows] + jitter[:, None] + rng.normal(0, 0.03, (synthetic, 1)), 0, 1)])
    return {"jga": jga, "fga": fga}


class Raters:
    """A pool of simulated annotators rating dialogues of known quality."""

    def __init__(self, quality: np.ndarray, scale: str, rng: np.random.Generator, n_raters: int = 20):
        self.quality, self.scale, self.rng = quality, scale, rng
        self.bias = rng.normal(0, 0.3, n_raters)

    def votes(self, rows: np.ndarray, k: int) -> np.ndarray:
        """k votes on each of ``rows``: a rows x k array."""
        raters = np.array([self.rng.choice(len(self.bias), size=k, replace=False) for _ in rows]).reshape(len(rows), k)
        latent = self.quality[rows][:, None] + self.bias[raters]
        if self.scale == "binary":
            return (self.rng.random(latent.shape) < 1 / (1 + np.exp(-latent))).astype(float)
        return np.clip(np.rint(3 + latent + self.rng.normal(0, 0.7, latent.shape)), 1, 5)


def _estimate(question, data, rows, weights, rating, resamples, seed):
    if question == "fga_vs_jga":
        row = adaptive.compare(data["fga_at"][rows], data["jga"][rows], rating, weights, resamples=resamples, seed=seed)
        return row["diff"], row["ci"], row["ci_width"]
    row = adaptive.lambda_star(data["fga"][rows], LAMBDA_GRID, rating, weights, resamples=resamples, seed=seed)
    return row["lambda_star"], row["ci"], row["ci_width"]


def run_question(question: str, data: dict, args, rng: np.random.Generator) -> dict:
    n_pool = len(data["jga"])
    fga_at = data["fga_at"]
    z = (fga_at - fga_at.mean()) / fga_at.std()
    scores = (
        adaptive.comparison_scores(data["fga_at"], data["jga"])
        if question == "fga_vs_jga"
        else adaptive.lambda_scores(data["fga"])
    )

    def quality():  # the hidden quality of each dialogue: the chosen metric plus what no metric sees
        return 1.2 * z + rng.normal(0, 0.6, n_pool)

    # truth: the estimator on the whole pool, k votes per dialogue, averaged over draws
    truth_values = []
    for _ in range(20):
        raters = Raters(quality(), args.scale, rng)
        rating = raters.votes(np.arange(n_pool), args.k).mean(axis=1)
        truth_values.append(_estimate(question, data, np.arange(n_pool), np.ones(n_pool), rating, 0, 0)[0])
    truth = float(np.mean(truth_values))

    def design(kind: str, budget: float) -> list[tuple[float, list | None, float | None, int]]:
        out = []
        for rep in range(args.replicates):
            raters = Raters(quality(), args.scale, rng)
            n = int(round(budget / args.k))
            if kind == "uniform":
                rows = np.sort(rng.choice(n_pool, size=n, replace=False))
                weights = np.ones(n)
            else:
                pi = adaptive.inclusion_probabilities(scores, expected=n)
                rows = np.flatnonzero(adaptive.poisson_sample(pi, rng))
                weights = 1 / pi[rows]
            rating = raters.votes(rows, args.k).mean(axis=1)
            estimate, ci, width = _estimate(question, data, rows, weights, rating, args.resamples, rep)
            out.append((estimate, ci, width, len(rows) * args.k))
        return out

    def summary(results) -> dict:
        estimates = np.array([r[0] for r in results], dtype=float)
        widths = [r[2] for r in results if r[2] is not None]
        covered = [r[1][0] <= truth <= r[1][1] for r in results if r[1] is not None]
        return {
            "ci_width": float(np.mean(widths)) if widths else None,
            "rmse": float(np.sqrt(np.nanmean((estimates - truth) ** 2))),
            "bias": float(np.nanmean(estimates) - truth),
            "coverage": float(np.mean(covered)) if covered else None,
            "judgements": float(np.mean([r[3] for r in results])),
        }

    uniform = summary(design("uniform", args.budget))
    curve = {f: summary(design("adaptive", f * args.budget)) for f in FRACTIONS}
    adaptive_row = curve[1.0]
    target = uniform["ci_width"]
    fractions = np.array(FRACTIONS)
    widths = np.array([curve[f]["ci_width"] for f in FRACTIONS])
    if widths[-1] > target:  # even the whole budget is wider: extrapolate by 1/sqrt(n)
        needed = (widths[-1] / target) ** 2
    elif widths[0] <= target:
        needed = fractions[0] * (widths[0] / target) ** 2
    else:
        i = int(np.flatnonzero(widths <= target)[0])  # first fraction that reaches the target
        f0, f1, w0, w1 = fractions[i - 1], fractions[i], widths[i - 1], widths[i]
        needed = f0 + (w0 - target) / (w0 - w1) * (f1 - f0)
    return {
        "truth": truth,
        "uniform": uniform,
        "adaptive": adaptive_row,
        "adaptive_by_budget": {
            f"{f:g}": {"judgements": curve[f]["judgements"], "ci_width": curve[f]["ci_width"]} for f in FRACTIONS
        },
        "saving": float(1 - needed),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--replicates", type=int, default=60)
    parser.add_argument("--budget", type=int, default=300, help="judgements (votes)")
    parser.add_argument("--pool", type=int, default=1000, help="dialogues built from the fixtures")
    parser.add_argument("--synthetic", type=int, default=1000, help="synthetic dialogues added to the pool")
    parser.add_argument("--k", type=int, default=3, help="votes per judged dialogue")
    parser.add_argument("--scale", choices=("binary", "five"), default="binary")
    parser.add_argument("--truth", default="0.5", help="the λ whose FGA drives the simulated ratings")
    parser.add_argument("--resamples", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    data = pool_metrics(args.pool, args.synthetic, args.seed)
    data["fga_at"] = data["fga"][:, LAMBDA_GRID.index(round(float(args.truth), 2))]
    rng = np.random.default_rng(args.seed)
    result = {
        "replicates": args.replicates,
        "budget": args.budget,
        "pool": len(data["jga"]),
        "k": args.k,
        "scale": args.scale,
        "fga_vs_jga": run_question("fga_vs_jga", data, args, rng),
        "lambda": run_question("lambda", data, args, rng),
    }
    if args.json:
        print(json.dumps(result, indent=1))
        return
    print(
        f"pool {result['pool']} dialogues, budget {args.budget} judgements (k = {args.k}, {args.scale}), "
        f"{args.replicates} replicates"
    )
    for question in ("fga_vs_jga", "lambda"):
        q = result[question]
        print(f"{question}: truth {q['truth']:.3f}; saving {q['saving']:.2f}")
        for design in ("uniform", "adaptive"):
            d = q[design]
            print(
                f"  {design:<9} CI width {d['ci_width']:.3f}  RMSE {d['rmse']:.3f}  bias {d['bias']:+.3f}  "
                f"coverage {d['coverage']:.2f}  judgements {d['judgements']:.0f}"
            )


if __name__ == "__main__":
    main()
