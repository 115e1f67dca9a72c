"""Every metric against the ratings in one report: each metric's row (Pearson with its default interval,
Spearman, Kendall), the declared family of comparisons with adjusted p-values and intervals at the family's
level, and the notes.  The defaults (which interval family each row reports) are chosen here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from metrics.comparisons import ADJUSTMENT_NAMES, DEFAULT_FGA_LAMBDA, declare
from metrics.correlation.ceiling import FEW_ANNOTATORS, FEW_ANNOTATORS_COVERAGE
from metrics.correlation.differences import SAME, adjust_p, diff_ci, diff_test, williams_test
from metrics.correlation.pearson import (
    INTERVAL_FAMILIES,
    fisher_row,
    jackknife_annotators,
    jackknife_pearson,
    jackknife_votes,
    pearson_intervals,
    pearson_p_value,
    pearson_se,
    weighted_pearson,
)
from metrics.correlation.ranks import rank_cis, rank_jackknife_cis
from metrics.correlation.ratings import Ratings
from metrics.correlation.resampling import percentile_ci, resample_sums
from metrics.planning import dialogues_needed

# The note that says which metric pairs the difference's interval and test leave out (metrics.present shows it
# under the differences table)
NOT_COMPARED = "not compared (difference test and interval)"


# In pairs mode: each row's ``ci_method`` (its start) and how the note says it
PAIRS_INTERVALS = {"none:": "none for a metric on 3 or fewer dialogues"}  # the others: INTERVAL_FAMILIES' words


def _none(value: Any) -> float | None:
    return None if value is None or not np.isfinite(value) else float(value)


def correlate_one(
    x: np.ndarray, y: np.ndarray, boot_r: np.ndarray | None, confidence: float = 0.95, n_units: int | None = None
) -> dict[str, Any]:
    """Pearson r with its Fisher-z interval and that interval's own test as ``p_value`` (:func:`fisher_row`:
    z = atanh(r)·√(n − 3) against the normal, so that the interval excludes 0 exactly when p < 1 −
    ``confidence``), the percentile interval of the bootstrap r values given, Spearman and Kendall.  n is
    ``n_units`` (pairs mode: the dialogues, not the observations) or the observations; with 3 or fewer there
    is no interval and no p.  In pairs mode with a bootstrap the interval is Fisher z with the bootstrap SE
    over dialogues and a t quantile, and p its t test.  (:func:`correlation_report` replaces interval and p
    by the default family's and its test.)"""
    from scipy import stats

    row: dict[str, Any] = {
        "pearson": None,
        "pearson_ci": None,
        "p_value": None,
        "bootstrap_ci": None,
        "spearman": None,
        "kendall": None,
    }
    if x.size < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        row["note"] = "fewer than 3 observations" if x.size < 3 else "constant values: correlation undefined"
        return row
    row["pearson"] = float(stats.pearsonr(x, y).statistic)
    units = x.size if n_units is None else n_units
    if units > 3:
        row["pearson_ci"], row["p_value"] = fisher_row(row["pearson"], units, confidence)
        pairs = n_units is not None
        row["ci_method"] = "fisher, n = dialogues (conservative)" if pairs else f"fisher: {INTERVAL_FAMILIES['fisher']}"
    else:  # Fisher over dialogues needs n > 3: no interval, no p (fisher_row's [r, r] and p = 1 measure nothing)
        row["ci_method"] = f"none: {units} dialogues; a Fisher interval over dialogues needs more than 3"
    if n_units is not None and n_units > 3:  # pairs: the unit is the dialogue
        if boot_r is not None and np.isfinite(boot_r).sum() >= boot_r.size / 2 and abs(row["pearson"]) < 1:
            # Fisher z with the standard error of z over the dialogue bootstrap and a t quantile with
            # dialogues − 1 df (few clusters); see python -m bench.bench_coverage for its coverage beside
            # n = votes (0.80) and n = dialogues (0.995); p: that interval's t test
            from scipy.stats import t as student_t

            spread = float(np.nanstd(np.arctanh(np.clip(boot_r, -0.999999, 0.999999)), ddof=1))
            if spread > 0:
                z, half = math.atanh(row["pearson"]), student_t.ppf(0.5 + confidence / 2, n_units - 1) * spread
                row["pearson_ci"] = [math.tanh(z - half), math.tanh(z + half)]
                row["p_value"] = float(2 * student_t.sf(abs(z) / spread, n_units - 1))
                row["ci_method"] = "fisher z, bootstrap SE over dialogues, t(dialogues - 1)"
    if boot_r is not None and np.isfinite(boot_r).sum() >= boot_r.size / 2:
        lo, hi = percentile_ci(boot_r, confidence)
        row["bootstrap_ci"] = [float(lo), float(hi)]
    row["spearman"] = _none(stats.spearmanr(x, y).statistic)
    row["kendall"] = _none(stats.kendalltau(x, y).statistic)
    return row


DEFAULT_INTERVAL = {"mean": "jackknife_t", "pairs": "jackknife_t", "two_way": "jackknife_t"}


# The difference r_a − r_b: the jackknife-t of Fisher's z_a − z_b over dialogues, mapped to r (``diff_ci``)
DIFF_DEFAULT = "jackknife_t_z_diff"


# The rank coefficients' reported intervals (``spearman_ci``, ``kendall_ci``): both the jackknife-t on Fisher's z
# (``rank_jackknife_cis``; the fixed-variance Fisher ones of ``rank_cis`` where it gives none: pairs mode, fewer
# than 5 or more than 2,000 dialogues).  With heavy ties (a metric at 1 on ~60% of dialogues, means of 2-5
# binary votes: python -m bench.bench_coverage, design tied_votes) Fieller, Hartley & Pearson's fixed variance
# of Kendall's τ, 0.437 / (n − 4), is that of untied normal data and covered ~0.90, the jackknife-t 0.95-0.96;
# for Spearman's ρ the jackknife-t was already the default and held 0.95-0.96 there too (ranks.py says more);
# the fixed-variance ones stay beside them in ``rank_intervals``
RANK_DEFAULT = {"spearman": "jackknife_t", "kendall": "jackknife_t"}


# Without a bootstrap (--bootstrap 0) a family that needs one falls back to the first of these that exists
NO_BOOTSTRAP_FALLBACK = ("sandwich_t", "fisher")


def interval_key(mode: str, resample: str) -> str:
    """Which DEFAULT_INTERVAL entry a row uses: ``two_way`` when annotators are resampled too, else the mode."""
    return "two_way" if resample != "dialogues" else ("pairs" if mode == "pairs" else "mean")


def _pearson_row_intervals(
    masked: np.ndarray,
    valid: np.ndarray,
    ratings: Ratings,
    sums: tuple[np.ndarray, np.ndarray, np.ndarray],
    boot: np.ndarray | None,
    resampled: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None,
    units: int,
    resample: str,
) -> dict[str, Any]:
    """Every interval family for one metric's r, the default one as ``pearson_ci`` / ``ci_method``."""
    n, sy, syy = (v * valid for v in sums)
    r = float(weighted_pearson(masked, n, sy, syy))
    if not np.isfinite(r) or units <= 3:  # no interval over 3 or fewer dialogues (correlate_one says so)
        return {"intervals": dict.fromkeys(INTERVAL_FAMILIES)}
    se = float(pearson_se(masked, n, sy, syy))
    jack, jack_a, jack_v, boot_se = None, None, None, None
    if resampled is not None or units <= 2000:
        jack = jackknife_pearson(masked, n, sy, syy)[valid & (n > 0)]
    if resampled is not None:
        boot_se = pearson_se(masked, resampled[1], resampled[2], resampled[3], resampled[0])
        if resample != "dialogues":
            jack_a = jackknife_annotators(masked, ratings, valid)
            jack_v = jackknife_votes(masked, ratings, valid)
    inputs: dict[str, Any] = {
        "boot": boot,
        "boot_se": boot_se,
        "se": se,
        "jackknife": jack,
        "jackknife_annotators": jack_a,
        "jackknife_votes": jack_v,
    }
    intervals = pearson_intervals(r, units, **inputs)
    out: dict[str, Any] = {"bca_ci": intervals["bca"], "intervals": intervals}
    family = DEFAULT_INTERVAL[interval_key(ratings.mode, resample)]
    if intervals[family] is None:
        family = next((f for f in NO_BOOTSTRAP_FALLBACK if intervals[f] is not None), family)
    if intervals[family] is not None:
        unit = "dialogues and annotators" if resample != "dialogues" else "dialogues"
        out["pearson_ci"] = intervals[family]
        out["ci_method"] = f"{family}: {INTERVAL_FAMILIES[family]} (unit: {unit})"
        out["p_value"] = pearson_p_value(family, r, units, **inputs)  # the reported interval's own test
    return out


def correlation_report(
    metric_values: Mapping[str, np.ndarray],
    ratings: Ratings,
    *,
    resamples: int = 1000,
    seed: int = 0,
    adjust: str = "holm",
    resample: str = "dialogues",
    family: str = "reference",
    reference: str = "jga",
    fga_lambda: float = DEFAULT_FGA_LAMBDA,
) -> dict[str, Any]:
    """Every metric against the ratings; the difference r_a − r_b with its jackknife-t
    interval and that interval's test (Williams' t beside it) for each comparison of the
    declared family (``family``: each metric against ``reference`` with FGA at ``fga_lambda``, or
    ``all`` pairs; :mod:`metrics.comparisons`), p-values adjusted over that family and intervals at
    the level that agrees with the adjustment (``adjust``: holm, bonferroni, bh or none), notes.  The
    bootstrap resamples dialogues, or dialogues and annotators (``resample``, see :func:`resample_sums`);
    ``bca_ci`` is Efron's BCa interval for r, ``spearman_ci`` / ``kendall_ci`` Fisher-z intervals (``RANK_DEFAULT``).

    Each metric's ``pearson_ci`` is the family of ``DEFAULT_INTERVAL`` (the fallback of
    ``NO_BOOTSTRAP_FALLBACK`` where it has none), named in ``ci_method``, and its ``p_value`` is that
    interval's own two-sided test of r = 0 (:func:`pearson_p_value`; the jackknife-t: t = atanh(r) / SE_jack
    with dialogues − 1 df), so that the interval excludes 0 exactly when p < 0.05.

    ``metric_values[name]`` is per dialogue in ``ratings.dialogue_ids`` order; NaN values
    (AGA of a dialogue without non-empty gold) drop those observations for that metric.  ``n`` is
    the number of dialogues in every mode (``n_votes`` in pairs mode says how many votes they had).
    """
    adjust_p([], adjust)  # an unknown method is refused before any work
    rng = np.random.default_rng(seed)
    n, sy, syy = ratings.sufficient()
    weights = None
    if resamples > 0:
        weights, n_b, sy_b, syy_b = resample_sums(ratings, resamples, rng, resample)
    y = ratings.value
    pairs = ratings.mode == "pairs"
    rows, observed, undefined = [], {}, {}
    for name, per_dialogue in metric_values.items():
        valid = np.isfinite(per_dialogue)
        x_obs = per_dialogue[ratings.dialogue]
        keep = valid[ratings.dialogue]
        boot = None
        masked = np.where(valid, per_dialogue, 0.0)
        resampled = None
        if weights is not None:
            boot = weighted_pearson(masked, n_b * valid, sy_b * valid, syy_b * valid, weights)
            resampled = (weights, n_b * valid, sy_b * valid, syy_b * valid)
        units = int(np.unique(ratings.dialogue[keep]).size)
        row = {
            "metric": name,
            "n": units,
            **({"n_votes": int(keep.sum())} if pairs else {}),
            **correlate_one(x_obs[keep], y[keep], boot, n_units=units if pairs else None),
        }
        row["spearman_ci"], row["kendall_ci"] = rank_cis(row["spearman"], row["kendall"], units)
        if not pairs and row["pearson"] is not None:  # both families of the rank intervals (bench_coverage)
            rho_jack, tau_jack = rank_jackknife_cis(x_obs[keep], y[keep], row["spearman"], row["kendall"])
            row["rank_intervals"] = {
                "spearman": {"fisher_bw": row["spearman_ci"], "jackknife_t": rho_jack},
                "kendall": {"fisher_fhp": row["kendall_ci"], "jackknife_t": tau_jack},
            }
            row["spearman_ci"] = rho_jack or row["spearman_ci"]  # RANK_DEFAULT
            row["kendall_ci"] = tau_jack or row["kendall_ci"]
        if row["pearson"] is None:
            undefined[name] = "fewer than 3 observations" if keep.sum() < 3 else "constant values"
        row["bca_ci"] = None
        if row["pearson"] is not None:
            row.update(_pearson_row_intervals(masked, valid, ratings, (n, sy, syy), boot, resampled, units, resample))
        if keep.sum() < keep.size:
            row["note"] = f"{int((~valid).sum())} dialogue(s) without a value left out"
        rows.append(row)
        observed[name] = (x_obs, keep)
    williams: list[dict[str, Any]] = []
    too_few: dict[tuple[int, str], list[str]] = {}
    if pairs:  # metrics are compared on the dialogues' mean ratings: the dialogue is the unit
        rated = n > 0
        y_unit = np.where(rated, sy / np.maximum(n, 1), np.nan)
        observed = {name: (per_dialogue, rated & np.isfinite(per_dialogue)) for name, per_dialogue in metric_values.items()}
        y = y_unit
    data = {}  # each comparison's units: (rating, metric A, metric B), for its interval
    declared = declare([row["metric"] for row in rows], kind=family, reference=reference, fga_lambda=fga_lambda, adjust=adjust)
    by_name = {row["metric"]: row for row in rows}
    for name_a, name_b in declared.pairs:
        a, b = by_name[name_a], by_name[name_b]
        if a["pearson"] is None or b["pearson"] is None:
            continue
        keep = observed[a["metric"]][1] & observed[b["metric"]][1]
        xa, xb = observed[a["metric"]][0][keep], observed[b["metric"]][0][keep]
        units = int(keep.sum())
        entry = {"a": a["metric"], "b": b["metric"], "n": units}
        if np.ptp(xa) == 0 or np.ptp(xb) == 0 or units <= 3:
            why = "both need more than 3" if units <= 3 else "a metric is constant on them"
            too_few.setdefault((units, why), []).append(f"{a['metric']} vs {b['metric']}")
            continue
        r12, r13 = np.corrcoef(y[keep], xa)[0, 1], np.corrcoef(y[keep], xb)[0, 1]
        r23 = np.corrcoef(xa, xb)[0, 1]
        entry.update(r_a=float(r12), r_b=float(r13), r_ab=float(r23), diff=float(r12 - r13))
        data[id(entry)] = (y[keep], xa, xb)
        entry["p_value"] = diff_test(y[keep], xa, xb)[1]  # the difference interval's own test
        if entry["p_value"] is None:
            entry.update(diff_ci=None, note="no interval: a correlation is ±1 or too few dialogues vary")
        if r23 >= 1 - SAME:  # Williams' t and the planner are 0/0 here; the difference is exactly 0
            entry.update(t=None, p_williams=None, n_needed=None)
            entry["note"] = f"{a['metric']} and {b['metric']} are the same up to scale on these dialogues: r_A = r_B"
        else:
            try:
                # Williams' t (normal theory) stays for reference
                entry["t"], entry["p_williams"] = williams_test(r12, r13, r23, units)
                # 80% power for this comparison at the family's level α/m (metrics.planning: the power of diff_test)
                entry["n_needed"] = dialogues_needed(r12, r13, r23, alpha=declared.test_alpha) if r12 != r13 else None
            except ValueError as why:  # a singular correlation matrix: the rating is a blend of the two metrics
                said = "Williams' t" if entry.get("t") is None else "the planner (n for 80% power)"
                entry.update(t=entry.get("t"), p_williams=entry.get("p_williams"), n_needed=None)
                entry["note"] = "; ".join(filter(None, [entry.get("note"), f"{said}: {why}"]))
        williams.append(entry)
    tested = [w for w in williams if w["p_value"] is not None]
    adjusted = adjust_p([w["p_value"] for w in tested], adjust)
    if adjusted is not None:
        for entry, value in zip(tested, adjusted):
            entry[f"p_{adjust}"] = value
    rejected = sum(value < declared.alpha for value in adjusted or ())
    confidence = declared.interval_confidence(rejected, len(tested))  # p and interval over the same m
    for entry in tested:  # the difference's interval at the level that agrees with the adjusted test (metrics.comparisons)
        interval = diff_ci(*data[id(entry)], confidence)
        entry["diff_ci"] = list(interval) if interval is not None else None
        if entry["diff_ci"] is None:
            continue
        entry["significant"] = (entry.get(f"p_{adjust}", entry["p_value"])) < declared.alpha
        excludes = entry["diff_ci"][0] > 0 or entry["diff_ci"][1] < 0
        if entry["significant"] and not excludes and adjust in ("holm", "bh"):
            entry["note"] = (
                f"significant after {ADJUSTMENT_NAMES[adjust]}; its interval at the family's level still touches 0 "
                f"({ADJUSTMENT_NAMES[adjust]}'s step-wise test finds more than the interval shows)"
            )
    notes = []
    if resamples > 0 and resample != "dialogues":
        notes.append(
            "bootstrap over dialogues and annotators (two-way): the intervals include the uncertainty of which "
            "annotators were asked; the reported one is Fisher z with the two-way jackknife SE (dialogues, and "
            "annotators net of the votes' own noise) and Satterthwaite's df; BCa's acceleration comes from the "
            "jackknife over dialogues and annotators"
        )
    if resamples <= 0:
        notes.append(
            "no bootstrap resamples (0 asked for): no bootstrap interval was computed (bootstrap_ci and bca_ci are null); "
            "the reported "
            "intervals are jackknife ones, which need no resampling"
        )
    voted = 0 if ratings.matrix is None else int(np.isfinite(ratings.matrix).any(axis=1).sum())
    if resample == "dialogues" and 0 < voted <= FEW_ANNOTATORS:
        notes.append(
            f"only {voted} annotators gave these votes: intervals over dialogues leave out which annotators were "
            "asked and their own leniency and scale, and can be too narrow (simulated coverage of 95% intervals, "
            f"{FEW_ANNOTATORS_COVERAGE}); resampling annotators as well as dialogues covers that"
        )
    if pairs:  # the interval each metric got, said as it was (issue 26: not "conservative" for none)
        methods = {row["ci_method"] for row in rows if "ci_method" in row}
        used = [text for key, text in PAIRS_INTERVALS.items() if any(m.startswith(key) for m in methods)]
        used += sorted({m.split(" (unit:")[0].split(": ", 1)[1] for m in methods if m.split(":")[0] in INTERVAL_FAMILIES})
        notes.append(
            "rating pairs: every vote is an observation for r, but a dialogue's votes are not independent: n "
            f"counts dialogues, the interval is {'; '.join(used) or 'none'}, and metrics are compared (their "
            "difference) on the dialogues' mean ratings"
        )
    # A pair of metrics that the difference's test and interval leave out is said so, not dropped (issue 26)
    notes += [f"{NOT_COMPARED}: {name} — its correlation is undefined ({why})" for name, why in undefined.items()]
    for (units, reason), names in too_few.items():
        listed = ", ".join(names) if len(names) <= 3 else f"{len(names)} metric pairs"
        notes.append(f"{NOT_COMPARED}: {listed} on {units} dialogues; {reason}")
    if family == "reference" and declared.kind == "all":
        notes.append(f"the reference metric {reference} was not measured: every pair of metrics is compared")
    notes.append(f"comparisons: {declared.describe(rejected, len(tested))}")
    bootstrap = {"resamples": resamples, "seed": seed, "resample": resample}  # the unit of resampling, as calibrate's
    comparisons = {
        "family": declared.kind,
        "key": declared.key,
        "reference": declared.reference,
        "fga": declared.fga,
        "size": declared.size,
        "tested": len(tested),
        "adjust": adjust,
        "alpha": declared.alpha,
        "interval_confidence": confidence,
        "planning_alpha": declared.test_alpha,
        "text": declared.describe(rejected, len(tested)),
    }
    return {"metrics": rows, "williams": williams, "comparisons": comparisons, "notes": notes, "bootstrap": bootstrap}
