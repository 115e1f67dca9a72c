"""Simulation: do the intervals keep 0.95 at the sizes studies have (30, 50 and 100 dialogues)?

    python -m bench.bench_coverage [--replicates 1000] [--sizes 30,50,100] [--resamples 1000] [--seed 0] [--json]
                                   [--designs normal,...] [--estimates spearman,kendall]

Every estimate the correlation analysis reports with an interval, under five designs, each interval
family beside the default (``metrics.correlation``).  Rows: ``{"estimate", "design", "n", "family",
"coverage", "mc_se", "replicates", "unit", "default"}``, ``mc_se`` = √(c(1 − c)/R), the Monte-Carlo
standard error of the coverage c over R replicates (an interval that could not be computed counts as a
miss).  ``SECTIONS`` lists the functions ``f(replicates, sizes, resamples, seed) -> rows`` the bench
runs (other estimates' coverage appends its own).

Designs (quality t ~ N(0, 1) of a dialogue unless said; metric A = t + noise, metric B noisier; every
design draws its annotators from a pool, so the two-way bootstrap has annotators to draw):

- ``normal``: A = t + N(0, 1), B = t + N(0, 1.5²), 5 votes y = t + N(0, 1), a pool of 20 alike annotators;
- ``fixture_binary``: real dialogues, 300 of bench.corpus (the 10 FGA human-evaluation and 5 TRADE
  dialogues with seeded prediction errors), scored by our readers and metrics: A = FGA(0.5), B = JGA per
  dialogue; a dialogue's latent quality q = 1.2·z(FGA) + N(0, 0.8²) and 3 binary votes ~ Bernoulli(Φ(q −
  0.3)); the n dialogues of a study drawn from the 300 with replacement;
- ``rater_pool``: A = t + N(0, 0.8²), B = t + N(0, 1.2²); a pool of 12 annotators, each with an offset
  N(0, 0.5²) and a slope N(1, 0.3²), y = offset + slope·t + N(0, 0.7²), 3 of the pool per dialogue;
- ``same_4_annotators``: the same 4 annotators rate every dialogue, slopes N(1, 0.8²), offsets N(0,
  0.5²), y = offset + slope·t + N(0, 0.7²), A and B as in rater_pool;
- ``unbalanced``: the normal design with 1-5 votes per dialogue (uniform);
- ``tied_votes`` (heavy ties, as a tracker that errs in some dialogues only): each dialogue has 4-12 turns
  and a difficulty h ~ N(0, 1); each turn is wrong with probability Φ(−1.65 + h), with 1 + Poisson(0.6)
  wrong slots; A = the mean over turns of exp(−0.5 · wrong slots) (an FGA-like score), B = JGA (the share
  of turns without a wrong slot), both 1 on the ~59% of dialogues without an error (64-72% of a study's
  values tied); a latent quality q = 0.6 − 8·(1 − A) + N(0, 0.7²); a pool of 30 annotators, each with a
  leniency N(0, 0.6²); 2-5 of them (uniform) per dialogue, each voting 1 when q + leniency + N(0, 1) > 0;
  the rating the mean of those binary votes.

Truth: the population value of what each estimate estimates, the annotators being a sample of a
population of annotators: r of A with the mean rating (``pearson_mean``, ``pearson_two_way``), with a
single vote (``pearson_pairs``), ρ_A − ρ_B (``diff``), √ of the mean rating's reliability
(``ceiling``: ICC(1,1) / (ICC + (1 − ICC)·E[1/k])), Spearman's and Kendall's coefficients (``spearman``,
``kendall``).  Exact (closed form) for the normal designs' Pearson and ceiling values and, with
bivariate normality, rank coefficients (Spearman 6/π·asin(ρ/2), Kendall 2/π·asin ρ); the fixture
design's by Gauss-Hermite quadrature over the latent noise, exact over the 300 dialogues; for
same_4_annotators ρ at the population's mean slope (1, as the bench of issue 15 did; in pairs mode, votes
pooled over annotators, their offsets' and slopes' variance is in a vote's); rank coefficients
of non-normal designs from one simulation of 400,000 dialogues (Monte-Carlo error about 0.002); the
tied_votes design's Pearson and ceiling values from the same kind of simulation, with each dialogue's
probability of a vote of 1 over the population of annotators, Φ(q / √(1 + 0.6²)), in closed form.  The
ceiling is not simulated for same_4_annotators: a fixed crossed panel is outside its one-way model.

``--designs`` and ``--estimates`` run a part of the correlation section alone (``--estimates`` skips the
other sections); the rank coefficients' intervals need no bootstrap and no second metric, so ``--estimates
spearman,kendall`` computes only those, and ``--estimates diff`` the difference's intervals that need no bootstrap
(the default, Zou's MOVER from jackknife-t and from Fisher intervals), on the same simulated studies as a
full run with the same seed.
``williams_rows``: Williams' test's level (the share of studies that do not reject two equally good
metrics, nominal 0.95), on dialogue means (reported) and on vote-level r with n = votes (before issue 15).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from functools import cache, lru_cache

import numpy as np

from bench import coverage_agreement, coverage_lambda

DESIGNS = ("normal", "fixture_binary", "rater_pool", "same_4_annotators", "unbalanced", "tied_votes")
RANK_ESTIMATES = ("spearman", "kendall")  # their intervals need neither a bootstrap nor metric B
SIZES = (30, 50, 100)
# Design parameters, named once (the docstring says them in words)
FIXTURE = {"dialogues": 300, "beta": 1.2, "noise": 0.8, "shift": 0.3, "votes": 3}
POOL = {"size": 12, "offset": 0.5, "slope": 0.3, "noise": 0.7, "votes": 3, "a": 0.8, "b": 1.2}
SAME_4 = {"size": 4, "offset": 0.5, "slope": 0.8, "noise": 0.7, "a": 0.8, "b": 1.2}
TIED = {
    "turns": (4, 12),  # per dialogue, uniform
    "base": -1.65,  # a turn is wrong with probability Φ(base + h), h ~ N(0, 1) the dialogue's difficulty
    "extra_slots": 0.6,  # a wrong turn has 1 + Poisson(extra_slots) wrong slots
    "decay": 0.5,  # a turn's A score: exp(−decay · wrong slots)
    "shift": 0.6,  # latent quality q = shift − weight · (1 − A) + N(0, noise²)
    "weight": 8.0,
    "noise": 0.7,
    "pool": 30,  # annotators per study, each with a leniency N(0, leniency²)
    "leniency": 0.6,
    "votes": (2, 5),  # distinct annotators per dialogue, uniform
}


@lru_cache(maxsize=1)
def fixture_pool() -> tuple[np.ndarray, np.ndarray]:
    """Per-dialogue FGA(0.5) and JGA of the 300 bench.corpus dialogues (real gold, perturbed predictions)."""
    import tempfile
    from pathlib import Path

    from bench.corpus import build
    from formats import load_dialogues
    from metrics.analysis import per_dialogue_metrics
    from metrics.corpus import ScoreSettings

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "corpus.json"
        path.write_text(json.dumps(build(FIXTURE["dialogues"])))
        _, values = per_dialogue_metrics(load_dialogues([path]), ScoreSettings((0.5,), ("0.5",)))
    return values["fga_0.5"], values["jga"]


def _latent(fga: np.ndarray) -> np.ndarray:
    return FIXTURE["beta"] * (fga - fga.mean()) / fga.std() - FIXTURE["shift"]


def _matrix(rng, pool: int, dialogues: int, counts: np.ndarray) -> np.ndarray:
    """Pool × dialogues: which annotator rates which dialogue (True), ``counts[d]`` distinct ones each."""
    order = np.argsort(rng.random((dialogues, pool)), axis=1)
    return (np.argsort(order, axis=1) < counts[:, None]).T


def tied_dialogues(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The tied_votes design's dialogues: (A, B = JGA, latent quality q), each of size n."""
    from scipy.stats import norm

    s = TIED
    turns = rng.integers(s["turns"][0], s["turns"][1] + 1, n)
    wrong_p = norm.cdf(s["base"] + rng.normal(size=n))
    live = np.arange(s["turns"][1])[None, :] < turns[:, None]
    wrong = live & (rng.random((n, s["turns"][1])) < wrong_p[:, None])
    slots = np.where(wrong, 1 + rng.poisson(s["extra_slots"], wrong.shape), 0)
    a = np.where(live, np.exp(-s["decay"] * slots), 0.0).sum(axis=1) / turns
    b = (live & ~wrong).sum(axis=1) / turns
    q = s["shift"] - s["weight"] * (1 - a) + rng.normal(scale=s["noise"], size=n)
    return a, b, q


def draw(design: str, n: int, rng: np.random.Generator) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """One study: metrics {"fga_0.5": A, "jga": B} per dialogue and the annotators × dialogues votes (NaN: none)."""
    if design == "tied_votes":
        a, b, q = tied_dialogues(n, rng)
        leniency = rng.normal(scale=TIED["leniency"], size=TIED["pool"])
        rated = _matrix(rng, TIED["pool"], n, rng.integers(TIED["votes"][0], TIED["votes"][1] + 1, n))
        votes = (q[None, :] + leniency[:, None] + rng.normal(size=rated.shape) > 0).astype(float)
        return {"fga_0.5": a, "jga": b}, np.where(rated, votes, np.nan)
    if design == "fixture_binary":
        fga, jga = fixture_pool()
        chosen = rng.integers(0, fga.size, n)
        q = _latent(fga)[chosen] + rng.normal(scale=FIXTURE["noise"], size=n)
        rated = _matrix(rng, 20, n, np.full(n, FIXTURE["votes"]))
        from scipy.stats import norm

        votes = (rng.random(rated.shape) < norm.cdf(q)[None, :]).astype(float)
        return {"fga_0.5": fga[chosen], "jga": jga[chosen]}, np.where(rated, votes, np.nan)
    t = rng.normal(size=n)
    if design in ("normal", "unbalanced"):
        a, b = t + rng.normal(size=n), t + rng.normal(scale=1.5, size=n)
        counts = np.full(n, 5) if design == "normal" else rng.integers(1, 6, n)
        rated = _matrix(rng, 20, n, counts)
        votes = t[None, :] + rng.normal(size=rated.shape)
        return {"fga_0.5": a, "jga": b}, np.where(rated, votes, np.nan)
    spec = POOL if design == "rater_pool" else SAME_4
    a, b = t + rng.normal(scale=spec["a"], size=n), t + rng.normal(scale=spec["b"], size=n)
    offset = rng.normal(scale=spec["offset"], size=spec["size"])
    slope = rng.normal(1.0, spec["slope"], size=spec["size"])
    votes = offset[:, None] + slope[:, None] * t[None, :] + rng.normal(scale=spec["noise"], size=(spec["size"], n))
    if design == "same_4_annotators":
        return {"fga_0.5": a, "jga": b}, votes
    rated = _matrix(rng, spec["size"], n, np.full(n, spec["votes"]))
    return {"fga_0.5": a, "jga": b}, np.where(rated, votes, np.nan)


def _rank_truth(design: str, seed: int = 12345, dialogues: int = 400_000) -> tuple[float, float]:
    """Spearman's and Kendall's coefficients of A with the mean rating, by one large simulation of
    dialogues whose annotators are drawn anew for each (the population of annotators)."""
    from scipy import stats

    rng = np.random.default_rng(seed)
    if design == "tied_votes":  # each vote from a new annotator of the population
        a, _, q = tied_dialogues(dialogues, rng)
        most = TIED["votes"][1]
        k = rng.integers(TIED["votes"][0], most + 1, dialogues)
        votes = q[None, :] + rng.normal(scale=TIED["leniency"], size=(most, dialogues)) + rng.normal(size=(most, dialogues)) > 0
        mean = (votes & (np.arange(most)[:, None] < k[None, :])).sum(axis=0) / k
    elif design == "fixture_binary":
        fga, _ = fixture_pool()
        chosen = rng.integers(0, fga.size, dialogues)
        q = _latent(fga)[chosen] + rng.normal(scale=FIXTURE["noise"], size=dialogues)
        mean = (rng.random((FIXTURE["votes"], dialogues)) < stats.norm.cdf(q)).mean(axis=0)
        a = fga[chosen]
    elif design == "unbalanced":
        t = rng.normal(size=dialogues)
        a = t + rng.normal(size=dialogues)
        k = rng.integers(1, 6, dialogues)
        mean = t + rng.normal(size=dialogues) / np.sqrt(k)
    else:  # rater_pool: each vote from a new annotator of the population
        t = rng.normal(size=dialogues)
        a = t + rng.normal(scale=POOL["a"], size=dialogues)
        shape = (POOL["votes"], dialogues)
        offset, slope = rng.normal(scale=POOL["offset"], size=shape), rng.normal(1.0, POOL["slope"], size=shape)
        mean = (offset + slope * t + rng.normal(scale=POOL["noise"], size=shape)).mean(axis=0)
    return float(stats.spearmanr(a, mean).statistic), float(stats.kendalltau(a, mean).statistic)


@cache
def population_truth(design: str) -> dict[str, float]:
    """The population value of each estimate under ``design`` (see the module docstring)."""
    if design in ("normal", "unbalanced"):
        inverse_k = 1 / 5 if design == "normal" else float(np.mean(1 / np.arange(1, 6)))
        rho_a, rho_b = 1 / math.sqrt(2 * (1 + inverse_k)), 1 / math.sqrt(3.25 * (1 + inverse_k))
        values = {"pearson_mean": rho_a, "pearson_pairs": 1 / math.sqrt(2 * 2), "diff": rho_a - rho_b}
        values["ceiling"] = math.sqrt(0.5 / (0.5 + 0.5 * inverse_k))
        if design == "normal":  # (A, mean) bivariate normal
            values["spearman"], values["kendall"] = 6 / math.pi * math.asin(rho_a / 2), 2 / math.pi * math.asin(rho_a)
        else:
            values["spearman"], values["kendall"] = _rank_truth(design)
    elif design == "fixture_binary":
        from scipy.stats import norm

        fga, jga = fixture_pool()
        nodes, weights = np.polynomial.hermite_e.hermegauss(80)
        weights = weights / weights.sum()
        p = norm.cdf(_latent(fga)[:, None] + FIXTURE["noise"] * nodes[None, :])
        m1, m2 = p @ weights, p**2 @ weights
        k = FIXTURE["votes"]
        var_p = m2.mean() - m1.mean() ** 2  # between dialogues, of a vote's probability
        var_vote = m1.mean() * (1 - m1.mean())
        var_mean = var_p + (m1.mean() - m2.mean()) / k

        def rho(x, var):
            return float(np.mean((x - x.mean()) * (m1 - m1.mean())) / math.sqrt(x.var() * var))

        values = {"pearson_mean": rho(fga, var_mean), "pearson_pairs": rho(fga, var_vote)}
        values["diff"] = values["pearson_mean"] - rho(jga, var_mean)
        icc = var_p / var_vote
        values["ceiling"] = math.sqrt(icc / (icc + (1 - icc) / k))
        values["spearman"], values["kendall"] = _rank_truth(design)
    elif design == "tied_votes":
        from scipy.stats import norm

        a, b, q = tied_dialogues(400_000, np.random.default_rng(12345))
        p = norm.cdf(q / math.sqrt(1 + TIED["leniency"] ** 2))  # P(vote 1 | dialogue), over the annotators
        inverse_k = float(np.mean(1 / np.arange(TIED["votes"][0], TIED["votes"][1] + 1)))
        m, var_p = float(p.mean()), float(p.var())
        var_vote = m * (1 - m)
        var_mean = var_p + (var_vote - var_p) * inverse_k  # var E[y|d] + E var(y|d) / k

        def rho(x: np.ndarray, var: float) -> float:
            return float(np.mean((x - x.mean()) * (p - m)) / math.sqrt(x.var() * var))

        values = {"pearson_mean": rho(a, var_mean), "pearson_pairs": rho(a, var_vote)}
        values["diff"] = values["pearson_mean"] - rho(b, var_mean)
        icc = var_p / var_vote
        values["ceiling"] = math.sqrt(icc / (icc + (1 - icc) * inverse_k))
        values["spearman"], values["kendall"] = _rank_truth(design)
    elif design == "rater_pool":
        s = POOL
        error = s["offset"] ** 2 + s["slope"] ** 2 + s["noise"] ** 2  # a vote's variance around t, var t = 1
        var_mean = 1 + error / s["votes"]
        rho_a = 1 / math.sqrt((1 + s["a"] ** 2) * var_mean)
        values = {
            "pearson_mean": rho_a,
            "pearson_pairs": 1 / math.sqrt((1 + s["a"] ** 2) * (1 + error)),
            "diff": rho_a - 1 / math.sqrt((1 + s["b"] ** 2) * var_mean),
            "ceiling": math.sqrt(1 / var_mean),
        }
        values["spearman"], values["kendall"] = _rank_truth(design)
    else:  # same_4_annotators: at the population's mean slope 1, 4 votes each
        s = SAME_4
        var_mean = 1 + s["noise"] ** 2 / s["size"]
        rho_a = 1 / math.sqrt((1 + s["a"] ** 2) * var_mean)
        values = {
            "pearson_mean": rho_a,
            # votes pooled over annotators: their offsets and slopes are variance of a vote (E s² = 1 + sd²)
            "pearson_pairs": 1 / math.sqrt((1 + s["a"] ** 2) * (1 + s["offset"] ** 2 + s["slope"] ** 2 + s["noise"] ** 2)),
            "diff": rho_a - 1 / math.sqrt((1 + s["b"] ** 2) * var_mean),
        }
        values["spearman"], values["kendall"] = 6 / math.pi * math.asin(rho_a / 2), 2 / math.pi * math.asin(rho_a)
    values["pearson_two_way"] = values["pearson_mean"]
    return values


def study(rng, dialogues: int, votes: int, noise_b: float):
    """One study of the normal model as (metrics {"a", "b"}, pairs Ratings, mean Ratings): t ~ N(0, 1),
    A = t + N(0, 1), B = t + N(0, noise_b²), ``votes`` votes y = t + N(0, 1) per dialogue (for tests that
    check one study against its truth)."""
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
    """ρ(t + N(0, noise²), t + N(0, rating_variance − 1)) with var t = 1."""
    return 1 / math.sqrt((1 + noise**2) * rating_variance)


def _ratings(matrix: np.ndarray, mode: str):
    from metrics.correlation import Ratings

    ids = [f"d{i}" for i in range(matrix.shape[1])]
    if mode == "pairs":
        dialogue, annotator = np.nonzero(np.isfinite(matrix.T))
        return Ratings(ids, dialogue, matrix.T[dialogue, annotator], "pairs", [], matrix)
    counts = np.isfinite(matrix).sum(axis=0)
    return Ratings(ids, np.arange(matrix.shape[1]), np.nansum(matrix, axis=0) / counts, "mean", [], matrix)


def _inside(interval, value: float) -> bool:
    return interval is not None and interval[0] <= value <= interval[1]


# A family key under which an estimate's study values carry the point estimate (as [v, v]) instead of an
# interval: its spread across the studies is the yardstick of the intervals' width (3.92 × SD, the width of
# an interval that knew the estimate's true spread)
POINT = "_point"


def _diff_intervals(y: np.ndarray, xa: np.ndarray, xb: np.ndarray) -> dict:
    """The intervals for ρ_A − ρ_B that need no bootstrap: the default (``diff_ci``, the jackknife-t of
    z_A − z_B mapped to r), Zou's MOVER from the two jackknife-t intervals (the default before) and from
    the two Fisher intervals."""
    from metrics.correlation import diff_ci, jackknife_t_interval, leave_one_out_pearson, mover_diff_ci, zou_diff_ci

    r_a, r_b, r_ab = (float(np.corrcoef(u, v)[0, 1]) for u, v in ((y, xa), (y, xb), (xa, xb)))
    jack_a = jackknife_t_interval(r_a, leave_one_out_pearson(xa, y))
    jack_b = jackknife_t_interval(r_b, leave_one_out_pearson(xb, y))
    interval = diff_ci(y, xa, xb)
    return {
        POINT: [r_a - r_b, r_a - r_b],  # the estimate itself, for the width's yardstick (not an interval)
        "jackknife_t_z_diff": None if interval is None else list(interval),
        "mover_jackknife_t": mover_diff_ci(r_a, r_b, r_ab, jack_a, jack_b),
        "zou_fisher": zou_diff_ci(r_a, r_b, r_ab, y.size) if r_ab < 1 and max(abs(r_a), abs(r_b)) < 1 else None,
    }


def study_intervals(
    metrics: dict[str, np.ndarray], matrix: np.ndarray, resamples: int, seed: int, estimates: tuple[str, ...] | None = None
) -> dict[str, dict]:
    """Every interval the tool computes for one study: {estimate: {family: [lo, hi] | None}}, through the
    functions the analysis uses (``correlation_report``, ``ceiling_report``); only ``estimates`` when given
    (the rank coefficients alone: one report of metric A without resamples, which gives the same intervals)."""
    from metrics.correlation import ceiling_report, correlation_report, mover_diff_ci

    ratings = _ratings(matrix, "mean")
    if estimates is not None and set(estimates) <= {*RANK_ESTIMATES, "diff"}:
        out = {}
        if set(estimates) & set(RANK_ESTIMATES):
            one = correlation_report({"fga_0.5": metrics["fga_0.5"]}, ratings, resamples=0, adjust="none", family="all")
            out.update(one["metrics"][0].get("rank_intervals", {}))
        if "diff" in estimates:
            out["diff"] = _diff_intervals(ratings.value, metrics["fga_0.5"], metrics["jga"])
        return {estimate: out[estimate] for estimate in estimates if estimate in out}
    mean = correlation_report(metrics, ratings, resamples=resamples, seed=seed, adjust="none", family="all")
    a, b = mean["metrics"]
    (w,) = mean["williams"]
    out = {"pearson_mean": a["intervals"], **a["rank_intervals"]}
    diff = _diff_intervals(ratings.value, metrics["fga_0.5"], metrics["jga"])
    for family in ("sandwich_t", "boot_se_t", "bca", "studentized"):
        diff[f"mover_{family}"] = mover_diff_ci(w["r_a"], w["r_b"], w["r_ab"], a["intervals"][family], b["intervals"][family])
    out["diff"] = diff
    one = {"fga_0.5": metrics["fga_0.5"]}
    pairs = correlation_report(one, _ratings(matrix, "pairs"), resamples=resamples, seed=seed, adjust="none", family="all")
    out["pearson_pairs"] = pairs["metrics"][0]["intervals"]
    two_way = {"adjust": "none", "family": "all", "resample": "dialogues+annotators"}
    two = correlation_report(one, ratings, resamples=resamples, seed=seed, **two_way)
    out["pearson_two_way"] = two["metrics"][0]["intervals"]
    annotators = [str(i) for i in range(matrix.shape[0])]
    out["ceiling"] = ceiling_report(annotators, matrix, resamples=resamples, seed=seed)["intervals"]
    return out if estimates is None else {estimate: out[estimate] for estimate in estimates if estimate in out}


def default_family(estimate: str) -> str:
    """The family the tool reports for ``estimate`` (metrics.correlation's defaults)."""
    from metrics.correlation import CEILING_DEFAULT, DEFAULT_INTERVAL, DIFF_DEFAULT, RANK_DEFAULT

    return {
        "pearson_mean": DEFAULT_INTERVAL["mean"],
        "pearson_pairs": DEFAULT_INTERVAL["pairs"],
        "pearson_two_way": DEFAULT_INTERVAL["two_way"],
        "ceiling": CEILING_DEFAULT,
        "diff": DIFF_DEFAULT,
        "spearman": RANK_DEFAULT["spearman"],
        "kendall": RANK_DEFAULT["kendall"],
    }[estimate]


def correlation_rows(
    replicates: int, sizes=SIZES, resamples: int = 1000, seed: int = 0, designs=DESIGNS, estimates=None
) -> list[dict]:
    """Coverage rows of every correlation estimate (or of ``estimates``) × design × n × interval family.  A
    design's studies depend on the seed, its place in DESIGNS and n only, so a part run alone draws the
    same studies as the full run."""
    rows = []
    for design in designs:
        values = population_truth(design)
        for n in sizes:
            rng = np.random.default_rng([seed, DESIGNS.index(design), n])
            hits: dict[tuple[str, str], int] = {}
            widths: dict[tuple[str, str], list[float]] = {}
            points: dict[str, list[float]] = {}
            for _ in range(replicates):
                metrics, matrix = draw(design, n, rng)
                found = study_intervals(metrics, matrix, resamples, int(rng.integers(1 << 31)), estimates)
                for estimate, families in found.items():
                    if estimate == "ceiling" and design == "same_4_annotators":
                        continue
                    for family, interval in families.items():
                        if family == POINT:
                            points.setdefault(estimate, []).append(interval[0])
                            continue
                        key = (estimate, family)
                        hits[key] = hits.get(key, 0) + _inside(interval, values[estimate])
                        if interval is not None:
                            widths.setdefault(key, []).append(interval[1] - interval[0])
            for (estimate, family), count in hits.items():
                c = count / replicates
                width = float(np.mean(widths[(estimate, family)])) if widths.get((estimate, family)) else None
                spread = float(np.std(points[estimate], ddof=1)) if len(points.get(estimate, ())) > 1 else None
                rows.append(
                    {
                        "estimate": estimate,
                        "design": design,
                        "n": n,
                        "family": family,
                        "coverage": c,
                        "mc_se": math.sqrt(c * (1 - c) / replicates),
                        "replicates": replicates,
                        "unit": "dialogues+annotators" if estimate == "pearson_two_way" else "dialogues",
                        "default": family == default_family(estimate),
                        "truth": values[estimate],
                        "width": width,  # the mean width of the intervals that exist
                        "undefined": replicates - len(widths.get((estimate, family), ())),
                        "width_ratio": width / (3.92 * spread) if width is not None and spread else None,
                    }
                )
    return rows


def williams_rows(replicates: int, sizes=SIZES, resamples: int = 0, seed: int = 0) -> list[dict]:
    """Williams' test when A and B are equally good (H0 true; the normal design with B as noisy as A):
    ``coverage`` is the share of studies it does not reject at α = 0.05 (nominal 0.95), as reported (the
    dialogues' mean ratings, n = dialogues) and as before issue 15 (every vote an observation, n = votes)."""
    from metrics.correlation import williams_test

    rows = []
    for n in sizes:
        rng = np.random.default_rng([seed, 99, n])
        kept = {"dialogue_means": 0, "votes_n_votes": 0}
        for _ in range(replicates):
            t = rng.normal(size=n)
            a, b = t + rng.normal(size=n), t + rng.normal(size=n)
            votes = t[None, :] + rng.normal(size=(5, n))
            r_ab = np.corrcoef(a, b)[0, 1]
            mean = votes.mean(axis=0)
            p = williams_test(np.corrcoef(mean, a)[0, 1], np.corrcoef(mean, b)[0, 1], r_ab, n)[1]
            kept["dialogue_means"] += p >= 0.05
            y, xa, xb = votes.ravel(), np.tile(a, 5), np.tile(b, 5)
            p = williams_test(np.corrcoef(y, xa)[0, 1], np.corrcoef(y, xb)[0, 1], r_ab, y.size)[1]
            kept["votes_n_votes"] += p >= 0.05
        for family, count in kept.items():
            c = count / replicates
            rows.append(
                {
                    "estimate": "williams_level",
                    "design": "normal",
                    "n": n,
                    "family": family,
                    "coverage": c,
                    "mc_se": math.sqrt(c * (1 - c) / replicates),
                    "replicates": replicates,
                    "unit": "dialogues",
                    "default": family == "dialogue_means",
                }
            )
    return rows


# Each: f(replicates, sizes, resamples, seed) -> rows of the contract above; other helpers append theirs
SECTIONS = [correlation_rows, williams_rows, coverage_agreement.rows, coverage_lambda.rows]


def table(rows: list[dict]) -> str:
    """Compact text: one line per (estimate, design, family), coverage ± MC SE at each n and the mean width
    (with, where the estimate's own spread was recorded, the width over 3.92 × its SD across the studies:
    1.00 is the width of an interval that knew the true spread); * the default."""
    sizes = sorted({r["n"] for r in rows})
    lines = [f"{'estimate':<16} {'design':<18} {'family':<20} " + " ".join(f"{'n=' + str(n):>29}" for n in sizes)]
    groups: dict[tuple, dict] = {}
    for r in rows:
        groups.setdefault((r["estimate"], r["design"], r["family"], r["default"]), {})[r["n"]] = r

    def cell(r: dict) -> str:
        width = "" if r.get("width") is None else f" w {r['width']:.3f}"
        ratio = "" if r.get("width_ratio") is None else f" ({r['width_ratio']:.2f})"
        return f"{r['coverage']:.3f}±{r['mc_se']:.3f}{width}{ratio}"

    for (estimate, design, family, default), by_n in groups.items():
        cells = [cell(by_n[n]) if n in by_n else "" for n in sizes]
        name = ("*" if default else " ") + family
        lines.append(f"{estimate:<16} {design:<18} {name:<20} " + " ".join(f"{c:>29}" for c in cells))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="dialogues per study, comma-separated")
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--designs", default=",".join(DESIGNS), help="the correlation section's designs, comma-separated")
    parser.add_argument(
        "--estimates", default=None, help="only these estimates of the correlation section, comma-separated (no other section)"
    )
    args = parser.parse_args()
    sizes = tuple(int(v) for v in args.sizes.split(","))
    designs = tuple(v for v in args.designs.split(",") if v)
    unknown = sorted(set(designs) - set(DESIGNS))
    if unknown:
        parser.error(f"unknown design(s) {', '.join(unknown)}; known: {', '.join(DESIGNS)}")
    estimates = None if args.estimates is None else tuple(v for v in args.estimates.split(",") if v)
    started = time.perf_counter()
    rows = correlation_rows(args.replicates, sizes, args.resamples, args.seed, designs, estimates)
    if estimates is None:
        others = [section for section in SECTIONS if section is not correlation_rows]
        rows += [row for section in others for row in section(args.replicates, sizes, args.resamples, args.seed)]
    settings = {
        "replicates": args.replicates,
        "sizes": list(sizes),
        "resamples": args.resamples,
        "seed": args.seed,
        "designs": list(designs),
        "estimates": None if estimates is None else list(estimates),
        "nominal": 0.95,
        "seconds": round(time.perf_counter() - started, 1),
    }
    if args.json:
        print(json.dumps({"rows": rows, "settings": settings}, indent=1))
        return
    print(f"{args.replicates} replicates, {args.resamples} resamples, nominal 0.95; * = the reported (default) interval")
    print(table(rows))


if __name__ == "__main__":
    main()
