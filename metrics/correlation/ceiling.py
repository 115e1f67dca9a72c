"""The human ceiling: the largest correlation a metric can reach against a rating, √ of that rating's
reliability (one-way random effects), with its interval families, and each annotator against the rest.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from formats.tidy import Vote
from metrics.correlation.ratings import rating_matrix
from metrics.correlation.resampling import bca_interval, bootstrap_weights, jackknife_variance, percentile_ci


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


def ceiling_reliability(by_dialogue: np.ndarray, rating: str) -> tuple[float, float, float]:
    """ICC(1,1) (dialogues with 2 or more votes), the reliability r_max is the root of, and k_h."""
    single = icc_oneway(by_dialogue)[0]
    if rating == "pairs":  # r over votes: the ceiling of one vote
        return single, single, 1.0
    counts = np.isfinite(by_dialogue).sum(axis=1)
    counts = counts[counts >= 1]
    return (single, *mean_reliability(single, counts)) if counts.size else (single, float("nan"), float("nan"))


CEILING_DEFAULT = "jackknife_t"


# At most this many annotators behind the votes: intervals over dialogues alone get a note (bench_coverage)
FEW_ANNOTATORS = 12


FEW_ANNOTATORS_COVERAGE = (
    "the same 4 annotators on every dialogue: 0.86-0.92 for r of the mean rating, 0.47-0.74 in pairs mode; a pool of "
    "12 with their own leniency and scale: 0.92-0.95"
)


def _ceiling_sums(by_dialogue: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per dialogue (row of ``by_dialogue``): vote count k, Σ votes, Σ votes²."""
    k = np.isfinite(by_dialogue).sum(axis=1).astype(float)
    return k, np.nansum(by_dialogue, axis=1), np.nansum(by_dialogue**2, axis=1)


def ceiling_anova(k: np.ndarray, s: np.ndarray, q: np.ndarray, weights: np.ndarray) -> dict[str, np.ndarray]:
    """The one-way ANOVA of :func:`icc_oneway` for each row of dialogue ``weights`` (B×D) at once, from the
    per-dialogue count, sum and sum of squares (dialogues with 2 or more votes), and the harmonic mean
    count over the dialogues with a vote: ms_between, ms_within, their df, k0, ICC(1,1), k_h."""
    rep = (k >= 2).astype(float)
    w = weights * rep
    with np.errstate(invalid="ignore", divide="ignore"):
        units, total = w.sum(axis=1), w @ k
        grand = (w @ s) / total
        between = (w @ np.where(k > 0, s**2 / np.maximum(k, 1), 0.0)) - total * grand**2
        within = w @ (q - np.where(k > 0, s**2 / np.maximum(k, 1), 0.0))
        msb, msw = between / (units - 1), within / (total - units)
        k0 = (total - (w @ k**2) / total) / (units - 1)
        single = np.where(msb + msw > 0, (msb - msw) / (msb + (k0 - 1) * msw), np.nan)
        single = np.where(units >= 2, single, np.nan)
        rated = weights * (k >= 1)
        harmonic = rated.sum(axis=1) / (rated @ np.where(k >= 1, 1.0 / np.maximum(k, 1), 0.0))
    return {"msb": msb, "msw": msw, "df1": units - 1, "df2": total - units, "k0": k0, "single": single, "k_h": harmonic}


def _spearman_brown(single: np.ndarray, k: np.ndarray) -> np.ndarray:
    spread = 1 + (k - 1) * single
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(np.isfinite(single) & (spread > 0), k * single / np.where(spread > 0, spread, 1), single)


def ceiling_reliabilities(by_dialogue: np.ndarray, weights: np.ndarray, rating: str) -> np.ndarray:
    """``ceiling_reliability``'s reliability for each row of dialogue weights (B), vectorised."""
    anova = ceiling_anova(*_ceiling_sums(by_dialogue), weights)
    if rating == "pairs":
        return anova["single"]
    k = _ceiling_sums(by_dialogue)[0]
    counts = k[k >= 1]
    k_h = np.full(weights.shape[0], counts[0]) if counts.size and np.all(counts == counts[0]) else anova["k_h"]
    return _spearman_brown(anova["single"], k_h)


CEILING_FAMILIES = {
    "percentile": "percentile bootstrap over dialogues",
    "bca": "BCa bootstrap over dialogues (Efron 1987)",
    "boot_se_t": "atanh(r_max) with the bootstrap standard error and a t quantile (dialogues - 1 df)",
    "jackknife_t": "atanh(r_max) with the jackknife standard error over dialogues and a t quantile (dialogues - 1 df)",
    "f_exact": "F interval of ICC(1,1) (Searle 1971; Shrout & Fleiss 1979; McGraw & Wong 1996), Spearman-Brown at k_h",
}


def ceiling_intervals(
    by_dialogue: np.ndarray, rating: str, reliability: float, boot: np.ndarray | None, confidence: float = 0.95
) -> dict[str, list[float] | None]:
    """Every CEILING_FAMILIES interval for r_max = √reliability (``boot``: bootstrap reliabilities)."""
    from scipy.stats import f as f_dist
    from scipy.stats import t as student_t

    out: dict[str, list[float] | None] = dict.fromkeys(CEILING_FAMILIES)
    k, s, squares = _ceiling_sums(by_dialogue)
    d = by_dialogue.shape[0]
    tail = 0.5 + confidence / 2

    def root(v: float) -> float:
        return float(math.sqrt(max(float(v), 0.0)))

    anova = {key: float(v[0]) for key, v in ceiling_anova(k, s, squares, np.ones((1, d))).items()}
    if anova["df1"] >= 1 and anova["df2"] >= 1 and anova["msw"] > 0:
        ratio = anova["msb"] / anova["msw"]
        f_low = ratio / f_dist.ppf(tail, anova["df1"], anova["df2"])
        f_high = ratio * f_dist.ppf(tail, anova["df2"], anova["df1"])
        singles = np.array([(f - 1) / (f + anova["k0"] - 1) for f in (f_low, f_high)])
        counts = k[k >= 1]
        k_use = 1.0 if rating == "pairs" else float(counts[0] if np.all(counts == counts[0]) else anova["k_h"])
        low, high = _spearman_brown(singles, np.full(2, k_use))
        out["f_exact"] = [root(low), root(high)]
    estimate = root(reliability)
    inside = 0 < estimate < 1
    q = float(student_t.ppf(tail, max(d - 1, 1)))
    jack = None
    if inside:
        z = math.atanh(estimate)
        leave_out = 1.0 - np.eye(d)
        jack = np.sqrt(np.clip(ceiling_reliabilities(by_dialogue, leave_out[k >= 1], rating), 0.0, None))
        jack_var = jackknife_variance(np.clip(jack[np.isfinite(jack)], 0.0, 0.999999))
        if jack_var > 0:
            half = q * math.sqrt(jack_var)
            out["jackknife_t"] = [float(max(math.tanh(z - half), 0.0)), float(math.tanh(z + half))]
    if boot is None:
        return out
    values = np.sqrt(np.clip(boot[np.isfinite(boot)], 0.0, None))
    if values.size < max(10, boot.size / 2):
        return out
    lo, hi = percentile_ci(values, confidence)
    out["percentile"] = [float(lo), float(hi)]
    if inside:
        spread = float(np.std(np.arctanh(np.clip(values, 0.0, 0.999999)), ddof=1))
        out["boot_se_t"] = [float(max(math.tanh(z - q * spread), 0.0)), float(math.tanh(z + q * spread))]
        out["bca"] = None if jack is None else bca_interval(estimate, values, jack, confidence)
    return out


def human_ceiling(
    votes: Sequence[Vote], dialogue_ids: Sequence[str], *, resamples: int = 1000, seed: int = 0, rating: str = "mean"
) -> dict[str, Any]:
    """The largest correlation a metric can reach against the human rating it is correlated with:
    r_max = √ of that rating's reliability (one-way random effects: the annotators differ between
    dialogues), with ``ci`` the CEILING_DEFAULT family of ``intervals`` (``ceiling_intervals``; the
    jackknife over dialogues on Fisher's z scale with a t quantile, which held 0.94-0.98 in bench_coverage
    where the percentile bootstrap gave 0.90-0.94), ``ci_method`` naming it, ``ci_note`` with few annotators.

    ICC(1,1), a single vote's reliability, is estimated from the dialogues with 2 or more votes (ANOVA,
    k0 for unequal counts).  ``rating`` ``mean`` (and ``majority``, for which the mean's ceiling is given:
    a majority label's own reliability is not modelled): the reliability of the dialogues' mean ratings,
    Spearman–Brown at the harmonic mean of the vote counts over every rated dialogue in ``dialogue_ids``
    (the dialogues the correlation uses, 1-vote ones included), ``mean_reliability``; equal counts k give
    ICC(1,k).  ``pairs``: r is computed over votes, so the ceiling is a single vote's, √ICC(1,1).  Each
    bootstrap resample and each leave-one-out recomputes ICC(1,1) and the harmonic mean on its dialogues.  ``k_harmonic``
    is the k used (1 in pairs mode).  ``annotator_vs_rest`` keeps each annotator against the mean of the
    others (how well one person predicts the rest), which is not a ceiling."""
    annotators, matrix = rating_matrix(votes, dialogue_ids)
    return ceiling_report(annotators, matrix, resamples=resamples, seed=seed, rating=rating)


def ceiling_report(
    annotators: list[str], matrix: np.ndarray, *, resamples: int = 1000, seed: int = 0, rating: str = "mean"
) -> dict[str, Any]:
    """:func:`human_ceiling` from the annotators × dialogues matrix of ratings (NaN: none)."""
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
    result: dict[str, Any] = {
        "r_max": None,
        "reliability": None,
        "ci": None,
        "method": f"{method}, one-way random effects; interval: Fisher z of r_max with the jackknife SE over dialogues, t",
        "annotator_vs_rest": _annotator_vs_rest(annotators, matrix),
    }
    single, reliability, k = ceiling_reliability(by_dialogue, rating)
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
        weights = bootstrap_weights(by_dialogue.shape[0], resamples, np.random.default_rng(seed)).astype(float)
        boot = ceiling_reliabilities(by_dialogue, weights, rating)  # every resample at once (as the loop it replaces)
    else:
        boot = None
    result["intervals"] = ceiling_intervals(by_dialogue, rating, reliability, boot)
    family = next((f for f in (CEILING_DEFAULT, "percentile") if result["intervals"][f] is not None), None)
    result["ci"] = None if family is None else result["intervals"][family]
    if family is not None:
        result["ci_method"] = f"{family}: {CEILING_FAMILIES[family]}"
    voted = int(np.isfinite(matrix).any(axis=1).sum())
    if result["ci"] is not None and voted <= FEW_ANNOTATORS:
        result["ci_note"] = (
            f"only {voted} annotators gave these votes: the interval resamples dialogues, not the annotators' own "
            "leniency and scale, and can be too narrow (simulated coverage of 95% intervals: 0.85-0.92 with a pool of 12 "
            "such annotators)"
        )
    return result


def _annotator_vs_rest(annotators: list[str], matrix: np.ndarray) -> dict[str, Any]:
    """Each annotator's ratings against the mean of the others' on the dialogues both rated."""
    rows: list[dict[str, Any]] = []
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
    result: dict[str, Any] = {"mean_pearson": float(np.mean(defined)) if defined else None, "annotators": rows}
    if not defined:
        result["note"] = "needs two annotators with at least 3 shared dialogues and varying ratings"
    return result
