"""Benchmark: uniform vs adaptive allocation of a fixed budget of judgements (issue 17).

    python -m bench.bench_adaptive [--replicates 60] [--budget 300] [--pool 1000] [--k 3]
                                   [--scale binary|five] [--resamples 400] [--json]
    python -m bench.bench_adaptive --seeds 5 [--replicates 60] [--budget 900] [--json]   (issue 29)

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

**``--seeds N`` (issue 29): the designer** (``metrics.design``) against uniform k = 3 at the same budget
and against the FGA study's 11 x 100, for seeds ``--seed`` .. ``--seed + N - 1`` (each its own pool and
rater population), binary and 1-5 ratings, FGA on the Analysis page's grid 0..10 and on 0.05..2 (``DESIGN_GRID``).  Here the
dialogues' quality is fixed per seed and the 20 raters are a fixed population, so each dialogue's
*expected rating over the rater population* is known exactly (:func:`expected_ratings`); the truth, the
same for every design, is the pool-level r(FGA, expected) − r(JGA, expected) and the λ maximising
r(FGA_λ, expected) (refined between grid points) — k-free.  The designer gets the population's
single-rating ICC(1,1) and the true ρ's as its prior (an oracle pilot) and answers each question with
its own design: ``comparison`` (n dialogues at random, a random m of them with k_o votes, the rest one;
r(FGA) − r(JGA) by ``metrics.design.corrected_difference``, r / √reliability with a jackknife over
dialogues, for every design, uniform k = 3 included) and ``lambda`` (one vote each but the smallest
identified overlap subset, the dialogues by Poisson sampling with π from their λ scores, each weighted
1/π; λ* as the Analysis page estimates it, ``adaptive.lambda_star(refine=True)`` on ``AnalysisSettings().grid``:
the weighted argmax refined between grid points, with a percentile bootstrap over dialogues (``--resamples``;
the page draws 1,000) — the references use the same estimator with equal weights; λ* is the argmax, which the
common factor √reliability does not move; its truth is the argmax of r(FGA_λ, expected rating) on that grid).
The λ rows also print the designer's promise (its proposal's saving at the whole budget, and the measured
saving's definition applied to its predicted widths) and its predicted width ± Monte-Carlo SE beside the
measured mean width ± SE at every share of the budget; the measured saving's SE comes from redrawing the
simulated studies.  ``--questions lambda`` runs the λ rows alone (``--scales`` the rating scales).
``saving`` = 1 − (judgements the designer needs for the reference's mean CI width) / the reference's
judgements, the designer re-run at fractions of the budget and interpolated as above.  Rows: {binary, 1-5}
x {r(FGA) − r(JGA), λ*} vs uniform k = 3, and r(FGA) − r(JGA) vs 11 x 100 (both scales); per seed and median [min, max].
The simulated raters' ICC(1,1) is about 0.26 (binary) and 0.72 (1-5): ``icc`` in the output.
``--misspecified-noise F`` (the README's assumptions row, F = 2): the designer is told the rater noise
(the variance of one vote around the dialogue's expected rating) F times smaller than the truth's, the
dialogue variance right, i.e. ICC between / (between + within / F) (``icc_assumed``); the votes, the
estimator and the references are unchanged, so only the designer's n, m and k_o move.
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from metrics import adaptive
from metrics.design import DESIGN_GRID, analysis_grid  # the λ a pool is scored on; the Analysis page's grid (0..10)

LAMBDA_GRID = tuple(round(x, 2) for x in np.linspace(0.05, 1.0, 20))
FRACTIONS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


def pool_metrics(n_pool: int, synthetic: int, seed: int = 0, grid=LAMBDA_GRID) -> dict[str, np.ndarray]:
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
    settings = ScoreSettings(lambdas=tuple(grid), lambda_labels=tuple(f"{x:g}" for x in grid))
    _ids, values = per_dialogue_metrics(dialogues, settings)
    jga = values["jga"]
    fga = np.column_stack([values[f"fga_{x:g}"] for x in grid])
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


# ---------------------------------------------------------------- issue 29: the designer vs uniform k = 3 and 11 x 100

N_RATERS = 20
RATER_SD = 0.3
FIVE_NOISE = 0.7
DESIGNER_FRACTIONS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
FGA_FRACTIONS = (0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.7, 1.0)


def expected_ratings(quality: np.ndarray, bias: np.ndarray, scale: str) -> tuple[np.ndarray, np.ndarray]:
    """Each dialogue's expected rating over the rater population (``bias``: the raters) and the variance
    of one vote around it (rater and response noise): exact, no simulation."""
    from scipy.stats import norm

    latent = quality[:, None] + bias[None, :]
    if scale == "binary":
        p = 1 / (1 + np.exp(-latent))
        first, second = p, p
    else:  # clip(rint(3 + latent + N(0, 0.7)), 1, 5): P(vote >= c + 0.5) for c = 1.5 .. 4.5
        cuts = np.array([1.5, 2.5, 3.5, 4.5])
        above = norm.cdf((3 + latent[..., None] - cuts) / FIVE_NOISE)  # P(vote >= 2), ..., P(vote >= 5)
        probs = np.concatenate([1 - above[..., :1], above[..., :-1] - above[..., 1:], above[..., -1:]], axis=-1)
        values = np.arange(1, 6, dtype=float)
        first, second = probs @ values, probs @ values**2
    expected = first.mean(axis=1)
    return expected, second.mean(axis=1) - expected**2


class PopulationRaters:
    """A fixed population of raters (bias SD 0.3) and dialogues of fixed quality: votes for any design,
    and the expected rating over the population (the k-free truth)."""

    def __init__(self, quality: np.ndarray, scale: str, rng: np.random.Generator, n_raters: int = N_RATERS):
        self.quality, self.scale, self.rng = quality, scale, rng
        self.bias = rng.normal(0, RATER_SD, n_raters)
        self.expected, within = expected_ratings(quality, self.bias, scale)
        between = float(self.expected.var())
        self.icc = between / (between + float(within.mean()))  # the population single-rating ICC(1,1)

    def matrix(self, rows: np.ndarray, k: np.ndarray) -> np.ndarray:
        """Votes on ``rows``, k[i] distinct raters each: rows x max(k), NaN past a dialogue's k."""
        width = int(k.max())
        raters = self.rng.random((rows.size, len(self.bias))).argsort(axis=1)[:, :width]
        latent = self.quality[rows][:, None] + self.bias[raters]
        if self.scale == "binary":
            votes = (self.rng.random(latent.shape) < 1 / (1 + np.exp(-latent))).astype(float)
        else:
            votes = np.clip(np.rint(3 + latent + self.rng.normal(0, FIVE_NOISE, latent.shape)), 1, 5)
        votes[np.arange(width)[None, :] >= k[:, None]] = np.nan
        return votes


def assumed_icc(icc: float, factor: float) -> float:
    """The ICC(1,1) a pilot reports when it sees the rater noise (the variance of one vote around the
    dialogue's expected rating) ``factor`` times smaller than the truth, the dialogue variance right:
    between / (between + within / factor).  ``factor`` 1: the true ICC."""
    if factor <= 0:
        raise ValueError(f"the noise factor must be positive, got {factor}")
    if factor == 1:  # exactly the true ICC: the committed figures reproduce bit for bit
        return icc
    return icc / (icc + (1 - icc) / factor)


def _r(x: np.ndarray, y: np.ndarray) -> float:
    return float(np.corrcoef(x, y)[0, 1])


def _needed(fractions, widths, target) -> float:
    """The budget fraction whose mean width reaches ``target`` (linear between the measured fractions;
    by 1/√n beyond them)."""
    fractions, widths = np.asarray(fractions, dtype=float), np.asarray(widths, dtype=float)
    if widths[-1] > target:
        return float(fractions[-1] * (widths[-1] / target) ** 2)
    if widths[0] <= target:
        return float(fractions[0] * (widths[0] / target) ** 2)
    i = int(np.flatnonzero(widths <= target)[0])
    f0, f1, w0, w1 = fractions[i - 1], fractions[i], widths[i - 1], widths[i]
    return float(f0 + (w0 - target) / (w0 - w1) * (f1 - f0))


def _seed_scale(data: dict, scale: str, seed: int, args) -> dict:
    """One seed, one rating scale: the four comparisons (designer vs uniform k = 3 for r(FGA) − r(JGA)
    and λ*; designer vs 11 x 100 for r(FGA) − r(JGA))."""
    from metrics.calibrate import refined_argmax
    from metrics.design import corrected_difference, design

    n_pool = len(data["jga"])
    fga_at, jga, fga = data["fga_at"], data["jga"], data["fga"]
    page, on_page, score_columns = data["page_grid"], data["fga_page"], data["fga_scores"]
    rng = np.random.default_rng([seed, 29, 0 if scale == "binary" else 1])
    z = (fga_at - fga_at.mean()) / fga_at.std()
    raters = PopulationRaters(1.2 * z + rng.normal(0, args.quality_noise, n_pool), scale, rng)
    expected = raters.expected
    r_a, r_b = _r(fga_at, expected), _r(jga, expected)
    icc_assumed = assumed_icc(raters.icc, args.misspecified_noise)
    centred = on_page - on_page.mean(axis=0)
    truth_curve = (centred.T @ (expected - expected.mean())) / (
        np.sqrt((centred**2).sum(axis=0)) * np.sqrt(((expected - expected.mean()) ** 2).sum())
    )
    truths = {
        "fga_vs_jga": r_a - r_b,
        # the λ maximising r(FGA_λ, expected rating) on the Analysis page's grid, refined as the page refines λ*
        "lambda": float(refined_argmax(truth_curve, page)),
    }
    grid_scores = {f"fga_{lam:g}": fga[:, j] for j, lam in enumerate(DESIGN_GRID)}
    lambda_scores = adaptive.lambda_scores(score_columns)  # as the store scores a dialogue for the question 'lambda'

    lam_key = f"fga_{float(args.truth):g}"

    def propose(budget: float):
        return design(
            "comparison",
            {"fga": fga_at, "jga": jga},
            budget=int(round(budget)),
            icc=icc_assumed,
            r_a=r_a,
            r_b=r_b,
            metric_a="fga",
            metric_b="jga",
        ).proposal

    lambda_pi = {}  # expected n -> π over the pool (the λ question's scores; issue 17's draw)
    wanted = set(args.questions)

    def simulate(question: str, n: int, m: int, k_o: int, weighted: bool = False) -> dict:
        """``replicates`` draws of the design (n dialogues at random, m of them with k_o votes, the rest 1).
        ``weighted`` (the designer's λ design): the n dialogues by Poisson sampling with π from the λ scores
        (expected n), a random m of those drawn with k_o votes, each weighted 1/π."""
        truth = truths[question]
        estimates, widths, covered, failed = [], [], [], 0
        for rep in range(args.replicates):
            if weighted:
                if n not in lambda_pi:
                    lambda_pi[n] = adaptive.inclusion_probabilities(lambda_scores, expected=n)
                pi = lambda_pi[n]
                rows = np.flatnonzero(adaptive.poisson_sample(pi, rng))
                weights = 1 / pi[rows]
            else:
                rows = np.sort(rng.choice(n_pool, size=n, replace=False))
                weights = np.ones(n)
            size = rows.size
            k = np.ones(size, dtype=int)
            k[rng.choice(size, size=min(m, size), replace=False)] = k_o
            votes = raters.matrix(rows, k)
            if question == "fga_vs_jga":
                try:
                    est = corrected_difference(fga_at[rows], jga[rows], votes)
                except ValueError:  # not identified in this draw (ICC estimate <= 0)
                    failed += 1
                    continue
                value, low, high = est.estimate, est.low, est.high
            else:  # λ* as the Analysis page estimates it (metrics.analysis.design_summary), on its grid
                row = adaptive.lambda_star(
                    on_page[rows],
                    page,
                    np.nanmean(votes, axis=1),
                    weights,
                    resamples=args.resamples,
                    seed=rep,
                    refine=True,
                )
                value, (low, high) = row["lambda_star"], (row["ci"] or (None, None))
            estimates.append(value)
            if low is not None:
                widths.append(high - low)
                covered.append(low <= truth <= high)
        est = np.array(estimates, dtype=float)
        return {
            "n": n,
            "m": m,
            "k_overlap": k_o,
            "judgements": n + m * (k_o - 1),
            "ci_width": float(np.mean(widths)) if widths else None,
            "ci_width_se": float(np.std(widths, ddof=1) / np.sqrt(len(widths))) if len(widths) > 1 else None,
            "ci_width_median": float(np.median(widths)) if widths else None,
            "bias": float(est.mean() - truth) if est.size else None,
            "rmse": float(np.sqrt(np.mean((est - truth) ** 2))) if est.size else None,
            "coverage": float(np.mean(covered)) if covered else None,
            "coverage_se": float(np.sqrt(np.mean(covered) * (1 - np.mean(covered)) / len(covered))) if covered else None,
            "not_identified": failed,
            "widths": [float(w) for w in widths],
        }

    def versus(question: str, reference: dict, budget: int, fractions) -> dict:
        curve, proposals = {}, {}
        for f in fractions:
            try:
                found = (
                    design("lambda", grid_scores, budget=int(round(f * budget)), icc=icc_assumed, r_a=r_a, metric_a=lam_key)
                    if question == "lambda"
                    else None
                )
                d = found.proposal if found is not None else propose(f * budget)
            except ValueError:  # the designer refuses: no identified design at this budget
                continue
            proposals[f] = found
            curve[f] = {
                **simulate(question, d.n, d.m, d.k_overlap, weighted=d.weighting == "lambda"),
                "predicted_width": d.width,
                "predicted_width_se": d.width_se,
            }
        usable = [f for f in fractions if f in curve and curve[f]["ci_width"] is not None]
        target = reference["ci_width"]
        needed = _needed(usable, [curve[f]["ci_width"] for f in usable], target) if usable and target else None
        # the measured saving's Monte-Carlo SE: the replicates redrawn (with replacement) at every budget
        draws = []
        boot = np.random.default_rng([seed, 40])
        for _ in range(200 if needed is not None else 0):
            t = float(np.mean(boot.choice(reference["widths"], len(reference["widths"]))))
            w = [float(np.mean(boot.choice(curve[f]["widths"], len(curve[f]["widths"])))) for f in usable]
            draws.append(1 - _needed(usable, w, t))
        out = {
            "truth": truths[question],
            "reference": {k: v for k, v in reference.items() if k != "widths"},
            "designer": None if 1.0 not in curve else {k: v for k, v in curve[1.0].items() if k != "widths"},
            "designer_by_budget": {
                f"{f:g}": {
                    k: curve[f][k]
                    for k in (
                        "n",
                        "m",
                        "k_overlap",
                        "judgements",
                        "ci_width",
                        "ci_width_se",
                        "predicted_width",
                        "predicted_width_se",
                    )
                }
                for f in usable
            },
            "saving": None if needed is None else 1 - needed,
            "saving_se": float(np.std(draws, ddof=1)) if len(draws) > 1 else None,
        }
        if question == "lambda":  # what the designer promises at the whole budget, and on its own widths
            whole = proposals.get(1.0)
            out["predicted_saving"] = None if whole is None else whole.saving_vs_uniform()
            out["predicted_reference_width"] = None if whole is None or whole.uniform_k3 is None else whole.uniform_k3.width
            predicted = [curve[f]["predicted_width"] for f in usable]
            ref_predicted = out["predicted_reference_width"]
            out["predicted_saving_by_budget"] = (
                None if not usable or not ref_predicted else 1 - _needed(usable, predicted, ref_predicted)
            )
        return out

    budget = args.budget
    n3 = budget // 3
    out = {"icc": raters.icc, "icc_assumed": icc_assumed, "r_fga": r_a, "r_jga": r_b}
    for question in ("fga_vs_jga", "lambda"):
        if question in wanted:
            out[question] = versus(question, simulate(question, n3, n3, 3), 3 * n3, DESIGNER_FRACTIONS)
    if "fga_vs_jga" in wanted:
        out["fga_vs_jga_vs_11x100"] = versus("fga_vs_jga", simulate("fga_vs_jga", 100, 100, 11), 1100, FGA_FRACTIONS)
    return out


ROWS = (
    ("binary", "fga_vs_jga", "binary r(FGA)-r(JGA) vs uniform k=3"),
    ("binary", "lambda", "binary lambda* vs uniform k=3"),
    ("five", "fga_vs_jga", "1-5 r(FGA)-r(JGA) vs uniform k=3"),
    ("five", "lambda", "1-5 lambda* vs uniform k=3"),
    ("binary", "fga_vs_jga_vs_11x100", "binary r(FGA)-r(JGA) vs 11 x 100"),
    ("five", "fga_vs_jga_vs_11x100", "1-5 r(FGA)-r(JGA) vs 11 x 100"),
)


def _spread(values) -> dict:
    v = np.array([x for x in values if x is not None], dtype=float)
    if v.size == 0:
        return {"median": None, "min": None, "max": None}
    return {"median": float(np.median(v)), "min": float(v.min()), "max": float(v.max())}


def run_seeds(args) -> dict:
    per_seed = []
    grid = np.asarray(DESIGN_GRID)
    page = analysis_grid()
    for seed in range(args.seed, args.seed + args.seeds):
        data = pool_metrics(args.pool, args.synthetic, seed, DESIGN_GRID)
        data["fga_at"] = data["fga"][:, int(np.argmin(np.abs(grid - float(args.truth))))]
        data["page_grid"] = page
        data["fga_page"] = data["fga"][:, [int(np.argmin(np.abs(grid - lam))) for lam in page]]
        data["fga_scores"] = data["fga"][:, [int(np.argmin(np.abs(grid - lam))) for lam in adaptive.SCORE_GRID]]
        per_seed.append({"seed": seed, **{scale: _seed_scale(data, scale, seed, args) for scale in args.scales}})
    rows = []
    for scale, key, label in ROWS:
        if scale not in args.scales or key.split("_vs_11x100")[0] not in args.questions:
            continue
        blocks = [s[scale][key] for s in per_seed]
        row = {"row": label, "scale": scale, "question": key, "saving": _spread([b["saving"] for b in blocks])}
        if key == "lambda":  # the designer's promise beside the measured saving, and the measured one's MC SE
            for stat in ("saving_se", "predicted_saving", "predicted_saving_by_budget"):
                row[stat] = _spread([b[stat] for b in blocks])
        for design_name in ("designer", "reference"):
            for stat in ("bias", "rmse", "coverage", "ci_width"):
                row[f"{design_name}_{stat}"] = _spread([(b[design_name] or {}).get(stat) for b in blocks])
            row[f"{design_name}_abs_bias"] = _spread(
                [abs(b[design_name]["bias"]) if b[design_name] and b[design_name]["bias"] is not None else None for b in blocks]
            )
        row["icc"] = _spread([s[scale]["icc"] for s in per_seed])
        row["icc_assumed"] = _spread([s[scale]["icc_assumed"] for s in per_seed])
        rows.append(row)
    return {
        "seeds": args.seeds,
        "replicates": args.replicates,
        "budget": 3 * (args.budget // 3),
        "pool": args.pool + args.synthetic,
        "quality_noise": args.quality_noise,
        "misspecified_noise": args.misspecified_noise,
        "truth": "pool-level correlation with each dialogue's expected rating over the rater population (k-free)",
        "resamples": args.resamples,
        "questions": list(args.questions),
        "scales": list(args.scales),
        "lambda_estimator": "the Analysis page's for a designed study: adaptive.lambda_star(refine=True), 1/π-weighted, "
        f"percentile bootstrap over the judged dialogues, on AnalysisSettings().grid ({page[0]:g}..{page[-1]:g}, {page.size} λ)",
        "summary": rows,
        "per_seed": per_seed,
    }


def print_seeds(result: dict) -> None:
    print(
        f"pool {result['pool']} dialogues, budget {result['budget']} judgements, {result['seeds']} seeds x "
        f"{result['replicates']} replicates; median [min, max] over seeds"
        + (
            f"; designer told rater noise {result['misspecified_noise']:g}x smaller than the truth"
            if result["misspecified_noise"] != 1
            else ""
        )
    )
    for row in result["summary"]:
        s, b, c = row["saving"], row["designer_abs_bias"], row["designer_coverage"]

        def fmt(d, spec=".2f"):
            return "n/a" if d["median"] is None else f"{d['median']:{spec}} [{d['min']:{spec}}, {d['max']:{spec}}]"

        print(
            f"{row['row']:<36} ICC {row['icc']['median']:.2f} (assumed {row['icc_assumed']['median']:.2f})  "
            f"saving {fmt(s)}  |bias| {fmt(b, '.3f')}  "
            f"coverage {fmt(c)}  (reference coverage {fmt(row['reference_coverage'])})"
        )
        if row["question"] == "lambda":
            print(
                f"{'':<36} predicted saving {fmt(row['predicted_saving'])} (on the predicted widths "
                f"{fmt(row['predicted_saving_by_budget'])}); measured saving's MC SE {fmt(row['saving_se'])}"
            )
    for seed in result["per_seed"]:
        for scale in result["scales"]:
            block = seed[scale].get("lambda")
            if block is None:
                continue
            print(f"seed {seed['seed']} {scale} λ*: budget fraction: predicted width ± SE / measured mean width ± SE")
            for f, cell in block["designer_by_budget"].items():
                print(
                    f"  {f:>4} n {cell['n']:>4} m {cell['m']:>3}  predicted {cell['predicted_width']:.3f} ± "
                    f"{cell['predicted_width_se']:.3f}  measured {cell['ci_width']:.3f} ± {cell['ci_width_se']:.3f}"
                )
            ref = block["reference"]
            ref, nan = block["reference"], float("nan")
            saving = block["saving"] if block["saving"] is not None else nan
            print(
                f"  uniform k=3 predicted {block['predicted_reference_width'] or nan:.3f}  measured "
                f"{ref['ci_width']:.3f} ± {ref['ci_width_se']:.3f}; saving predicted {block['predicted_saving'] or nan:.2f}, "
                f"measured {saving:.2f} ± {block['saving_se'] or nan:.2f}"
            )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--replicates", type=int, default=60)
    parser.add_argument("--budget", type=int, default=None, help="judgements (votes); 300, or 900 with --seeds")
    parser.add_argument("--pool", type=int, default=1000, help="dialogues built from the fixtures")
    parser.add_argument("--synthetic", type=int, default=1000, help="synthetic dialogues added to the pool")
    parser.add_argument("--k", type=int, default=3, help="votes per judged dialogue")
    parser.add_argument("--scale", choices=("binary", "five"), default="binary")
    parser.add_argument("--truth", default="0.5", help="the λ whose FGA drives the simulated ratings")
    parser.add_argument("--resamples", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--seeds", type=int, default=0, help="issue 29: the designer vs uniform k = 3 and 11 x 100 over this many seeds"
    )
    parser.add_argument(
        "--questions",
        default="fga_vs_jga,lambda",
        help="with --seeds: the designer's questions to measure, comma-separated (fga_vs_jga, lambda)",
    )
    parser.add_argument("--scales", default="binary,five", help="with --seeds: the rating scales, comma-separated")
    parser.add_argument(
        "--designer-studies",
        type=int,
        default=0,
        help="with --seeds: simulated studies behind each of the λ designer's widths (0: its own, 200-500; a quick run "
        "may take fewer, its predictions then less precise)",
    )
    parser.add_argument(
        "--quality-noise",
        type=float,
        default=0.6,
        help="with --seeds: SD of the dialogue quality no metric sees (larger: lower ρ's and ICC)",
    )
    parser.add_argument(
        "--misspecified-noise",
        type=float,
        default=1.0,
        help="with --seeds: the truth's rater noise (variance of one vote) is this many times what the designer is "
        "told (a too optimistic pilot: the designer gets ICC between / (between + within / F)); 1: the true ICC",
    )
    args = parser.parse_args()
    if args.misspecified_noise <= 0:
        parser.error("--misspecified-noise must be positive")
    args.questions = tuple(q.strip() for q in args.questions.split(",") if q.strip())
    args.scales = tuple(q.strip() for q in args.scales.split(",") if q.strip())
    if not set(args.questions) <= {"fga_vs_jga", "lambda"} or not args.questions:
        parser.error("--questions: fga_vs_jga, lambda")
    if not set(args.scales) <= {"binary", "five"} or not args.scales:
        parser.error("--scales: binary, five")
    if args.budget is None:
        args.budget = 900 if args.seeds else 300
    if args.seeds:
        if args.designer_studies > 0:  # the designer reads these when it simulates
            from metrics import design as designer

            designer.LAMBDA_STUDIES = designer.LAMBDA_SEARCH_STUDIES = (args.designer_studies, args.designer_studies)
        result = run_seeds(args)
        if args.json:
            print(json.dumps(result, indent=1))
        else:
            print_seeds(result)
        return
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
