"""Simulation: do the correlation intervals cover, and does Williams' test keep its level?

    python -m bench.bench_coverage [--replicates 1000] [--dialogues 50] [--votes 5] [--resamples 200] [--json]

Each replicate draws a study with known truth: a dialogue's quality t ~ N(0, 1); two metrics
A = t + N(0, 1) and B = t + N(0, 1.5²) (or both N(0, 1) for the level check); every dialogue rated by
``--votes`` annotators, y = t + N(0, 1).  Printed (the unit of resampling is the dialogue):

- pairs mode (every vote an observation): coverage of the true ρ(A, vote) by the Fisher interval with
  n = votes (what the tool did before issue 15), with n = dialogues, by the percentile bootstrap over
  dialogues, and by the interval the tool reports now (Fisher z with the bootstrap standard error over
  dialogues); Williams' false-positive rate at α = 0.05 on vote-level correlations with n = votes
  (before) and as reported now (dialogue means, n = dialogues), A and B equally good;
- mean mode: coverage of the true ρ_A − ρ_B by Zou's (2007) interval (``diff_ci``);
- raters who differ (each annotator's own slope s ~ N(1, 0.8²), the same ``--raters`` annotators
  rating every dialogue, y = s·t + N(0, 0.7²), metric t + N(0, 0.8²)): coverage of ρ at the mean slope by
  the bootstrap over dialogues and by the two-way bootstrap over dialogues and annotators (percentile
  and BCa).
"""

from __future__ import annotations

import argparse
import json
import math

import numpy as np


def study(rng, dialogues: int, votes: int, noise_b: float):
    from metrics.correlation import Ratings

    t = rng.normal(size=dialogues)
    a = t + rng.normal(size=dialogues)
    b = t + rng.normal(scale=noise_b, size=dialogues)
    dialogue = np.repeat(np.arange(dialogues), votes)
    y = t[dialogue] + rng.normal(size=dialogue.size)
    ids = [f"d{i}" for i in range(dialogues)]
    pairs = Ratings(ids, dialogue, y, "pairs", [])
    mean = Ratings(ids, np.arange(dialogues), np.bincount(dialogue, weights=y) / votes, "mean", [])
    return {"a": a, "b": b}, pairs, mean


def truth(noise: float, rating_variance: float) -> float:
    """ρ(t + N(0, noise²), t + N(0, rating_variance - 1)) with var t = 1."""
    return 1 / math.sqrt((1 + noise**2) * rating_variance)


def rater_coverage(args, rng) -> dict[str, int]:
    """Hits of ρ (at the mean slope) by the dialogue and the two-way bootstraps when raters differ."""
    from metrics.correlation import Ratings, correlation_report

    k = args.raters
    rho = 1 / math.sqrt((1 + 0.8**2) * (1 + 0.7**2 / k))
    hits = {"raters_dialogue_bootstrap": 0, "raters_two_way_bootstrap": 0, "raters_two_way_bca": 0}
    ids = [f"d{i}" for i in range(args.dialogues)]
    for _ in range(args.replicates):
        t = rng.normal(size=args.dialogues)
        metric = t + rng.normal(scale=0.8, size=args.dialogues)
        matrix = rng.normal(1.0, 0.8, size=k)[:, None] * t[None, :] + rng.normal(scale=0.7, size=(k, args.dialogues))
        ratings = Ratings(ids, np.arange(args.dialogues), matrix.mean(axis=0), "mean", [], matrix)
        seed = int(rng.integers(1 << 31))
        one = correlation_report({"m": metric}, ratings, resamples=args.resamples, seed=seed, adjust="none")["metrics"][0]
        two = correlation_report(
            {"m": metric}, ratings, resamples=args.resamples, seed=seed, adjust="none", resample="dialogues+annotators"
        )["metrics"][0]
        hits["raters_dialogue_bootstrap"] += one["bootstrap_ci"][0] <= rho <= one["bootstrap_ci"][1]
        hits["raters_two_way_bootstrap"] += two["bootstrap_ci"][0] <= rho <= two["bootstrap_ci"][1]
        hits["raters_two_way_bca"] += bool(two["bca_ci"]) and two["bca_ci"][0] <= rho <= two["bca_ci"][1]
    return hits


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--dialogues", type=int, default=50)
    parser.add_argument("--votes", type=int, default=5)
    parser.add_argument("--resamples", type=int, default=200)
    parser.add_argument("--raters", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    from metrics.correlation import correlation_report, williams_test

    rng = np.random.default_rng(args.seed)
    rho_pairs = truth(1.0, 2.0)  # a vote: var = 1 + 1
    rho_a, rho_b = truth(1.0, 1 + 1 / args.votes), truth(1.5, 1 + 1 / args.votes)  # the mean of k votes
    hits = {
        "pairs_fisher_n_votes": 0,
        "pairs_fisher_n_dialogues": 0,
        "pairs_percentile_bootstrap": 0,
        "pairs_reported_ci": 0,
        "diff_ci_zou": 0,
    }
    rejections = {"williams_pairs_n_votes": 0, "williams_reported": 0}
    for _ in range(args.replicates):
        metrics, pairs, mean = study(rng, args.dialogues, args.votes, 1.5)
        report = correlation_report(metrics, pairs, resamples=args.resamples, seed=int(rng.integers(1 << 31)), adjust="none")
        row = report["metrics"][0]
        r, n_votes = row["pearson"], row["n_votes"]
        for name, n_fisher in (("pairs_fisher_n_votes", n_votes), ("pairs_fisher_n_dialogues", args.dialogues)):
            half = 1.959963984540054 / math.sqrt(n_fisher - 3)
            hits[name] += math.tanh(math.atanh(r) - half) <= rho_pairs <= math.tanh(math.atanh(r) + half)
        hits["pairs_percentile_bootstrap"] += row["bootstrap_ci"][0] <= rho_pairs <= row["bootstrap_ci"][1]
        hits["pairs_reported_ci"] += row["pearson_ci"][0] <= rho_pairs <= row["pearson_ci"][1]
        low, high = correlation_report(metrics, mean, resamples=0, adjust="none")["williams"][0]["diff_ci"]
        hits["diff_ci_zou"] += low <= rho_a - rho_b <= high
        equal, pairs_equal, _ = study(rng, args.dialogues, args.votes, 1.0)  # A and B equally good: H0 true
        (w,) = correlation_report(equal, pairs_equal, resamples=0, adjust="none")["williams"]
        rejections["williams_reported"] += w["p_value"] < 0.05
        # before issue 15: every vote an observation, n = votes
        xa, xb, y = equal["a"][pairs_equal.dialogue], equal["b"][pairs_equal.dialogue], pairs_equal.value
        r_a, r_b, r_ab = np.corrcoef(y, xa)[0, 1], np.corrcoef(y, xb)[0, 1], np.corrcoef(equal["a"], equal["b"])[0, 1]
        rejections["williams_pairs_n_votes"] += williams_test(r_a, r_b, r_ab, y.size)[1] < 0.05
    rater_hits = rater_coverage(args, rng)
    hits.update(rater_hits)
    result = {
        "replicates": args.replicates,
        "dialogues": args.dialogues,
        "votes_per_dialogue": args.votes,
        "coverage": {k: v / args.replicates for k, v in hits.items()},
        "false_positive_rate": {k: v / args.replicates for k, v in rejections.items()},
        "truth": {"rho_pairs": rho_pairs, "rho_a_minus_rho_b": rho_a - rho_b},
    }
    if args.json:
        print(json.dumps(result, indent=1))
        return
    print(f"{args.replicates} replicates, {args.dialogues} dialogues x {args.votes} votes; nominal 0.95 / 0.05")
    for name, value in result["coverage"].items():
        print(f"coverage  {name:<24} {value:.3f}")
    for name, value in result["false_positive_rate"].items():
        print(f"false pos {name:<24} {value:.3f}")


if __name__ == "__main__":
    main()
