"""Metric–human correlation per dialogue: Pearson (+ Fisher-z and bootstrap CIs), Spearman,
Kendall, Williams' test between two metrics, and the human ceiling.

Ratings are *observations* (dialogue index, value).  ``mean`` (default) and ``majority``
give one observation per dialogue; ``pairs`` keeps every vote as its own observation (the
metric value repeats).  A bootstrap resamples dialogues, so all of a dialogue's
observations move together; weighted sums per dialogue make that one matrix product.

Williams' test (Williams 1959; Graham & Baldwin 2014) for r12 = r(human, A) vs
r13 = r(human, B) with r23 = r(A, B) on n observations:

>>> t, p = williams_test(0.65, 0.55, 0.3, 50)
>>> round(p / 2, 6)          # one-sided p of nlp-williams' README example: 0.20928617286753592
0.209286
>>> round(williams_test(0.4, 0.5, 0.1, 103)[0], 2)   # psych::r.test example: t = -0.89
-0.89

The difference r12 − r13 gets Zou's (2007) interval for overlapping dependent correlations (as R's
cocor ``zou2007``), and the p-values of every pair reported are adjusted together (Holm by default).

In ``pairs`` mode the unit is the dialogue: the Fisher interval, the p-value and Williams' test use
n = dialogues (the votes of one dialogue are not independent observations; with 3 or fewer dialogues there
is no Fisher interval and no p), and the bootstrap resamples dialogues.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from formats.tidy import Vote
from metrics.aggregate import majority_from_counts, unit_table
from metrics.planning import dialogues_needed

RATING_MODES = ("mean", "majority", "pairs")
# The note that says which metric pairs Williams' test and Zou's interval leave out (metrics.present shows it
# under the differences table)
NOT_COMPARED = "not compared (Williams' test, Zou's interval)"
# In pairs mode: each row's ``ci_method`` (its start) and how the note says it
PAIRS_INTERVALS = {
    "fisher z, bootstrap SE": "Fisher z with the standard error of the bootstrap over dialogues",
    "fisher, n = dialogues": "Fisher with n = dialogues (conservative, without a bootstrap)",
    "none:": "none for a metric on 3 or fewer dialogues",
}
ADJUSTMENTS = ("holm", "bh", "none")


@dataclass
class Ratings:
    """Human ratings aligned to dialogues: observation i rates dialogue ``dialogue[i]``."""

    dialogue_ids: list[str]
    dialogue: np.ndarray  # observation -> dialogue index
    value: np.ndarray
    mode: str
    notes: list[str]
    matrix: np.ndarray | None = None  # annotators × dialogues of the votes (NaN: none), for rater resampling

    @property
    def n_dialogues(self) -> int:
        return len(self.dialogue_ids)

    def sufficient(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per dialogue: number of observations, Σ y, Σ y²."""
        d = self.n_dialogues
        n = np.bincount(self.dialogue, minlength=d).astype(float)
        sy = np.bincount(self.dialogue, weights=self.value, minlength=d)
        syy = np.bincount(self.dialogue, weights=self.value**2, minlength=d)
        return n, sy, syy


def _numeric(votes: Sequence[Vote]) -> np.ndarray:
    try:
        return np.array([float(v.value) for v in votes])
    except ValueError:
        bad = next(v for v in votes if not _is_number(v.value))
        raise ValueError(f"rating {bad.value!r} of {bad.annotator} on {bad.item} is not a number") from None


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def ratings_for(votes: Sequence[Vote], dialogue_ids: Sequence[str], mode: str = "mean", tie: str = "none") -> Ratings:
    """Align votes (item = dialogue id) with the scored dialogues; unmatched ones are noted.

    Raises ValueError when no rated dialogue has predictions, or one dialogue is rated
    under several conditions (pick one with ``--condition``).
    """
    if mode not in RATING_MODES:
        raise ValueError(f"rating must be one of {', '.join(RATING_MODES)}, got {mode!r}")
    conditions: dict[str, set[str]] = {}
    for vote in votes:
        conditions.setdefault(vote.item, set()).add(vote.condition)
    several = sorted(item for item, found in conditions.items() if len(found) > 1)
    if several:
        raise ValueError(f"dialogue {several[0]!r} is rated under several conditions; choose one with --condition")
    index = {d: i for i, d in enumerate(dialogue_ids)}
    known = [v for v in votes if v.item in index]
    notes = []
    unknown = sorted({v.item for v in votes} - set(index))
    if unknown:
        notes.append(f"{len(unknown)} rated item(s) have no predictions and are left out (e.g. {unknown[0]!r})")
    if not known:
        raise ValueError("no rated item matches a dialogue id in the predictions")
    values = _numeric(known)
    rated = sorted({index[v.item] for v in known})
    keep = {d: i for i, d in enumerate(rated)}  # dialogues with ratings only, in prediction order
    ids = [dialogue_ids[d] for d in rated]
    if len(rated) < len(dialogue_ids):
        notes.append(f"{len(dialogue_ids) - len(rated)} dialogue(s) have no rating and are left out")
    observation = np.array([keep[index[v.item]] for v in known])
    matrix = _rating_matrix(known, ids)[1]
    if mode == "pairs":
        return Ratings(ids, observation, values, mode, notes, matrix)
    if mode == "mean":
        n = np.bincount(observation, minlength=len(ids))
        means = np.bincount(observation, weights=values, minlength=len(ids)) / n
        return Ratings(ids, np.arange(len(ids)), means, mode, notes, matrix)
    table = unit_table(known)
    majority = majority_from_counts(table.counts, table.categories, tie)
    by_item = {unit[0]: label for unit, label in zip(table.units, majority.labels)}
    chosen = [(keep[index[item]], float(label)) for item, label in by_item.items() if label is not None]
    if majority.n_ties and tie == "none":
        notes.append(f"{majority.n_ties} dialogue(s) with tied votes have no majority and are left out")
    chosen.sort()
    dialogue = np.array([d for d, _ in chosen], dtype=int)
    return Ratings(ids, dialogue, np.array([v for _, v in chosen]), mode, notes)


def weighted_pearson(
    x: np.ndarray, n: np.ndarray, sy: np.ndarray, syy: np.ndarray, weights: np.ndarray | None = None
) -> np.ndarray:
    """Pearson r of per-dialogue metric values ``x`` (D or D×K) against ratings given as
    per-dialogue sums, for each row of dialogue ``weights`` (B×D; None: every dialogue once).
    ``n``, ``sy``, ``syy`` are D, or B×D when each resample has its own (raters resampled too).

    Returns B×K (or K, or a scalar, following the inputs); NaN where a variance is 0.
    """
    single = weights is None and n.ndim == 1
    w = np.ones((1, n.shape[-1])) if weights is None else weights
    x2 = x if x.ndim == 2 else x[:, None]
    wn = w * n
    total = wn.sum(axis=1)[:, None]
    sx = wn @ x2
    sxx = wn @ x2**2
    sxy = (w * sy) @ x2
    s_y = (w * sy).sum(axis=1)[:, None]
    s_yy = (w * syy).sum(axis=1)[:, None]
    cov = total * sxy - sx * s_y
    var_x = total * sxx - sx**2
    var_y = total * s_yy - s_y**2
    with np.errstate(invalid="ignore", divide="ignore"):
        var_x = np.where(var_x > 1e-12 * np.maximum(total * sxx, 1e-300), var_x, np.nan)
        var_y = np.where(var_y > 1e-12 * np.maximum(total * s_yy, 1e-300), var_y, np.nan)
        r = np.clip(cov / np.sqrt(var_x * var_y), -1.0, 1.0)
    if x.ndim == 1:
        r = r[:, 0]
    return r[0] if single else r


RESAMPLING = ("dialogues", "dialogues+annotators")


def resample_sums(ratings: Ratings, resamples: int, rng: np.random.Generator, resample: str = "dialogues"):
    """Bootstrap resamples as (dialogue weights B×D, n, sy, syy), the rating sums being D (dialogues only)
    or B×D (``dialogues+annotators``: a two-way bootstrap that also draws the annotators with
    replacement, so that a study whose same few annotators rate every dialogue shows the uncertainty
    of having chosen them; a dialogue none of the drawn annotators rated drops out of that resample)."""
    if resample not in RESAMPLING:
        raise ValueError(f"--resample must be one of {', '.join(RESAMPLING)}, got {resample!r}")
    weights = bootstrap_weights(ratings.n_dialogues, resamples, rng)
    n, sy, syy = ratings.sufficient()
    if resample == "dialogues":
        return weights, n, sy, syy
    if ratings.mode == "majority" or ratings.matrix is None:
        raise ValueError("--resample dialogues+annotators needs --rating mean or pairs (a majority is not re-drawn)")
    rated = np.isfinite(ratings.matrix).astype(float)
    values = np.nan_to_num(ratings.matrix)
    annotators = bootstrap_weights(rated.shape[0], resamples, rng).astype(float)  # B × A
    count, total, squares = annotators @ rated, annotators @ values, annotators @ values**2
    if ratings.mode == "pairs":
        return weights, count, total, squares
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(count > 0, total / np.where(count > 0, count, 1), 0.0)
    present = (count > 0).astype(float)
    return weights, present, mean * present, mean**2 * present


def bca_interval(estimate: float, boot: np.ndarray, jackknife: np.ndarray, confidence: float = 0.95) -> list[float] | None:
    """Efron's bias-corrected and accelerated interval from bootstrap values and leave-one-out values."""
    from scipy.stats import norm

    boot, jackknife = boot[np.isfinite(boot)], jackknife[np.isfinite(jackknife)]
    if boot.size < 10 or jackknife.size < 3:
        return None
    share = np.mean(boot < estimate) + 0.5 * np.mean(boot == estimate)
    if share <= 0 or share >= 1:
        return None
    z0 = norm.ppf(share)
    spread = jackknife.mean() - jackknife
    denominator = 6 * (spread**2).sum() ** 1.5
    acceleration = float((spread**3).sum() / denominator) if denominator > 0 else 0.0
    tails = []
    for alpha in ((1 - confidence) / 2, (1 + confidence) / 2):
        z = z0 + norm.ppf(alpha)
        tails.append(100 * norm.cdf(z0 + z / (1 - acceleration * z)))
    low, high = np.percentile(boot, tails)
    return [float(low), float(high)]


def jackknife_pearson(x: np.ndarray, n: np.ndarray, sy: np.ndarray, syy: np.ndarray, chunk: int = 512) -> np.ndarray:
    """r with each dialogue left out in turn (D values), in chunks so that memory stays D × chunk."""
    d = n.size
    out = np.empty(d)
    for start in range(0, d, chunk):
        rows = np.arange(start, min(d, start + chunk))
        weights = np.ones((rows.size, d))
        weights[np.arange(rows.size), rows] = 0.0
        out[rows] = weighted_pearson(x, n, sy, syy, weights)
    return out


def rank_cis(spearman: float | None, kendall: float | None, n: int, confidence: float = 0.95) -> tuple:
    """Fisher-z intervals for Spearman's ρ (Bonett & Wright 2000: var = (1 + ρ²/2) / (n − 3)) and
    Kendall's τ (Fieller, Hartley & Pearson 1957: var = 0.437 / (n − 4)) on n units."""
    from scipy.stats import norm

    z = norm.ppf(0.5 + confidence / 2)

    def interval(r, variance):
        if r is None or abs(r) >= 1 or variance is None:
            return None
        centre, half = math.atanh(r), z * math.sqrt(variance)
        return [math.tanh(centre - half), math.tanh(centre + half)]

    return (
        interval(spearman, (1 + (spearman or 0) ** 2 / 2) / (n - 3) if n > 3 else None),
        interval(kendall, 0.437 / (n - 4) if n > 4 else None),
    )


def bootstrap_weights(n_dialogues: int, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """B×D counts: how often each dialogue is drawn in each resample."""
    draws = rng.integers(0, n_dialogues, size=(resamples, n_dialogues))
    offsets = (np.arange(resamples) * n_dialogues)[:, None]
    return np.bincount((draws + offsets).ravel(), minlength=resamples * n_dialogues).reshape(resamples, n_dialogues)


def percentile_ci(values: np.ndarray, confidence: float = 0.95, axis: int = 0):
    tail = (1 - confidence) / 2 * 100
    with np.errstate(invalid="ignore"):
        return np.nanpercentile(values, tail, axis=axis), np.nanpercentile(values, 100 - tail, axis=axis)


def williams_test(r12: float, r13: float, r23: float, n: int) -> tuple[float, float]:
    """Williams' t for r12 vs r13 sharing variable 1; returns (t, two-sided p), df = n − 3."""
    from scipy.stats import t as student_t

    if n <= 3:
        raise ValueError("Williams' test needs more than 3 observations")
    k = 1 - r12**2 - r13**2 - r23**2 + 2 * r12 * r13 * r23
    denominator = 2 * k * (n - 1) / (n - 3) + ((r12 + r13) ** 2 / 4) * (1 - r23) ** 3
    if denominator <= 0:
        raise ValueError("the correlations are degenerate (the two metrics are identical)")
    t = (r12 - r13) * math.sqrt((n - 1) * (1 + r23)) / math.sqrt(denominator)
    return float(t), float(2 * student_t.sf(abs(t), n - 3))


def zou_diff_ci(r_a: float, r_b: float, r_ab: float, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Zou's (2007) interval for r_a − r_b, two correlations with a shared variable (the human rating)
    and r_ab between the other two, on n units: built from the Fisher intervals of r_a and r_b
    (z ± z_α/2 / √(n − 3)) and the correlation c between the two estimates.

    >>> [round(v, 3) for v in zou_diff_ci(0.396, 0.179, 0.088, 66)]   # Zou (2007), Example 2
    [-0.093, 0.517]
    """
    from scipy.stats import norm

    if n <= 3:
        raise ValueError("an interval for a difference of correlations needs more than 3 units")
    half = norm.ppf(0.5 + confidence / 2) / math.sqrt(n - 3)
    (l1, u1), (l2, u2) = ((math.tanh(math.atanh(r) - half), math.tanh(math.atanh(r) + half)) for r in (r_a, r_b))
    c = ((r_ab - r_a * r_b / 2) * (1 - r_a**2 - r_b**2 - r_ab**2) + r_ab**3) / ((1 - r_a**2) * (1 - r_b**2))
    diff = r_a - r_b
    low = diff - math.sqrt(max(0.0, (r_a - l1) ** 2 + (u2 - r_b) ** 2 - 2 * c * (r_a - l1) * (u2 - r_b)))
    high = diff + math.sqrt(max(0.0, (u1 - r_a) ** 2 + (r_b - l2) ** 2 - 2 * c * (u1 - r_a) * (r_b - l2)))
    return float(low), float(high)


def adjust_p(p_values: Sequence[float], method: str = "holm") -> list[float] | None:
    """p-values adjusted for the number tested: Holm (family-wise error) or Benjamini–Hochberg (false
    discovery rate), by statsmodels; None for ``none``."""
    if method not in ADJUSTMENTS:
        raise ValueError(f"--adjust must be one of {', '.join(ADJUSTMENTS)}, got {method!r}")
    if method == "none":
        return None
    if not p_values:
        return []
    from statsmodels.stats.multitest import multipletests

    return [float(p) for p in multipletests(list(p_values), method="holm" if method == "holm" else "fdr_bh")[1]]


def fisher_row(r: float, n: int, confidence: float = 0.95) -> tuple[list[float], float]:
    """Fisher-z interval and the two-sided t-test p-value of a Pearson r on n units."""
    from scipy.stats import norm
    from scipy.stats import t as student_t

    if n <= 3 or abs(r) >= 1:
        return [float(r), float(r)], 0.0 if abs(r) >= 1 else 1.0
    half = norm.ppf(0.5 + confidence / 2) / math.sqrt(n - 3)
    z = math.atanh(r)
    t = r * math.sqrt((n - 2) / (1 - r**2))
    return [math.tanh(z - half), math.tanh(z + half)], float(2 * student_t.sf(abs(t), n - 2))


def _none(value) -> float | None:
    return None if value is None or not np.isfinite(value) else float(value)


def correlate_one(
    x: np.ndarray, y: np.ndarray, boot_r: np.ndarray | None, confidence: float = 0.95, n_units: int | None = None
) -> dict:
    """Pearson with Fisher-z CI and p (scipy), the bootstrap CI given, Spearman and Kendall.  With
    ``n_units`` (pairs mode: the dialogues) the Fisher CI and p use that n, not the observations."""
    from scipy import stats

    row = {"pearson": None, "pearson_ci": None, "p_value": None, "bootstrap_ci": None, "spearman": None, "kendall": None}
    if x.size < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        row["note"] = "fewer than 3 observations" if x.size < 3 else "constant values: correlation undefined"
        return row
    result = stats.pearsonr(x, y)
    ci = result.confidence_interval(confidence)
    row.update(pearson=float(result.statistic), pearson_ci=[float(ci.low), float(ci.high)], p_value=float(result.pvalue))
    if n_units is not None:  # pairs: the unit is the dialogue
        if n_units > 3:
            row["pearson_ci"], row["p_value"] = fisher_row(row["pearson"], n_units, confidence)
            row["ci_method"] = "fisher, n = dialogues (conservative)"
        else:  # Fisher over dialogues needs n > 3: no interval, no p (fisher_row's [r, r] and p = 1 measure nothing)
            row["pearson_ci"], row["p_value"] = None, None
            row["ci_method"] = f"none: {n_units} dialogues; a Fisher interval over dialogues needs more than 3"
        if boot_r is not None and np.isfinite(boot_r).sum() >= boot_r.size / 2 and abs(row["pearson"]) < 1:
            # Fisher z with the standard error of z over the dialogue bootstrap and a t quantile with
            # dialogues − 1 df (few clusters); see python -m bench.bench_coverage for its coverage beside
            # n = votes (0.80) and n = dialogues (0.995)
            from scipy.stats import t as student_t

            spread = float(np.nanstd(np.arctanh(np.clip(boot_r, -0.999999, 0.999999)), ddof=1))
            z, half = math.atanh(row["pearson"]), student_t.ppf(0.5 + confidence / 2, n_units - 1) * spread
            row["pearson_ci"] = [math.tanh(z - half), math.tanh(z + half)]
            row["ci_method"] = "fisher z, bootstrap SE over dialogues, t(dialogues - 1)"
    if boot_r is not None and np.isfinite(boot_r).sum() >= boot_r.size / 2:
        lo, hi = percentile_ci(boot_r, confidence)
        row["bootstrap_ci"] = [float(lo), float(hi)]
    row["spearman"] = _none(stats.spearmanr(x, y).statistic)
    row["kendall"] = _none(stats.kendalltau(x, y).statistic)
    return row


def correlation_report(
    metric_values: Mapping[str, np.ndarray],
    ratings: Ratings,
    *,
    resamples: int = 1000,
    seed: int = 0,
    adjust: str = "holm",
    resample: str = "dialogues",
) -> dict:
    """Every metric against the ratings, Williams' test with Zou's interval for every pair, p-values
    adjusted over all pairs (``adjust``: holm, bh or none), notes.  The bootstrap resamples dialogues,
    or dialogues and annotators (``resample``, see :func:`resample_sums`); ``bca_ci`` is Efron's BCa
    interval for r (jackknife over dialogues), ``spearman_ci`` / ``kendall_ci`` Fisher-z intervals.

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
        if weights is not None:
            boot = weighted_pearson(masked, n_b * valid, sy_b * valid, syy_b * valid, weights)
        units = int(np.unique(ratings.dialogue[keep]).size)
        row = {
            "metric": name,
            "n": units,
            **({"n_votes": int(keep.sum())} if pairs else {}),
            **correlate_one(x_obs[keep], y[keep], boot, n_units=units if pairs else None),
        }
        row["spearman_ci"], row["kendall_ci"] = rank_cis(row["spearman"], row["kendall"], units)
        if row["pearson"] is None:
            undefined[name] = "fewer than 3 observations" if keep.sum() < 3 else "constant values"
        row["bca_ci"] = None
        if boot is not None and row["pearson"] is not None:
            jackknife = jackknife_pearson(masked, n * valid, sy * valid, syy * valid)[valid & (n > 0)]
            row["bca_ci"] = bca_interval(float(weighted_pearson(masked, n * valid, sy * valid, syy * valid)), boot, jackknife)
        if keep.sum() < keep.size:
            row["note"] = f"{int((~valid).sum())} dialogue(s) without a value left out"
        rows.append(row)
        observed[name] = (x_obs, keep)
    williams, too_few = [], {}
    if pairs:  # metrics are compared on the dialogues' mean ratings: the dialogue is the unit
        rated = n > 0
        y_unit = np.where(rated, sy / np.maximum(n, 1), np.nan)
        observed = {name: (per_dialogue, rated & np.isfinite(per_dialogue)) for name, per_dialogue in metric_values.items()}
        y = y_unit
    for i, a in enumerate(rows):
        for b in rows[i + 1 :]:
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
            try:
                entry["t"], entry["p_value"] = williams_test(r12, r13, r23, units)
                entry["diff_ci"] = list(zou_diff_ci(r12, r13, r23, units))
                entry["n_needed"] = dialogues_needed(r12, r13, r23)  # for 80% power at α = 0.05 (metrics.planning)
            except ValueError as why:
                entry.update(t=None, p_value=None, diff_ci=None, n_needed=None, note=str(why))
            williams.append(entry)
    tested = [w for w in williams if w["p_value"] is not None]
    adjusted = adjust_p([w["p_value"] for w in tested], adjust)
    if adjusted is not None:
        for entry, value in zip(tested, adjusted):
            entry[f"p_{adjust}"] = value
    notes = []
    if resamples > 0 and resample != "dialogues":
        notes.append(
            "bootstrap over dialogues and annotators (two-way): the intervals include the uncertainty of which "
            "annotators were asked; BCa's acceleration comes from a jackknife over dialogues"
        )
    if resamples <= 0:
        notes.append("--bootstrap 0: no bootstrap interval was computed (bootstrap_ci and the ceiling's ci are null)")
    if pairs:  # the interval each metric got, said as it was (issue 26: not "conservative" for none)
        methods = {row["ci_method"] for row in rows if "ci_method" in row}
        used = [text for key, text in PAIRS_INTERVALS.items() if any(m.startswith(key) for m in methods)]
        notes.append(
            "rating pairs: every vote is an observation for r, but a dialogue's votes are not independent: n "
            f"counts dialogues, the interval is {'; '.join(used) or 'none'}, and metrics are compared (Williams, "
            "Zou) on the dialogues' mean ratings"
        )
    # A pair of metrics that Williams' test and Zou's interval leave out is said so, not dropped (issue 26)
    notes += [f"{NOT_COMPARED}: {name} — its correlation is undefined ({why})" for name, why in undefined.items()]
    for (units, why), names in too_few.items():
        listed = ", ".join(names) if len(names) <= 3 else f"{len(names)} metric pairs"
        notes.append(f"{NOT_COMPARED}: {listed} on {units} dialogues; {why}")
    if williams and adjust != "none":
        name = "Holm" if adjust == "holm" else "Benjamini-Hochberg"
        notes.append(f"p_{adjust}: {name} adjustment over the {len(tested)} metric pairs tested")
    bootstrap = {"resamples": resamples, "seed": seed, "resample": resample}  # the unit of resampling, as calibrate's
    return {"metrics": rows, "williams": williams, "notes": notes, "bootstrap": bootstrap}


def _rating_matrix(votes: Sequence[Vote], dialogue_ids: Sequence[str]) -> tuple[list[str], np.ndarray]:
    """Annotators × dialogues of numeric ratings (NaN: not rated)."""
    index = {d: i for i, d in enumerate(dialogue_ids)}
    votes = [v for v in votes if v.item in index]
    annotators = sorted({v.annotator for v in votes})
    matrix = np.full((len(annotators), len(dialogue_ids)), np.nan)
    a_index = {a: i for i, a in enumerate(annotators)}
    for vote, value in zip(votes, _numeric(votes) if votes else []):
        matrix[a_index[vote.annotator], index[vote.item]] = value
    return annotators, matrix


def icc_oneway(ratings: np.ndarray) -> tuple[float, float]:
    """ICC(1,1) and ICC(1,k) of a dialogues × ratings array (NaN: missing), one-way random effects
    (Shrout & Fleiss 1979); with unequal counts k is the ANOVA's k0 and ICC(1,k) is Spearman–Brown at
    the mean count.  Only dialogues with two or more ratings enter.  The human ceiling takes only ICC(1,1)
    from here: the reliability of means of unequal counts is ``mean_reliability``'s (harmonic mean count).

    >>> [round(v, 2) for v in icc_oneway(np.array([[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8],
    ...                                            [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7.]]))]
    [0.17, 0.44]
    """
    counts = np.sum(np.isfinite(ratings), axis=1)
    rows = ratings[counts >= 2]
    counts = counts[counts >= 2]
    if rows.shape[0] < 2:
        return float("nan"), float("nan")
    total, n = counts.sum(), rows.shape[0]
    means = np.nansum(rows, axis=1) / counts
    grand = np.nansum(rows) / total
    ms_between = float(np.sum(counts * (means - grand) ** 2) / (n - 1))
    ms_within = float(np.nansum((rows - means[:, None]) ** 2) / (total - n))
    k0 = (total - np.sum(counts**2) / total) / (n - 1)
    single = (ms_between - ms_within) / (ms_between + (k0 - 1) * ms_within) if ms_between + ms_within > 0 else float("nan")
    k = float(counts.mean())
    spread = 1 + (k - 1) * single
    # ICC(1,1) at or below −1/(k − 1) (all the variance within dialogues): Spearman–Brown is undefined
    # and there is no reliability; ICC(1,1) itself (≤ 0) is given for the mean too
    mean = k * single / spread if np.isfinite(single) and spread > 0 else single
    return float(single), float(mean)


def mean_reliability(single: float, counts: np.ndarray) -> tuple[float, float]:
    """The reliability of the dialogues' mean ratings as a set, and the k it puts into Spearman–Brown.

    Derivation (one-way random effects, issue 26): a dialogue's k_d votes are t_d + e with var t = σ²_t,
    var e = σ²_e, and t independent of k.  The mean of k_d votes has error variance σ²_e / k_d, so over
    dialogues with different counts the means have variance σ²_t + σ²_e·mean(1/k) and covariance σ²_t with
    t; the squared correlation of the means with t, their reliability, is

        σ²_t / (σ²_t + σ²_e·mean(1/k)) = ICC / (ICC + (1 − ICC)·mean(1/k)),   ICC = ICC(1,1),

    which is Spearman–Brown at the harmonic mean k_h = 1 / mean(1/k), over ``counts`` (one per dialogue,
    each ≥ 1).  With equal counts k_h = k, and ICC(1,k) as Shrout & Fleiss (1979) give it.  ICC(1,1)
    at or below −1/(k_h − 1) (all the variance within dialogues) leaves Spearman–Brown undefined: the
    reliability is ICC(1,1) itself (≤ 0), as in ``icc_oneway``.

    >>> [round(v, 3) for v in mean_reliability(0.3, np.array([1, 1, 1, 5]))]   # k_h = 1 / 0.8
    [0.349, 1.25]
    """
    k = float(counts[0]) if np.all(counts == counts[0]) else counts.size / float(np.sum(1.0 / counts))
    spread = 1 + (k - 1) * single
    return (k * single / spread if np.isfinite(single) and spread > 0 else single), k


def _ceiling_reliability(by_dialogue: np.ndarray, rating: str) -> tuple[float, float, float]:
    """ICC(1,1) (dialogues with 2 or more votes), the reliability r_max is the root of, and k_h."""
    single = icc_oneway(by_dialogue)[0]
    if rating == "pairs":  # r over votes: the ceiling of one vote
        return single, single, 1.0
    counts = np.isfinite(by_dialogue).sum(axis=1)
    counts = counts[counts >= 1]
    return (single, *mean_reliability(single, counts)) if counts.size else (single, float("nan"), float("nan"))


def human_ceiling(
    votes: Sequence[Vote], dialogue_ids: Sequence[str], *, resamples: int = 1000, seed: int = 0, rating: str = "mean"
) -> dict:
    """The largest correlation a metric can reach against the human rating it is correlated with:
    r_max = √ of that rating's reliability (one-way random effects: the annotators differ between
    dialogues), with a percentile bootstrap CI over dialogues.

    ICC(1,1), a single vote's reliability, is estimated from the dialogues with 2 or more votes (ANOVA,
    k0 for unequal counts).  ``rating`` ``mean`` (and ``majority``, for which the mean's ceiling is given:
    a majority label's own reliability is not modelled): the reliability of the dialogues' mean ratings,
    Spearman–Brown at the harmonic mean of the vote counts over every rated dialogue in ``dialogue_ids``
    (the dialogues the correlation uses, 1-vote ones included), ``mean_reliability``; equal counts k give
    ICC(1,k).  ``pairs``: r is computed over votes, so the ceiling is a single vote's, √ICC(1,1).  Each
    bootstrap resample recomputes ICC(1,1) and the harmonic mean on the dialogues drawn.  ``k_harmonic``
    is the k used (1 in pairs mode).  ``annotator_vs_rest`` keeps each annotator against the mean of the
    others (how well one person predicts the rest), which is not a ceiling."""
    annotators, matrix = _rating_matrix(votes, dialogue_ids)
    by_dialogue = matrix.T
    counts = np.isfinite(by_dialogue).sum(axis=1)
    counts = counts[counts >= 1]
    if rating == "pairs":
        method = "r_max = sqrt(ICC(1,1)): reliability of a single vote (pairs: r is computed over votes)"
    elif counts.size and np.all(counts == counts[0]):
        method = "r_max = sqrt(ICC(1,k)): reliability of the per-dialogue mean rating"
    else:
        method = (
            "r_max = sqrt(ICC(1,k)), k the harmonic mean of the dialogues' vote counts (Spearman-Brown; ICC(1,1) "
            "from the dialogues with 2 or more votes): reliability of the per-dialogue mean rating"
        )
    result = {
        "r_max": None,
        "reliability": None,
        "ci": None,
        "method": f"{method}, one-way random effects; percentile bootstrap over dialogues",
        "annotator_vs_rest": _annotator_vs_rest(annotators, matrix),
    }
    single, reliability, k = _ceiling_reliability(by_dialogue, rating)
    result["reliability_single"] = single if np.isfinite(single) else None  # ICC(1,1): one rating
    if not np.isfinite(reliability):  # too few repeated dialogues, or ICC's 0/0: say which (issue 26)
        repeated = int((np.isfinite(by_dialogue).sum(axis=1) >= 2).sum())
        if repeated >= 2:
            result["note"] = (
                f"all ratings identical ({repeated} dialogues with 2 or more ratings): no variance between or within "
                "dialogues, so ICC(1,k) is 0/0 and there is no ceiling"
            )
        else:
            result["note"] = f"the ceiling needs at least 2 dialogues with 2 or more ratings each (found {repeated})"
        return result
    result["reliability"] = reliability
    result["k_harmonic"] = k
    result["r_max"] = math.sqrt(max(reliability, 0.0))
    if reliability <= 0:
        result["note"] = (
            "a single vote shows no reliability (ICC(1,1) <= 0): r_max is 0"
            if rating == "pairs"
            else "the mean rating shows no reliability (ICC(1,k) <= 0): r_max is 0"
        )
    if resamples > 0:
        rng = np.random.default_rng(seed)
        draws = rng.integers(0, by_dialogue.shape[0], size=(resamples, by_dialogue.shape[0]))
        boot = np.array([_ceiling_reliability(by_dialogue[d], rating)[1] for d in draws])
        boot = np.sqrt(np.clip(boot[np.isfinite(boot)], 0.0, None))
        if boot.size >= resamples / 2:
            low, high = percentile_ci(boot)
            result["ci"] = [float(low), float(high)]
    return result


def _annotator_vs_rest(annotators: list[str], matrix: np.ndarray) -> dict:
    """Each annotator's ratings against the mean of the others' on the dialogues both rated."""
    rows = []
    for a, name in enumerate(annotators):
        others = np.delete(matrix, a, axis=0)
        with warnings.catch_warnings():  # an all-NaN column (nobody else rated it) is expected
            warnings.simplefilter("ignore", RuntimeWarning)
            mean_others = np.nanmean(others, axis=0) if others.size else np.full(matrix.shape[1], np.nan)
        both = np.isfinite(matrix[a]) & np.isfinite(mean_others)
        r = None
        if both.sum() >= 3 and np.ptp(matrix[a][both]) > 0 and np.ptp(mean_others[both]) > 0:
            r = float(np.corrcoef(matrix[a][both], mean_others[both])[0, 1])
        rows.append({"annotator": name, "n": int(both.sum()), "pearson": r})
    defined = [row["pearson"] for row in rows if row["pearson"] is not None]
    result = {"mean_pearson": float(np.mean(defined)) if defined else None, "annotators": rows}
    if not defined:
        result["note"] = "needs two annotators with at least 3 shared dialogues and varying ratings"
    return result
