"""Metric–human correlation per dialogue: Pearson (+ jackknife-t, Fisher-z and bootstrap CIs), Spearman,
Kendall (jackknife-t CIs), Williams' test between two metrics, and the human ceiling.

Ratings are *observations* (dialogue index, value).  ``mean`` (default) and ``majority``
give one observation per dialogue; ``pairs`` keeps every vote as its own observation (the
metric value repeats).  A bootstrap resamples dialogues, so all of a dialogue's
observations move together; weighted sums per dialogue make that one matrix product.

Williams' test (Williams 1959; Graham & Baldwin 2014) for r(human, A) vs r(human, B) stays for reference.
The difference r12 − r13 gets the jackknife-t interval of Fisher's z12 − z13 over dialogues, mapped back
to r (``diff_ci``; Zou's (2007) MOVER, as R's cocor ``zou2007``, stays as ``zou_diff_ci``), its p that
interval's own test, and the p-values of every pair reported are adjusted together (Holm by default).

Each metric's p-value is the test its reported interval inverts (for the default jackknife-t, t =
atanh(r) / SE_jack on dialogues − 1 df), so that the interval excludes 0 exactly when p < 0.05.

In ``pairs`` mode the unit is the dialogue: the intervals, the p-value and Williams' test use
n = dialogues (the votes of one dialogue are not independent observations; with 3 or fewer dialogues there
is no interval and no p, in any mode), and the bootstrap resamples dialogues.

The package, one module per job (each imports only those above it):

- ``ratings``: votes aligned to the scored dialogues (``Ratings``, ``ratings_for``, ``rating_matrix``);
- ``resampling``: bootstrap weights and sums, percentile and BCa intervals, the jackknife variance of z;
- ``pearson``: r from per-dialogue sums, its standard errors and every interval family;
- ``ranks``: Spearman's ρ and Kendall's τ with their intervals;
- ``differences``: r_a − r_b, its interval and test, Williams' t, adjusted p-values;
- ``ceiling``: the human ceiling (ICC, Spearman–Brown, its intervals), each annotator against the rest;
- ``report``: ``correlation_report``, every metric's row and the family of comparisons, with the defaults.

Callers import from ``metrics.correlation``: the names below are the package's door.
"""

from __future__ import annotations

from metrics.correlation.ceiling import (
    CEILING_DEFAULT,
    CEILING_FAMILIES,
    FEW_ANNOTATORS,
    FEW_ANNOTATORS_COVERAGE,
    ceiling_anova,
    ceiling_intervals,
    ceiling_reliabilities,
    ceiling_reliability,
    ceiling_report,
    human_ceiling,
    icc_oneway,
    mean_reliability,
)
from metrics.correlation.differences import adjust_p, diff_ci, diff_test, mover_diff_ci, williams_test, zou_diff_ci
from metrics.correlation.pearson import (
    INTERVAL_FAMILIES,
    fisher_row,
    jackknife_annotators,
    jackknife_components,
    jackknife_pearson,
    jackknife_t_interval,
    jackknife_votes,
    leave_one_out_pearson,
    pearson_intervals,
    pearson_moments,
    pearson_p_value,
    pearson_se,
    weighted_pearson,
)
from metrics.correlation.ranks import rank_cis, rank_jackknife, rank_jackknife_cis
from metrics.correlation.ratings import RATING_MODES, Ratings, numeric_ratings, rating_matrix, ratings_for
from metrics.correlation.report import (
    DEFAULT_INTERVAL,
    DIFF_DEFAULT,
    NO_BOOTSTRAP_FALLBACK,
    NOT_COMPARED,
    PAIRS_INTERVALS,
    RANK_DEFAULT,
    correlate_one,
    correlation_report,
    interval_key,
)
from metrics.correlation.resampling import (
    RESAMPLING,
    acceleration,
    annotator_sums,
    bca_interval,
    bootstrap_weights,
    fisher_z,
    jackknife_variance,
    percentile_ci,
    resample_sums,
)
from metrics.correlation.results import Comparison, HumanCeiling, MetricCorrelation, comparisons, human_ceiling_of, metric_rows

__all__ = [
    "Comparison",
    "HumanCeiling",
    "human_ceiling_of",
    "MetricCorrelation",
    "comparisons",
    "metric_rows",
    "CEILING_DEFAULT",
    "CEILING_FAMILIES",
    "DEFAULT_INTERVAL",
    "DIFF_DEFAULT",
    "FEW_ANNOTATORS",
    "FEW_ANNOTATORS_COVERAGE",
    "INTERVAL_FAMILIES",
    "NOT_COMPARED",
    "NO_BOOTSTRAP_FALLBACK",
    "PAIRS_INTERVALS",
    "RANK_DEFAULT",
    "RATING_MODES",
    "RESAMPLING",
    "Ratings",
    "acceleration",
    "adjust_p",
    "annotator_sums",
    "bca_interval",
    "bootstrap_weights",
    "ceiling_anova",
    "ceiling_intervals",
    "ceiling_reliabilities",
    "ceiling_reliability",
    "ceiling_report",
    "correlate_one",
    "correlation_report",
    "diff_ci",
    "diff_test",
    "fisher_row",
    "fisher_z",
    "human_ceiling",
    "icc_oneway",
    "interval_key",
    "jackknife_annotators",
    "jackknife_components",
    "jackknife_pearson",
    "jackknife_t_interval",
    "jackknife_variance",
    "jackknife_votes",
    "leave_one_out_pearson",
    "mean_reliability",
    "mover_diff_ci",
    "numeric_ratings",
    "pearson_intervals",
    "pearson_moments",
    "pearson_p_value",
    "pearson_se",
    "percentile_ci",
    "rank_cis",
    "rank_jackknife",
    "rank_jackknife_cis",
    "rating_matrix",
    "ratings_for",
    "resample_sums",
    "weighted_pearson",
    "williams_test",
    "zou_diff_ci",
]
