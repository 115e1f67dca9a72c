"""Simulation: which interval and test for r_a − r_b (two metrics against the same per-dialogue ratings) holds
95% and has power, at the sizes studies have (30, 50, 100 dialogues)?  Issue 40, item 1.

    python -m bench.bench_difference [--replicates 4000] [--normal-share 0.5] [--sizes 30,50,100]
                                     [--resamples 1000] [--seed 0] [--designs tied_votes,normal]
                                     [--json] [--json-file PATH]

The default run (4,000 studies per tied_votes cell, 2,000 per normal cell, 1,000 resamples) takes a few
minutes on one core; ``--json`` prints the rows instead of the table, ``--json-file`` writes them as well.

Designs (each cell: a design, n dialogues, a true difference Δ = ρ_a − ρ_b ∈ {0, 0.03, 0.05}; corr(a, b) = 0.94):

- ``tied_votes``: the dialogues of ``bench.bench_coverage.tied_dialogues`` (imported, not copied: 4-12 turns, a
  tracker that errs in some dialogues, JGA = 1 on ~59% of them), with
  metric b = JGA (the generator's B) and metric a FGA-like: a = 1 − (1 − A)·exp(j·g − j²/2), g ~ N(0, 1) per
  dialogue, clipped to [0, 1], A the generator's exp(−0.5·wrong slots) score (λ = 0.5); a = 1 exactly where
  A = 1 = b, so the ties stay; j = 0.256 makes corr(a, b) = 0.94 (the audit's 0.94).  The annotators see the
  generator's latent quality with A replaced by the mixture m = mix·a + (1 − mix)·b: q' = q + 8·(m − A) =
  0.6 − 8·(1 − m) + N(0, 0.7²); ``mix`` sets the difference (0.898, 1.190, 1.341 for Δ = 0, 0.03, 0.05: the
  annotators weigh what FGA sees beyond JGA more and more), the ρ's then being 0.527/0.527, 0.476/0.446 and
  0.435/0.385.  Votes as bench_coverage.draw: a pool of 30 annotators per study with leniency N(0, 0.6²),
  2-5 distinct ones per dialogue, a vote 1 when q' + leniency + N(0, 1) > 0; the rating the mean vote.
- ``normal`` (untied check): t ~ N(0, 1), a = t + σ_a·e_a, b = t + σ_b·e_b, corr(e_a, e_b) = κ, the rating
  y = t + N(0, 1/3) (3 votes t + N(0, 1)); σ_a, σ_b give the tied cells' ρ_a, ρ_b and κ gives corr(a, b) = 0.94
  (closed form).

Truth: ρ_a − ρ_b over the population of dialogues and annotators, as bench_coverage's tied_votes truth
(P(vote 1 | dialogue) = Φ(q' / √(1 + 0.6²)), the mean rating's variance with E[1/k] over k = 2-5), from one
simulation of 400,000 dialogues with common random numbers; ``mix`` and j are found by root-finding on it, so
Δ is exact there; its Monte-Carlo error against the infinite population is ≈ SD(estimate at n)·√(n/400,000)
≈ 0.0005.  The jk_t_z row is judged against atanh ρ_a − atanh ρ_b.

Procedures (each a 95% interval and a p, the p being the interval's own test: p < 0.05 exactly when the
interval excludes 0; the unit of resampling is always the dialogue, its (rating, a, b) moving together):

- ``today_mover_jk``: the default before (``mover_before``): Zou's MOVER built from each correlation's
  jackknife-t interval on Fisher's z, with Zou's normal-theory correlation c of the estimates;
- ``reported``: ``diff_ci`` / ``diff_test`` of metrics.correlation as the analysis reports them now, the
  jk_t_z_r below through the package (the two rows agree: a check of the package against this bench);
- ``williams``: Williams' t (p only, normal theory; what ``metrics plan`` plans with), for reference;
- ``oracle``: d ± 1.96·SD with SD the estimate's true spread (the cell's SD across studies): the power the
  data allow for an unbiased normal test; not a procedure a study can run;
- ``jk_t``: jackknife-t of d = r_a − r_b on the raw scale: d ± t(n − 1)·SE_jack, the n leave-one-dialogue-out
  values from closed-form sums; p = 2·P(t(n − 1) > |d| / SE_jack);
- ``jk_t_z``: the same for z_a − z_b (an interval for atanh ρ_a − atanh ρ_b);
- ``jk_t_z_r``: jk_t_z's interval mapped to the r difference at the observed mean z̄ = (z_a + z_b)/2 by
  f(δ) = tanh(z̄ + δ/2) − tanh(z̄ − δ/2) (f(z_a − z_b) = r_a − r_b exactly, f(0) = 0, f increasing), its p
  jk_t_z's: an interval for ρ_a − ρ_b whose test is the z test;
- ``jk_t_bc``: jk_t around the jackknife bias-corrected n·d − (n − 1)·mean(d_(i));
- ``jk_t_kurt``: jk_t on Satterthwaite-type df from the pseudo-values' kurtosis, 1/(1/(n−1) + (κ−3)⁺/(2n));
- ``jk_hall``: jk_t with Hall's (1992) skewness-removing transformation g(T) = T + aT² + a²T³/3 + b,
  a = γ/(3√n), b = γ/(6√n), γ the pseudo-values' skewness, inverted in closed form;
- ``mover_jk_c``: MOVER of the two jackknife-t intervals with c the jackknife correlation of z_a and z_b (the
  audit's suspected cause, c too low, removed); p by bisection on the t quantile;
- ``boot_se_t``: d ± t(n − 1)·SD of the bootstrap d*;  ``boot_pct``: the paired percentile interval;
  ``boot_pct_exp``: Hesterberg's (2015) expanded percentile (tails Φ(−√(n/(n−1))·t(n−1)));  ``boot_bca``: BCa
  (z0 with ties counted half, acceleration from the jackknife of d); their p's invert the interval (the level at
  which an end touches 0);
- ``boot_t``: the studentised bootstrap, t* = (d* − d)/SE*, SE* the jackknife inside each resample (leave
  one draw out, closed-form sums), interval [d − q*₉₇.₅·SE, d − q*₂.₅·SE], p = 2·min(P*(t* ≥ t), P*(t* ≤ t));
- ``perm_both``: the paired permutation test PERM-BOTH of Deutsch et al. (2021): both metrics standardised
  within the study, each dialogue's (a, b) swapped with probability ½, T* = r(y, a*) − r(y, b*), p = (1 + #|T*| ≥
  |d|)/(B + 1); its interval d ± q, q the |T*| quantile at which p crosses 0.05 (test inversion under a shift
  model, so p < 0.05 exactly when it excludes 0).

Bootstrap resamples and permutations are ``--resamples`` per study (1,000), vectorised over studies (counts ×
per-dialogue sums, one matrix product per chunk).

Reading the table: one line per design × n × procedure.  ``cov Δ=…`` is the share of studies whose interval
holds the true difference, ± its Monte-Carlo SE √(c(1 − c)/R) (target 0.94-0.96); ``w/3.92SD`` the mean
width over 3.92 × the SD of the estimate across the cell's studies (target ≤ 1.15; 1.00 is the oracle;
">100": a few absurd intervals dominate the mean, the JSON has the median too); ``size`` the share of p < 0.05
at Δ = 0 (nominal 0.05), ``power .03``/``.05`` the share of p < 0.05 at Δ = 0.03/0.05 (two-sided), each ± MC
SE.  Above the table: each cell's truth and the estimate's mean and SD across studies.  JSON rows:
``{"design", "n", "delta", "procedure", "replicates", "coverage", "coverage_se", "width", "width_ratio",
"median_width_ratio", "reject", "reject_se", "sd_estimate", "truth", "scale", "no_p", "no_interval",
"mean_estimate"}``.

Findings of the default run (seed 0; tied_votes, 4,000 studies per cell, MC SE ≤ 0.006; n = 30 / 50 / 100;
the targets hold at Δ = 0 *and* at Δ = 0.03):

- today's MOVER is 1.57 / 1.29 / 1.14 × the target width and covers .965-.983.  Zou's c is not the main cause:
  with the jackknife's c (mover_jk_c) it stays 1.13-1.55× wide, because at corr(a, b) = 0.94 the MOVER's
  half-width is bounded below by the difference between a's lower and b's upper arm of the two asymmetric
  (Fisher-z) intervals, whatever c is;
- the bootstraps fall short with ties: BCa .84-.90 and bootstrap-t .86-.92 (size .09-.15; the skewness they
  estimate comes from the same few dialogues that make the error), percentile .89-.94 (its SD is 5-10% below
  the estimate's), the expanded percentile .95 / .94 / .95 at Δ = 0 but .93 / .94 / .94 at 0.03;
  PERM-BOTH's size .058-.069;
- the bias-corrected jackknife (jk_t_bc) holds at Δ = 0 (.953 / .944 / .950) but not at 0.03 (.922 / .927 / .940);
- the jackknife-t of the difference has the width the data allow (1.00-1.09) and covers .946-.950 at Δ = 0.03,
  but .958-.981 at Δ = 0 (conservative at n = 30) and .920-.926 at Δ = 0.05 (the misses are intervals below
  the truth, checked apart: they understate a's advantage; at Δ = 0 each side's error stays ≤ .027): both
  targets at n = 100 (and n = 50 within MC error), not at n = 30;
- jk_t_z_r is that interval with the test of z_a − z_b: the same coverage and width, the most power of the
  valid procedures (.040 / .084 / .173 at Δ = 0.03, today's .028 / .060 / .133, the oracle's .090 / .118 /
  .185; at 0.05: .063 / .160 / .365, today's .040 / .113 / .314).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from functools import cache

import numpy as np

from bench.bench_coverage import TIED, tied_dialogues

DESIGNS = ("tied_votes", "normal")
SIZES = (30, 50, 100)
DIFFERENCES = (0.0, 0.03, 0.05)  # the true ρ_a − ρ_b of a cell
CORR_AB = 0.94  # the population correlation between the two metrics
TRUTH_DIALOGUES = 400_000
NORMAL_VOTES = 3  # the normal design's rating: the mean of 3 votes t + N(0, 1)
LEVEL = 0.95
REPLICATES = 4000  # studies per tied_votes cell by default (the normal design: half)
# name: (scale of the interval, what it is); "z": an interval for atanh ρ_a − atanh ρ_b, "-": a p-value only
PROCEDURES = {
    "today_mover_jk": ("r", "the default before: Zou's MOVER from the two jackknife-t intervals, p by inverting it"),
    "reported": ("r", "diff_ci / diff_test as reported now (metrics.correlation): jk_t_z_r through the package"),
    "williams": ("-", "Williams' t (p only; what `metrics plan` plans with)"),
    "oracle": ("r", "reference: d ± 1.96·SD, SD the estimate's true spread (the cell's SD across studies)"),
    "jk_t": ("r", "jackknife-t of r_a − r_b: d ± t(n−1)·SE_jack"),
    "jk_t_z": ("z", "jackknife-t of z_a − z_b (an interval for atanh ρ_a − atanh ρ_b)"),
    "jk_t_z_r": ("r", "jk_t_z mapped to r_a − r_b at the observed mean z: f(δ) = tanh(z̄ + δ/2) − tanh(z̄ − δ/2); its p"),
    "jk_t_bc": ("r", "jackknife-t around the bias-corrected n·d − (n−1)·mean(d_(i))"),
    "jk_t_kurt": ("r", "jackknife-t, df from the pseudo-values' kurtosis (Satterthwaite-type small-sample df)"),
    "jk_hall": ("r", "jackknife-t with Hall's (1992) skewness-removing transformation from the pseudo-values"),
    "mover_jk_c": ("r", "MOVER of the two jackknife-t intervals with c = the jackknife correlation of z_a, z_b"),
    "boot_se_t": ("r", "d ± t(n−1)·SD of the bootstrap d*"),
    "boot_pct": ("r", "paired bootstrap, percentile"),
    "boot_pct_exp": ("r", "paired bootstrap, expanded percentile (Hesterberg 2015: tails at Φ(−√(n/(n−1))·t(n−1)))"),
    "boot_bca": ("r", "paired bootstrap, BCa (acceleration from the jackknife of d)"),
    "boot_t": ("r", "studentised bootstrap: t* = (d* − d)/SE*_jack, SE* the jackknife inside each resample"),
    "perm_both": ("r", "PERM-BOTH (Deutsch et al. 2021) p; interval d ± q95 of |T*| (inversion under a shift)"),
}


# ----------------------------------------------------------------------------------------------- designs


def fga_like(a: np.ndarray, g: np.ndarray, jitter: float) -> np.ndarray:
    """Metric a: 1 − (1 − A)·exp(jitter·g − jitter²/2), clipped to [0, 1] (A = 1 stays 1: the ties stay)."""
    return np.clip(1 - (1 - a) * np.exp(jitter * g - jitter**2 / 2), 0.0, 1.0)


def human_latent(a, b, q, xa, mix: float) -> np.ndarray:
    """The latent quality the annotators see: the generator's q with metric A replaced by the mixture
    m = mix·xa + (1 − mix)·b, i.e. q + weight·(m − A) = shift − weight·(1 − m) + the generator's N(0, 0.7²)."""
    return q + TIED["weight"] * (mix * xa + (1 - mix) * b - a)


def _tied_rhos(a, b, q, xa, mix: float) -> tuple[float, float]:
    """ρ(xa, mean rating), ρ(b, mean rating) over the population of annotators (as bench_coverage's truth:
    P(vote 1 | dialogue) = Φ(latent / √(1 + leniency²)), var of the mean rating with E[1/k] over k = 2-5)."""
    from scipy.stats import norm

    p = norm.cdf(human_latent(a, b, q, xa, mix) / math.sqrt(1 + TIED["leniency"] ** 2))
    inverse_k = float(np.mean(1 / np.arange(TIED["votes"][0], TIED["votes"][1] + 1)))
    m, var_p = float(p.mean()), float(p.var())
    var_mean = var_p + (m * (1 - m) - var_p) * inverse_k
    pc = p - m

    def rho(x: np.ndarray) -> float:
        return float(np.mean((x - x.mean()) * pc) / math.sqrt(x.var() * var_mean))

    return rho(xa), rho(b)


@cache
def tied_design() -> dict:
    """The jitter that makes corr(a, b) = CORR_AB and, per true difference Δ, the mix that makes ρ_a − ρ_b = Δ,
    on one simulation of TRUTH_DIALOGUES dialogues (common random numbers; root-finding by brentq)."""
    from scipy.optimize import brentq

    rng = np.random.default_rng(12345)
    a, b, q = tied_dialogues(TRUTH_DIALOGUES, rng)
    g = rng.normal(size=TRUTH_DIALOGUES)
    jitter = brentq(lambda j: np.corrcoef(fga_like(a, g, j), b)[0, 1] - CORR_AB, 0.01, 2.0, xtol=1e-6)
    xa = fga_like(a, g, jitter)
    cells = {}
    for delta in DIFFERENCES:
        mix = brentq(lambda v, delta=delta: np.subtract(*_tied_rhos(a, b, q, xa, v)) - delta, 0.0, 3.0, xtol=1e-7)
        ra, rb = _tied_rhos(a, b, q, xa, mix)
        cells[delta] = {"mix": float(mix), "rho_a": ra, "rho_b": rb}
    return {
        "jitter": float(jitter),
        "corr_ab": float(np.corrcoef(xa, b)[0, 1]),
        "tied_share": float(np.mean(b == 1)),
        "cells": cells,
    }


def tied_studies(studies: int, n: int, delta: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``studies`` studies of n dialogues (studies × n arrays: mean rating y, metric a, metric b): the
    tied_votes dialogues, a pool of TIED["pool"] annotators per study with their leniency, 2-5 of them
    (distinct, uniform) voting per dialogue, as bench_coverage.draw."""
    design = tied_design()
    cell = design["cells"][delta]
    a, b, q = tied_dialogues(studies * n, rng)
    xa = fga_like(a, rng.normal(size=a.size), design["jitter"])
    latent = human_latent(a, b, q, xa, cell["mix"]).reshape(studies, n)
    most = TIED["votes"][1]
    leniency = rng.normal(scale=TIED["leniency"], size=(studies, TIED["pool"]))
    raters = np.argsort(rng.random((studies, n, TIED["pool"])), axis=2)[:, :, :most]
    lenient = leniency[np.arange(studies)[:, None, None], raters]
    votes = latent[..., None] + lenient + rng.normal(size=(studies, n, most)) > 0
    k = rng.integers(TIED["votes"][0], most + 1, size=(studies, n))
    y = (votes & (np.arange(most) < k[..., None])).sum(axis=2) / k
    return y, xa.reshape(studies, n), b.reshape(studies, n)


@cache
def normal_design() -> dict:
    """a = t + σ_a·e_a, b = t + σ_b·e_b, corr(e_a, e_b) = κ, t ~ N(0, 1), y = t + N(0, 1/NORMAL_VOTES) (the mean
    of NORMAL_VOTES votes t + N(0, 1)): σ's from the tied_votes cell's ρ_a and ρ_b, κ from corr(a, b) = CORR_AB
    (closed form)."""
    var_y = 1 + 1 / NORMAL_VOTES
    cells = {}
    for delta, tied in tied_design()["cells"].items():
        ra, rb = tied["rho_a"], tied["rho_b"]
        var_a, var_b = 1 / (ra**2 * var_y), 1 / (rb**2 * var_y)  # of a and b
        kappa = (CORR_AB * math.sqrt(var_a * var_b) - 1) / math.sqrt((var_a - 1) * (var_b - 1))
        cells[delta] = {"sd_a": math.sqrt(var_a - 1), "sd_b": math.sqrt(var_b - 1), "kappa": kappa, "rho_a": ra, "rho_b": rb}
    return {"corr_ab": CORR_AB, "tied_share": 0.0, "cells": cells}


def normal_studies(studies: int, n: int, delta: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    cell = normal_design()["cells"][delta]
    t = rng.normal(size=(studies, n))
    ea = rng.normal(size=(studies, n))
    eb = cell["kappa"] * ea + math.sqrt(1 - cell["kappa"] ** 2) * rng.normal(size=(studies, n))
    y = t + rng.normal(scale=math.sqrt(1 / NORMAL_VOTES), size=(studies, n))
    return y, t + cell["sd_a"] * ea, t + cell["sd_b"] * eb


STUDIES = {"tied_votes": (tied_design, tied_studies), "normal": (normal_design, normal_studies)}


# -------------------------------------------------------------------------------------------- procedures


def _parts(y: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per-dialogue terms whose sums give both correlations: (..., n, 8)."""
    return np.stack([y, a, b, y * y, a * a, b * b, y * a, y * b], axis=-1)


def _rs(s: np.ndarray, n) -> tuple[np.ndarray, np.ndarray]:
    """(r(y, a), r(y, b)) from the sums of ``_parts`` over n dialogues (last axis 8)."""
    y, a, b, yy, aa, bb, ya, yb = np.moveaxis(s, -1, 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        vy = n * yy - y * y
        ra = (n * ya - y * a) / np.sqrt(vy * (n * aa - a * a))
        rb = (n * yb - y * b) / np.sqrt(vy * (n * bb - b * b))
    return np.clip(ra, -1, 1), np.clip(rb, -1, 1)


def _z(r):
    return np.arctanh(np.clip(r, -0.999999, 0.999999))


def _jackknife_se(values: np.ndarray) -> np.ndarray:
    """Rows of leave-one-out values (studies × n) → the jackknife SE of each row."""
    n = values.shape[-1]
    return np.sqrt((n - 1) / n * ((values - values.mean(axis=-1, keepdims=True)) ** 2).sum(axis=-1))


def _row_quantile(ordered: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """Each row's quantile at its own probability (rows sorted, NaN last; linear, as np.quantile)."""
    count = np.isfinite(ordered).sum(axis=1)
    defined = np.isfinite(probs) & (count > 0)
    position = np.clip(np.where(defined, probs, 0.0), 0, 1) * np.maximum(count - 1, 0)
    low = np.floor(position).astype(int)
    high = np.minimum(low + 1, np.maximum(count - 1, 0))
    rows = np.arange(ordered.shape[0])
    frac = position - low
    return np.where(defined, ordered[rows, low] * (1 - frac) + ordered[rows, high] * frac, np.nan)


def _row_cdf(ordered: np.ndarray, value: np.ndarray) -> np.ndarray:
    """The inverse of ``_row_quantile``: the probability at which each sorted row's interpolated quantile equals
    ``value`` (0 below the smallest draw, 1 above the largest), so that a p computed from it is exactly the
    level at which the interval's end touches the value."""
    count = np.isfinite(ordered).sum(axis=1)
    k = (ordered < value[:, None]).sum(axis=1)  # NaN compares False
    rows = np.arange(ordered.shape[0])
    inside = (k > 0) & (k < count)
    ki = np.clip(k, 1, np.maximum(count - 1, 1))
    low, high = ordered[rows, ki - 1], ordered[rows, ki]
    with np.errstate(invalid="ignore", divide="ignore"):
        position = (ki - 1 + (value - low) / (high - low)) / np.maximum(count - 1, 1)
    return np.where(inside, position, np.where(k >= count, 1.0, 0.0))


def _share_below(draws: np.ndarray, value: np.ndarray) -> np.ndarray:
    """Share of each row's finite draws below ``value`` (a tie counts half)."""
    finite = np.isfinite(draws)
    below = ((draws < value[:, None]) & finite).sum(axis=1) + 0.5 * ((draws == value[:, None]) & finite).sum(axis=1)
    return below / np.maximum(finite.sum(axis=1), 1)


def mover_before(y: np.ndarray, xa: np.ndarray, xb: np.ndarray) -> tuple[tuple[float, float] | None, float | None]:
    """The difference's interval and p before issue 40: Zou's MOVER from the two correlations' jackknife-t
    intervals (on Fisher's z, t(n − 1)), with Zou's normal-theory correlation of the estimates; its p the level
    at which the interval's nearer end touches 0 (by root-finding).  Kept here for the comparison."""
    from scipy.optimize import brentq
    from scipy.stats import t as student_t

    from metrics.correlation import jackknife_t_interval, leave_one_out_pearson, mover_diff_ci
    from metrics.correlation.resampling import jackknife_variance

    r_a, r_b, r_ab = (float(np.corrcoef(u, v)[0, 1]) for u, v in ((y, xa), (y, xb), (xa, xb)))
    loo_a, loo_b = leave_one_out_pearson(xa, y), leave_one_out_pearson(xb, y)
    interval = mover_diff_ci(r_a, r_b, r_ab, jackknife_t_interval(r_a, loo_a, LEVEL), jackknife_t_interval(r_b, loo_b, LEVEL))
    var_a, var_b = jackknife_variance(loo_a), jackknife_variance(loo_b)
    n = int(min(np.isfinite(loo_a).sum(), np.isfinite(loo_b).sum()))
    diff = r_a - r_b
    if interval is None or var_a <= 0 or var_b <= 0 or n < 4:
        return interval, None
    if abs(diff) < 1e-12:
        return interval, 1.0

    def nearer_end(confidence: float) -> float:  # > 0 while the interval excludes 0
        q = float(student_t.ppf(0.5 + confidence / 2, n - 1))
        ci_a = [math.tanh(math.atanh(r_a) + sign * q * math.sqrt(var_a)) for sign in (-1, 1)]
        ci_b = [math.tanh(math.atanh(r_b) + sign * q * math.sqrt(var_b)) for sign in (-1, 1)]
        low, high = mover_diff_ci(r_a, r_b, r_ab, ci_a, ci_b) or (0.0, 0.0)
        return low if diff > 0 else -high

    widest = 1 - 1e-12
    if nearer_end(widest) > 0:
        return interval, 1e-12
    try:
        return interval, float(1 - brentq(nearer_end, 1e-12, widest, xtol=1e-14, rtol=1e-12))
    except ValueError:  # no sign change: r_a = r_b up to rounding (the defect the reported test removed)
        return interval, None


def procedures(y: np.ndarray, a: np.ndarray, b: np.ndarray, resamples: int, rng: np.random.Generator) -> dict:
    """Every procedure on a batch of studies (studies × n arrays): {"estimate": d, "estimate_z": z_a − z_b,
    name: (low, high, p)}, each an array over the studies (low, high NaN for a p-only procedure)."""
    from scipy.stats import norm
    from scipy.stats import t as student_t

    from metrics.correlation import diff_ci, diff_test, williams_test

    studies, n = y.shape
    parts = _parts(y, a, b)
    total = parts.sum(axis=1)
    ra, rb = _rs(total, n)
    d, dz = ra - rb, _z(ra) - _z(rb)
    d, dz = np.where(np.abs(d) < 1e-12, 0.0, d), np.where(np.abs(dz) < 1e-12, 0.0, dz)  # r_a = r_b up to rounding
    out: dict = {"estimate": d, "estimate_z": dz}
    q_t = float(student_t.ppf(0.5 + LEVEL / 2, n - 1))
    nan = np.full(studies, np.nan)

    # (i) the default before (Zou's MOVER from the two jackknife-t intervals), the reported default through the
    # package (the jackknife-t of z_a − z_b mapped to r: jk_t_z_r below, computed apart), Williams' t for reference
    today = np.empty((3, studies))
    reported = np.empty((3, studies))
    williams = np.empty(studies)
    for i in range(studies):
        interval, p = mover_before(y[i], a[i], b[i])
        today[:2, i] = (np.nan, np.nan) if interval is None else interval
        today[2, i] = np.nan if p is None else p
        interval = diff_ci(y[i], a[i], b[i], LEVEL)
        reported[:2, i] = interval if interval is not None else (np.nan, np.nan)
        p = diff_test(y[i], a[i], b[i])[1]
        reported[2, i] = np.nan if p is None else p
        r_ab = float(np.corrcoef(a[i], b[i])[0, 1])
        try:
            williams[i] = williams_test(float(ra[i]), float(rb[i]), r_ab, n)[1]
        except ValueError:  # r_ab = 1: the metrics order the dialogues identically
            williams[i] = np.nan
    out["today_mover_jk"] = tuple(today)
    out["reported"] = tuple(reported)
    out["williams"] = (nan, nan, williams)

    # (ii) jackknife-t of d and of z_a − z_b; (vi) with a kurtosis-based df
    la, lb = _rs(total[:, None, :] - parts, n - 1)
    loo, loo_z = la - lb, _z(la) - _z(lb)
    se, se_z = _jackknife_se(loo), _jackknife_se(loo_z)
    with np.errstate(invalid="ignore", divide="ignore"):
        out["jk_t"] = (d - q_t * se, d + q_t * se, 2 * student_t.sf(np.abs(d) / se, n - 1))
        out["jk_t_z"] = (dz - q_t * se_z, dz + q_t * se_z, 2 * student_t.sf(np.abs(dz) / se_z, n - 1))
        zbar = (_z(ra) + _z(rb)) / 2  # f(dz) = r_a − r_b exactly, f(0) = 0, f increasing: the same test

        def to_r(delta):
            return np.tanh(zbar + delta / 2) - np.tanh(zbar - delta / 2)

        out["jk_t_z_r"] = (to_r(dz - q_t * se_z), to_r(dz + q_t * se_z), out["jk_t_z"][2])
        pseudo = -(n - 1) * (loo - loo.mean(axis=1, keepdims=True))
        kurtosis = (pseudo**4).mean(axis=1) / (pseudo**2).mean(axis=1) ** 2
        df = np.clip(1 / (1 / (n - 1) + np.maximum(kurtosis - 3, 0) / (2 * n)), 2, n - 1)
        q_k = student_t.ppf(0.5 + LEVEL / 2, df)
        out["jk_t_kurt"] = (d - q_k * se, d + q_k * se, 2 * student_t.sf(np.abs(d) / se, df))

        centre = n * d - (n - 1) * loo.mean(axis=1)
        out["jk_t_bc"] = (centre - q_t * se, centre + q_t * se, 2 * student_t.sf(np.abs(centre) / se, n - 1))
        # Hall (1992): g(T) = T + aT² + a²T³/3 + b, a = γ/(3√n), b = γ/(6√n), γ the pseudo-values' skewness;
        # g(T) ~ t(n − 1), so θ ∈ [d − se·g⁻¹(q), d − se·g⁻¹(−q)], and p = 2·P(t > |g(d/se)|)
        gamma = (pseudo**3).mean(axis=1) / (pseudo**2).mean(axis=1) ** 1.5
        ha, hb = gamma / (3 * math.sqrt(n)), gamma / (6 * math.sqrt(n))
        ha = np.where(np.abs(ha) < 1e-9, 1e-9, ha)

        def inverse(v):
            return (np.cbrt(1 + 3 * ha * (v - hb)) - 1) / ha

        t0 = d / se
        g0 = t0 + ha * t0**2 + ha**2 * t0**3 / 3 + hb
        out["jk_hall"] = (d - se * inverse(q_t), d - se * inverse(-q_t), 2 * student_t.sf(np.abs(g0), n - 1))
    # MOVER with the estimates' correlation c by the jackknife (z scale), p by bisection on the quantile
    za_loo, zb_loo = _z(la), _z(lb)
    se_za, se_zb = _jackknife_se(za_loo), _jackknife_se(zb_loo)
    ca, cb = za_loo - za_loo.mean(axis=1, keepdims=True), zb_loo - zb_loo.mean(axis=1, keepdims=True)
    c = (ca * cb).sum(axis=1) / np.sqrt((ca**2).sum(axis=1) * (cb**2).sum(axis=1))
    zra, zrb = _z(ra), _z(rb)

    def mover(quantile):
        la_, ua_ = np.tanh(zra - quantile * se_za), np.tanh(zra + quantile * se_za)
        lb_, ub_ = np.tanh(zrb - quantile * se_zb), np.tanh(zrb + quantile * se_zb)
        da, db, ea, eb = ra - la_, ub_ - rb, ua_ - ra, rb - lb_
        low = d - np.sqrt(np.maximum(0.0, da**2 + db**2 - 2 * c * da * db))
        high = d + np.sqrt(np.maximum(0.0, ea**2 + eb**2 - 2 * c * ea * eb))
        return low, high

    low, high = mover(q_t)
    lo_q, hi_q = np.zeros(studies), np.full(studies, 40.0)
    for _ in range(60):  # the quantile at which the nearer end touches 0
        mid = (lo_q + hi_q) / 2
        m_low, m_high = mover(mid)
        excluded = np.where(d > 0, m_low > 0, m_high < 0)
        lo_q, hi_q = np.where(excluded, mid, lo_q), np.where(excluded, hi_q, mid)
    out["mover_jk_c"] = (low, high, 2 * student_t.sf((lo_q + hi_q) / 2, n - 1))

    # (iii), (iv): the paired bootstrap over dialogues, in chunks so that chunk × B × n stays ~1e6
    chunk = max(1, 1_000_000 // (resamples * n))
    boot = {name: np.empty((3, studies)) for name in ("boot_se_t", "boot_pct", "boot_pct_exp", "boot_bca", "boot_t")}
    expand = math.sqrt(n / (n - 1)) * q_t
    tail_exp = float(norm.cdf(-expand))
    for start in range(0, studies, chunk):
        rows = slice(start, min(studies, start + chunk))
        m = rows.stop - rows.start
        draws = rng.integers(0, n, size=(m * resamples, n))
        counts = np.bincount((draws + (np.arange(m * resamples) * n)[:, None]).ravel(), minlength=m * resamples * n)
        counts = counts.reshape(m, resamples, n).astype(float)
        sums = counts @ parts[rows]  # m × B × 8
        sa, sb = _rs(sums, n)
        dstar = sa - sb
        dd = d[rows]
        ordered = np.sort(dstar, axis=1)
        # boot_se_t
        sd = np.nanstd(dstar, axis=1, ddof=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            boot["boot_se_t"][:, rows] = (dd - q_t * sd, dd + q_t * sd, 2 * student_t.sf(np.abs(dd) / sd, n - 1))
        # percentile and expanded percentile, p = the level at which an end touches 0
        below0 = _row_cdf(ordered, np.zeros(m))
        p_pct = np.minimum(1.0, 2 * np.minimum(below0, 1 - below0))
        lo, hi = np.full(m, (1 - LEVEL) / 2), np.full(m, (1 + LEVEL) / 2)
        boot["boot_pct"][:, rows] = (_row_quantile(ordered, lo), _row_quantile(ordered, hi), p_pct)
        z_exp = norm.isf(np.clip(p_pct, 1e-12, 1) / 2) / math.sqrt(n / (n - 1))
        lo_e, hi_e = np.full(m, tail_exp), np.full(m, 1 - tail_exp)
        boot["boot_pct_exp"][:, rows] = (
            _row_quantile(ordered, lo_e),
            _row_quantile(ordered, hi_e),
            np.minimum(1.0, 2 * student_t.sf(z_exp, n - 1)),
        )
        # BCa
        z0 = norm.ppf(np.clip(_share_below(dstar, dd), 0.5 / resamples, 1 - 0.5 / resamples))
        u = loo[rows].mean(axis=1, keepdims=True) - loo[rows]
        acc = (u**3).sum(axis=1) / (6 * ((u**2).sum(axis=1)) ** 1.5)
        ends = []
        for tail in ((1 - LEVEL) / 2, (1 + LEVEL) / 2):
            zz = z0 + norm.ppf(tail)
            ends.append(_row_quantile(ordered, norm.cdf(z0 + zz / (1 - acc * zz))))
        w = norm.ppf(np.clip(below0, 0.5 / resamples, 1 - 0.5 / resamples)) - z0
        z_alpha = w / np.maximum(1 + acc * w, 1e-9) - z0
        boot["boot_bca"][:, rows] = (*ends, np.minimum(1.0, 2 * norm.cdf(-np.abs(z_alpha))))
        # studentised: the jackknife inside each resample (leave one draw out; closed-form sums)
        ja, jb = _rs(sums[:, :, None, :] - parts[rows][:, None, :, :], n - 1)  # m × B × n
        present = counts > 0
        jd = np.where(present, ja - jb, 0.0)
        mean_c = (counts * jd).sum(axis=2, keepdims=True) / n
        se_star = np.sqrt((n - 1) / n * (counts * np.where(present, jd - mean_c, 0.0) ** 2).sum(axis=2))
        se0 = se[rows]
        with np.errstate(invalid="ignore", divide="ignore"):
            tstar = (dstar - dd[:, None]) / se_star
        tstar = np.where(np.isfinite(tstar), tstar, np.nan)
        t_ordered = np.sort(tstar, axis=1)
        t_lo, t_hi = _row_quantile(t_ordered, lo), _row_quantile(t_ordered, hi)
        with np.errstate(invalid="ignore", divide="ignore"):
            t0 = dd / se0
        at = _row_cdf(t_ordered, np.where(np.isfinite(t0), t0, 0.0))
        above, below = 1 - at, at
        boot["boot_t"][:, rows] = (dd - t_hi * se0, dd - t_lo * se0, np.minimum(1.0, 2 * np.minimum(above, below)))
    for name, values in boot.items():
        out[name] = tuple(values)

    # (v) PERM-BOTH: standardise both metrics, swap each dialogue's pair with probability ½
    za = (a - a.mean(axis=1, keepdims=True)) / a.std(axis=1, keepdims=True)
    zb = (b - b.mean(axis=1, keepdims=True)) / b.std(axis=1, keepdims=True)
    sy, syy = y.sum(axis=1), (y * y).sum(axis=1)
    vy = n * syy - sy**2
    keep = math.ceil(0.05 * (resamples + 1) - 1 - 1e-9) - 1  # p < 0.05 ⟺ at most `keep` |T*| ≥ |d|
    perm = np.empty((3, studies))
    swap_terms = np.stack([za - zb, za * za - zb * zb, y * (za - zb)], axis=-1)  # studies × n × 3
    for start in range(0, studies, chunk):
        rows = slice(start, min(studies, start + chunk))
        m = rows.stop - rows.start
        swap = (rng.random((m, resamples, n)) < 0.5).astype(float)
        s = swap @ swap_terms[rows]  # m × B × 3
        s1a, s2a = s[..., 0], s[..., 1] + n
        sya = s[..., 2] + (y[rows] * zb[rows]).sum(axis=1)[:, None]
        s1b, s2b = -s1a, 2 * n - s2a
        syb = (y[rows] * (za[rows] + zb[rows])).sum(axis=1)[:, None] - sya
        syr, vyr = sy[rows][:, None], vy[rows][:, None]
        with np.errstate(invalid="ignore", divide="ignore"):
            tstar = (n * sya - syr * s1a) / np.sqrt(vyr * (n * s2a - s1a**2)) - (n * syb - syr * s1b) / np.sqrt(
                vyr * (n * s2b - s1b**2)
            )
        absolute = np.sort(np.abs(tstar), axis=1)
        dd = np.abs(d[rows])
        p = (1 + (absolute >= dd[:, None] - 1e-12).sum(axis=1)) / (resamples + 1)
        q = absolute[:, resamples - keep - 1]
        perm[:, rows] = (d[rows] - q, d[rows] + q, p)
    out["perm_both"] = tuple(perm)
    return out


# -------------------------------------------------------------------------------------------- simulation


def cell_rows(design: str, n: int, delta: float, replicates: int, resamples: int, seed: int, batch: int = 100) -> list[dict]:
    """One design × n × Δ: every procedure's coverage, width, SD of its estimate and rejection rate."""
    describe, draw = STUDIES[design]
    cell = describe()["cells"][delta]
    truth = {"r": cell["rho_a"] - cell["rho_b"], "z": math.atanh(cell["rho_a"]) - math.atanh(cell["rho_b"])}
    rng = np.random.default_rng([seed, DESIGNS.index(design), n, DIFFERENCES.index(delta)])
    found: dict[str, list] = {}
    for start in range(0, replicates, batch):
        y, a, b = draw(min(batch, replicates - start), n, delta, rng)
        for name, value in procedures(y, a, b, resamples, rng).items():
            found.setdefault(name, []).append(np.asarray(value))
    joined = {name: np.concatenate(parts, axis=-1) for name, parts in found.items()}
    sd = {"r": float(np.std(joined["estimate"], ddof=1)), "z": float(np.std(joined["estimate_z"], ddof=1))}
    from scipy.stats import norm

    d = joined["estimate"]
    joined["oracle"] = np.array([d - 1.96 * sd["r"], d + 1.96 * sd["r"], 2 * norm.sf(np.abs(d) / sd["r"])])
    rows = []
    for name, (scale, _) in PROCEDURES.items():
        low, high, p = joined[name]
        reject = float(np.mean(p < 0.05))
        row = {
            "design": design,
            "n": n,
            "delta": delta,
            "procedure": name,
            "replicates": replicates,
            "reject": reject,
            "reject_se": math.sqrt(reject * (1 - reject) / replicates),
            "no_p": int(np.sum(~np.isfinite(p))),
            "coverage": None,
            "coverage_se": None,
            "width": None,
            "width_ratio": None,
            "sd_estimate": sd["r" if scale != "z" else "z"],
            "truth": truth["r" if scale != "z" else "z"],
            "scale": scale,
        }
        if scale != "-":
            inside = (low <= row["truth"]) & (row["truth"] <= high)
            c = float(np.mean(inside))
            width = float(np.nanmean(high - low))
            row |= {
                "coverage": c,
                "coverage_se": math.sqrt(c * (1 - c) / replicates),
                "width": width,
                "width_ratio": width / (2 * 1.96 * row["sd_estimate"]),
                "median_width_ratio": float(np.nanmedian(high - low)) / (2 * 1.96 * row["sd_estimate"]),
                "no_interval": int(np.sum(~np.isfinite(high - low))),
                "mean_estimate": float(np.mean(joined["estimate" if scale == "r" else "estimate_z"])),
            }
        rows.append(row)
    return rows


def run(
    replicates: int, sizes=SIZES, resamples: int = 1000, seed: int = 0, designs=DESIGNS, normal_share: float = 0.5
) -> list[dict]:
    """Rows of every design × n × Δ × procedure (the normal design, a check, with ``normal_share`` of the replicates)."""
    rows = []
    for design in designs:
        count = replicates if design == "tied_votes" else max(50, int(replicates * normal_share))
        for n in sizes:
            for delta in DIFFERENCES:
                rows += cell_rows(design, n, delta, count, resamples, seed)
    return rows


def _cell(rows: list[dict], **where) -> dict | None:
    found = [r for r in rows if all(r[k] == v for k, v in where.items())]
    return found[0] if found else None


def table(rows: list[dict]) -> str:
    """One line per design × n × procedure: coverage at Δ = 0, 0.03 and 0.05 (± MC SE), mean width / (3.92·SD
    of the estimate) at Δ = 0 and 0.03, size (share of p < 0.05 at Δ = 0) and power at Δ = 0.03 and 0.05."""

    def cov(c):
        return "-" if c is None or c["coverage"] is None else f"{c['coverage']:.3f}±{c['coverage_se']:.3f}"

    def wid(c):
        if c is None or c["width_ratio"] is None:
            return "-"
        return f"{c['width_ratio']:.2f}" if c["width_ratio"] < 100 else ">100"

    def rej(c):
        return "-" if c is None else f"{c['reject']:.3f}±{c['reject_se']:.3f}"

    head = (
        f"{'design':<10} {'n':>3} {'procedure':<14} {'cov Δ=0':>11} {'cov Δ=.03':>11} {'cov Δ=.05':>11}"
        f" {'w/3.92SD 0':>10} {'.03':>5} {'size':>11} {'power .03':>11} {'power .05':>11}"
    )
    lines = [head]
    for design in dict.fromkeys(r["design"] for r in rows):
        for n in dict.fromkeys(r["n"] for r in rows if r["design"] == design):
            for name in PROCEDURES:
                c0, c3, c5 = (_cell(rows, design=design, n=n, procedure=name, delta=delta) for delta in DIFFERENCES)
                lines.append(
                    f"{design:<10} {n:>3} {name:<14} {cov(c0):>11} {cov(c3):>11} {cov(c5):>11}"
                    f" {wid(c0):>10} {wid(c3):>5} {rej(c0):>11} {rej(c3):>11} {rej(c5):>11}"
                )
            lines.append("")
    return "\n".join(lines).rstrip()


def spread_lines(rows: list[dict]) -> str:
    """The estimate r_a − r_b across studies per design × n × Δ: mean, SD and 3.92·SD (the width target's unit)."""
    lines = ["estimate r_a − r_b across studies: design, n, Δ: mean, SD, 3.92·SD"]
    for r in rows:
        if r["procedure"] == "jk_t":
            lines.append(
                f"  {r['design']:<10} {r['n']:>3} {r['delta']:.2f}: mean {r['mean_estimate']:+.4f}, SD {r['sd_estimate']:.4f},"
                f" 3.92·SD {3.92 * r['sd_estimate']:.4f} ({r['replicates']} studies)"
            )
    return "\n".join(lines)


def design_lines(designs) -> str:
    """The truth of each cell: ρ_a, ρ_b, how the difference was set."""
    lines = []
    for design in designs:
        info = STUDIES[design][0]()
        extra = f", jitter {info['jitter']:.4f}" if "jitter" in info else ""
        lines.append(f"{design}: corr(a, b) = {info['corr_ab']:.3f}, b = 1 (tied) on {info['tied_share']:.1%}{extra}")
        for delta, cell in info["cells"].items():
            knobs = ", ".join(f"{k} {v:.4f}" for k, v in cell.items() if k not in ("rho_a", "rho_b"))
            lines.append(f"  Δ = {delta:.2f}: ρ_a = {cell['rho_a']:.4f}, ρ_b = {cell['rho_b']:.4f} ({knobs})")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--replicates", type=int, default=REPLICATES, help="studies per tied_votes cell (design × n × Δ)")
    parser.add_argument("--normal-share", type=float, default=0.5, help="the normal design's studies per cell, as a share")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="dialogues per study, comma-separated")
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples and permutations per study")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--designs", default=",".join(DESIGNS), help="comma-separated, of " + ", ".join(DESIGNS))
    parser.add_argument("--json", action="store_true", help="print the rows as JSON instead of the table")
    parser.add_argument("--json-file", default=None, help="also write the JSON to this file (one run, both outputs)")
    args = parser.parse_args()
    sizes = tuple(int(v) for v in args.sizes.split(","))
    designs = tuple(v for v in args.designs.split(",") if v)
    unknown = sorted(set(designs) - set(DESIGNS))
    if unknown:
        parser.error(f"unknown design(s) {', '.join(unknown)}; known: {', '.join(DESIGNS)}")
    started = time.perf_counter()
    rows = run(args.replicates, sizes, args.resamples, args.seed, designs, args.normal_share)
    settings = {
        "replicates": args.replicates,
        "normal_share": args.normal_share,
        "sizes": list(sizes),
        "resamples": args.resamples,
        "seed": args.seed,
        "designs": list(designs),
        "level": LEVEL,
        "seconds": round(time.perf_counter() - started, 1),
    }
    document = {"rows": rows, "designs": {d: STUDIES[d][0]() for d in designs}, "procedures": PROCEDURES, "settings": settings}
    if args.json_file:
        with open(args.json_file, "w") as handle:
            json.dump(document, handle, indent=1, default=str)
    if args.json:
        print(json.dumps(document, indent=1, default=str))
        return
    print(design_lines(designs))
    counts = ", ".join(
        f"{d} {args.replicates if d == 'tied_votes' else max(50, int(args.replicates * args.normal_share))}" for d in designs
    )
    print(
        f"{settings['seconds']} s; studies per cell: {counts}; {args.resamples} resamples / permutations per study;"
        f" nominal {LEVEL}; resampling unit: the dialogue; ± = Monte-Carlo SE"
    )
    print(spread_lines(rows))
    print()
    print(table(rows))


if __name__ == "__main__":
    main()
