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
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from formats.tidy import Vote
from metrics.aggregate import majority_from_counts, unit_table

RATING_MODES = ("mean", "majority", "pairs")


@dataclass
class Ratings:
    """Human ratings aligned to dialogues: observation i rates dialogue ``dialogue[i]``."""

    dialogue_ids: list[str]
    dialogue: np.ndarray  # observation -> dialogue index
    value: np.ndarray
    mode: str
    notes: list[str]

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
    if mode == "pairs":
        return Ratings(ids, observation, values, mode, notes)
    if mode == "mean":
        n = np.bincount(observation, minlength=len(ids))
        means = np.bincount(observation, weights=values, minlength=len(ids)) / n
        return Ratings(ids, np.arange(len(ids)), means, mode, notes)
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

    Returns B×K (or K, or a scalar, following the inputs); NaN where a variance is 0.
    """
    single = weights is None
    w = np.ones((1, n.size)) if single else weights
    x2 = x if x.ndim == 2 else x[:, None]
    wn = w * n
    total = wn.sum(axis=1)[:, None]
    sx = wn @ x2
    sxx = wn @ x2**2
    sxy = (w * sy) @ x2
    s_y = (w @ sy)[:, None]
    s_yy = (w @ syy)[:, None]
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


def _none(value) -> float | None:
    return None if value is None or not np.isfinite(value) else float(value)


def correlate_one(x: np.ndarray, y: np.ndarray, boot_r: np.ndarray | None, confidence: float = 0.95) -> dict:
    """Pearson with Fisher-z CI and p (scipy), the bootstrap CI given, Spearman and Kendall."""
    from scipy import stats

    row = {"pearson": None, "pearson_ci": None, "p_value": None, "bootstrap_ci": None, "spearman": None, "kendall": None}
    if x.size < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        row["note"] = "fewer than 3 observations" if x.size < 3 else "constant values: correlation undefined"
        return row
    result = stats.pearsonr(x, y)
    ci = result.confidence_interval(confidence)
    row.update(pearson=float(result.statistic), pearson_ci=[float(ci.low), float(ci.high)], p_value=float(result.pvalue))
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
) -> dict:
    """Every metric against the ratings, Williams' test for every pair, notes.

    ``metric_values[name]`` is per dialogue in ``ratings.dialogue_ids`` order; NaN values
    (AGA of a dialogue without non-empty gold) drop those observations for that metric.
    """
    rng = np.random.default_rng(seed)
    weights = bootstrap_weights(ratings.n_dialogues, resamples, rng) if resamples > 0 else None
    n, sy, syy = ratings.sufficient()
    y = ratings.value
    rows, observed = [], {}
    for name, per_dialogue in metric_values.items():
        valid = np.isfinite(per_dialogue)
        x_obs = per_dialogue[ratings.dialogue]
        keep = valid[ratings.dialogue]
        boot = None
        if weights is not None:
            masked = np.where(valid, per_dialogue, 0.0)
            boot = weighted_pearson(masked, n * valid, sy * valid, syy * valid, weights)
        row = {"metric": name, "n": int(keep.sum()), **correlate_one(x_obs[keep], y[keep], boot)}
        if keep.sum() < keep.size:
            row["note"] = f"{int((~valid).sum())} dialogue(s) without a value left out"
        rows.append(row)
        observed[name] = (x_obs, keep)
    williams = []
    for i, a in enumerate(rows):
        for b in rows[i + 1 :]:
            if a["pearson"] is None or b["pearson"] is None:
                continue
            keep = observed[a["metric"]][1] & observed[b["metric"]][1]
            xa, xb = observed[a["metric"]][0][keep], observed[b["metric"]][0][keep]
            entry = {"a": a["metric"], "b": b["metric"], "n": int(keep.sum())}
            if np.ptp(xa) == 0 or np.ptp(xb) == 0 or keep.sum() <= 3:
                continue
            r12, r13 = np.corrcoef(y[keep], xa)[0, 1], np.corrcoef(y[keep], xb)[0, 1]
            r23 = np.corrcoef(xa, xb)[0, 1]
            entry.update(r_a=float(r12), r_b=float(r13), r_ab=float(r23))
            try:
                entry["t"], entry["p_value"] = williams_test(r12, r13, r23, int(keep.sum()))
            except ValueError as why:
                entry.update(t=None, p_value=None, note=str(why))
            williams.append(entry)
    return {"metrics": rows, "williams": williams}


def human_ceiling(votes: Sequence[Vote], dialogue_ids: Sequence[str]) -> dict:
    """Each annotator's ratings against the mean of the others' on the dialogues both rated."""
    index = {d: i for i, d in enumerate(dialogue_ids)}
    votes = [v for v in votes if v.item in index]
    annotators = sorted({v.annotator for v in votes})
    matrix = np.full((len(annotators), len(dialogue_ids)), np.nan)
    values = _numeric(votes)
    a_index = {a: i for i, a in enumerate(annotators)}
    for vote, value in zip(votes, values):
        matrix[a_index[vote.annotator], index[vote.item]] = value
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
