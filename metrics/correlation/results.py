"""The correlation report's rows, typed: what the tables, the sentences, the charts and the pages read.

``correlation_report`` (and the study analysis that carries it, stored as plain values in the analysis
cache and printed by ``python -m metrics correlate --json``) keeps its rows as JSON objects; the layers
above read them through these frozen dataclasses (:func:`metric_rows`, :func:`comparisons`), one
documented row per metric and per comparison (pingouin's one row per call), never by string key.

>>> row = MetricCorrelation.from_row({"metric": "jga", "n": 40, "pearson": 0.41, "pearson_ci": [0.12, 0.64],
...                                  "p_value": 0.009, "spearman": 0.38, "kendall": 0.3})
>>> row.pearson_ci, row.defined, row.n_votes
((0.12, 0.64), True, None)
>>> entry = Comparison.from_entry({"a": "fga_0.5", "b": "jga", "n": 40, "diff": 0.05, "diff_ci": [-0.01, 0.11],
...                                "p_value": 0.08, "p_holm": 0.16, "t": 1.7})
>>> entry.adjust, entry.p_adjusted, entry.tested
('holm', 0.16, True)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Interval = tuple[float, float]

# The adjusted p-value of a comparison is stored under p_<adjustment> (holm, bonferroni, bh)
ADJUSTMENTS_STORED = ("holm", "bonferroni", "bh")


def _interval(value: Sequence[float] | None) -> Interval | None:
    return None if value is None else (float(value[0]), float(value[1]))


@dataclass(frozen=True)
class MetricCorrelation:
    """One metric against the human rating, on ``n`` dialogues (``n_votes`` votes in pairs mode; a report
    always gives ``n``, a table made by hand may not).

    ``pearson`` with its reported interval ``pearson_ci`` (the family ``ci_method`` names, with its unit of
    resampling) and ``p_value``, the two-sided test of r = 0 that this interval inverts (for the jackknife-t,
    t = atanh(r) / SE_jack on dialogues − 1 df), so that ``pearson_ci`` excludes 0 exactly when p < 0.05;
    ``bootstrap_ci`` the percentile bootstrap and ``bca_ci`` the BCa interval (None without resamples);
    ``spearman`` / ``kendall`` with their intervals (jackknife-t on Fisher's z); ``intervals`` every family
    computed for r and ``rank_intervals`` both families for the ranks (for the coverage bench and the JSON);
    ``note`` what was left out (dialogues without a value) or why r is undefined."""

    metric: str
    n: int | None = None
    pearson: float | None = None
    pearson_ci: Interval | None = None
    ci_method: str | None = None
    p_value: float | None = None
    bootstrap_ci: Interval | None = None
    bca_ci: Interval | None = None
    spearman: float | None = None
    spearman_ci: Interval | None = None
    kendall: float | None = None
    kendall_ci: Interval | None = None
    n_votes: int | None = None
    note: str | None = None
    intervals: Mapping[str, Sequence[float] | None] | None = None
    rank_intervals: Mapping[str, Mapping[str, Sequence[float] | None]] | None = None

    @property
    def defined(self) -> bool:
        """Whether r exists (3 or more observations, neither side constant)."""
        return self.pearson is not None

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> MetricCorrelation:
        return cls(
            metric=row["metric"],
            n=row.get("n"),
            pearson=row.get("pearson"),
            pearson_ci=_interval(row.get("pearson_ci")),
            ci_method=row.get("ci_method"),
            p_value=row.get("p_value"),
            bootstrap_ci=_interval(row.get("bootstrap_ci")),
            bca_ci=_interval(row.get("bca_ci")),
            spearman=row.get("spearman"),
            spearman_ci=_interval(row.get("spearman_ci")),
            kendall=row.get("kendall"),
            kendall_ci=_interval(row.get("kendall_ci")),
            n_votes=row.get("n_votes"),
            note=row.get("note"),
            intervals=row.get("intervals"),
            rank_intervals=row.get("rank_intervals"),
        )


@dataclass(frozen=True)
class Comparison:
    """One declared comparison of two metrics' correlations with the same human rating, on ``n`` dialogues.

    ``diff`` = r_a − r_b with ``diff_ci`` at the family's level (the jackknife-t of z_a − z_b over dialogues, mapped to r) and
    ``p_value`` that interval's own test; ``p_adjusted`` the same p adjusted over the family (``adjust``
    names how; None when not adjusted); ``t`` / ``p_williams`` Williams' test for reference; ``n_needed``
    the dialogues for 80% power at the family's level; ``note`` why a part is missing."""

    a: str
    b: str
    n: int | None = None
    r_a: float | None = None
    r_b: float | None = None
    r_ab: float | None = None
    diff: float | None = None
    diff_ci: Interval | None = None
    t: float | None = None
    p_williams: float | None = None
    p_value: float | None = None
    adjust: str | None = None
    p_adjusted: float | None = None
    n_needed: int | None = None
    significant: bool | None = None
    note: str | None = None

    @property
    def tested(self) -> bool:
        """Whether the comparison has its interval (the difference could be tested)."""
        return self.diff_ci is not None

    @classmethod
    def from_entry(cls, entry: Mapping[str, Any]) -> Comparison:
        adjust = next((name for name in ADJUSTMENTS_STORED if f"p_{name}" in entry), None)
        return cls(
            a=entry["a"],
            b=entry["b"],
            n=entry.get("n"),
            r_a=entry.get("r_a"),
            r_b=entry.get("r_b"),
            r_ab=entry.get("r_ab"),
            diff=entry.get("diff"),
            diff_ci=_interval(entry.get("diff_ci")),
            t=entry.get("t"),
            p_williams=entry.get("p_williams"),
            p_value=entry.get("p_value"),
            adjust=adjust,
            p_adjusted=None if adjust is None else entry[f"p_{adjust}"],
            n_needed=entry.get("n_needed"),
            significant=entry.get("significant"),
            note=entry.get("note"),
        )


def metric_rows(correlation: Mapping[str, Any]) -> list[MetricCorrelation]:
    """The report's metric rows, typed (an empty list for a report without them)."""
    return [MetricCorrelation.from_row(row) for row in correlation.get("metrics", [])]


def comparisons(correlation: Mapping[str, Any]) -> list[Comparison]:
    """The report's declared comparisons, typed, in the report's order."""
    return [Comparison.from_entry(entry) for entry in correlation.get("williams", [])]


@dataclass(frozen=True)
class HumanCeiling:
    """The largest r a metric can reach against the rating: ``r_max`` = √``reliability`` (None when there is
    no ceiling: ``note`` says why), its interval ``ci`` (the family ``ci_method`` names; ``ci_note`` when few
    annotators make it optimistic), ``reliability_single`` = ICC(1,1) and ``k_harmonic`` the votes per
    dialogue Spearman–Brown used; ``method`` how r_max was defined; ``annotator_mean_r`` the mean r of each
    annotator against the mean of the others (not a ceiling)."""

    r_max: float | None = None
    reliability: float | None = None
    reliability_single: float | None = None
    k_harmonic: float | None = None
    ci: Interval | None = None
    ci_method: str | None = None
    ci_note: str | None = None
    method: str = ""
    note: str | None = None
    annotator_mean_r: float | None = None

    @property
    def of_single_vote(self) -> bool:
        """Whether r_max is a single vote's ceiling (pairs mode: r over votes), not the mean rating's."""
        return self.method.startswith("r_max = sqrt(ICC(1,1))")

    @classmethod
    def from_dict(cls, ceiling: Mapping[str, Any] | None) -> HumanCeiling:
        ceiling = ceiling or {}
        return cls(
            r_max=ceiling.get("r_max"),
            reliability=ceiling.get("reliability"),
            reliability_single=ceiling.get("reliability_single"),
            k_harmonic=ceiling.get("k_harmonic"),
            ci=_interval(ceiling.get("ci")),
            ci_method=ceiling.get("ci_method"),
            ci_note=ceiling.get("ci_note"),
            method=ceiling.get("method", ""),
            note=ceiling.get("note"),
            annotator_mean_r=(ceiling.get("annotator_vs_rest") or {}).get("mean_pearson"),
        )


def human_ceiling_of(correlation: Mapping[str, Any]) -> HumanCeiling:
    """The report's human ceiling, typed (an empty one, with no r_max, when the report has none)."""
    return HumanCeiling.from_dict(correlation.get("human_ceiling"))
