"""One presentation of analysis results: named tables with formatted cells and notes.

The app's Analysis page, the HTML/Markdown report and the text output of ``python -m metrics
agreement | correlate | calibrate`` all lay out these tables, so the three never disagree.  Cells
are strings (numbers formatted here, once); data text stays text (each front end escapes or
shows it as text).

>>> table = Table("Demo", ("metric", "Pearson r"), [["jga", number(0.3333)]], ["a note"])
>>> print(table.to_text())
Demo
metric  Pearson r
jga         0.333
note: a note
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from metrics.correlation import NOT_COMPARED, HumanCeiling
from metrics.correlation.results import ADJUSTMENTS_STORED
from metrics.registry import FGA, JGA
from metrics.results import (
    Agreement,
    Calibration,
    CocoRow,
    ComparisonFamily,
    CorrectedSummary,
    CorrelationReport,
    DesignedDraw,
    DesignSummary,
    JudgeReport,
    MajorityRow,
    MajorityTable,
    ModelLabelReport,
    StudyAnalysis,
    SystemLevel,
    majority_tables,
    model_label_reports,
)

COEFFICIENTS = (
    ("percent_agreement", "% agreement"),
    ("krippendorff_alpha", "Krippendorff's alpha"),
    ("fleiss_kappa", "Fleiss' kappa"),
    ("gwet_ac1", "Gwet's AC1"),
)


def number(value: float | None, digits: int = 3) -> str:
    """One rounding rule (issue 24): every r, difference, λ and interval end to 3 decimals, in the app
    (the Analysis page and the Progress page's design line), the report and the command lines' text."""
    return "—" if value is None else f"{value:.{digits}f}"


def interval(pair: Sequence[float | None] | None) -> str:
    """``[lo, hi]`` to 3 decimals; an open end (None, e.g. λ* beyond the grid) shows as "open"."""
    if not pair:
        return "—"
    return "[" + ", ".join("open" if v is None else f"{v:.3f}" for v in pair) + "]"


def p_value(value: float | None) -> str:
    return "—" if value is None else f"{value:.2g}"


@dataclass(frozen=True)
class Table:
    title: str
    columns: tuple[str, ...]
    rows: list[list[Any]]  # formatted strings; counts stay ints
    notes: list[str] = field(default_factory=list)

    def to_text(self) -> str:
        """Aligned columns (the first left, the others right), then the notes."""
        lines = [self.title] if self.title else []
        if self.rows:
            cells = [list(self.columns), *[[str(c) for c in row] for row in self.rows]]
            widths = [max(len(str(row[i])) for row in cells) for i in range(len(self.columns))]
            lines += [
                "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))).rstrip()
                for row in cells
            ]
        lines += [f"note: {note}" for note in self.notes]
        return "\n".join(lines)


AGREEMENT_COLUMNS = (
    "question",
    "items",
    "annotators",
    "votes",
    "level of measurement",
    "coefficient",
    "estimate",
    "95% CI (Fisher z, jackknife SE over items, t)",  # agreement.CI_WORDS of the default family
)


def agreement_table(agreement: Agreement | Mapping[str, Any]) -> Table:
    """One row per question and coefficient (issue 27, item 5): the counts it rests on, the estimate and
    its 95% CI over items.  Long, not wide: the table keeps its 8 columns whatever the number of
    questions and coefficients, so it fits the page (the wide layout, a column pair per coefficient, was
    cut at Fleiss' kappa at 1400x900) and its CSV is tidy.

    >>> report = {"n_items": 10, "n_annotators": 3, "n_votes": 30, "level": "nominal", "notes": [],
    ...     "percent_agreement": 0.6, "krippendorff_alpha": 0.2271, "fleiss_kappa": 0.2, "gwet_ac1": None,
    ...     "ci": {"krippendorff_alpha": [-0.2919, 0.6421]}}
    >>> table = agreement_table({"questions": {"satisfied": report}, "signature": "s"})
    >>> table.rows[1]
    ['satisfied', 10, 3, 30, 'nominal', "Krippendorff's alpha", '0.227', '[-0.292, 0.642]']
    >>> [row[5:] for row in table.rows if row[5] == "Gwet's AC1"]
    [["Gwet's AC1", '—', '—']]
    """
    view = Agreement.of(agreement)
    weighted = any(report.has_ac2 for report in view.questions.values())
    coefficients = [*COEFFICIENTS, *((("gwet_ac2", "Gwet's AC2"),) if weighted else ())]
    rows, notes = [], []
    for question, report in view.questions.items():
        counts = [question, report.n_items, report.n_annotators, report.n_votes, report.level]
        for key, label in coefficients:
            rows.append([*counts, label, number(report.estimate(key)), interval(report.interval(key))])
        notes += [f"{question}: {note}" for note in report.notes]
    first = next(iter(view.questions.values()), None)
    if first is not None and first.labels:
        notes.append("What each coefficient used: " + "; ".join(f"{k}: {v}" for k, v in first.labels.items()))
    notes += list(view.notes)
    return Table("Agreement", AGREEMENT_COLUMNS, rows, [*notes, f"signature: {view.signature}"])


def annotator_table(agreement: Agreement | Mapping[str, Any]) -> Table:
    """Each annotator against the majority of the others (and on gold items, when the study has any: the
    two gold columns are left out otherwise, so the table fits the page), per question.

    >>> row = {"annotator": "a", "n_votes": 10, "n_compared": 9, "agree_with_others": 0.8, "kappa_with_others": 0.55,
    ...     "gold_accuracy": None, "n_gold": 0}
    >>> table = annotator_table({"questions": {"q": {"annotators": [row]}}})
    >>> table.columns[-1], table.rows
    ("Cohen's κ with the others", [['q', 'a', 10, 9, '0.800', '0.550']])
    """
    view = Agreement.of(agreement)
    rows = [(question, row) for question, report in view.questions.items() for row in report.annotators]
    gold = any(row.n_gold for _, row in rows)
    body = [
        [
            question,
            row.annotator,
            row.n_votes,
            row.n_compared,
            number(row.agree_with_others),
            number(row.kappa_with_others),
            *([number(row.gold_accuracy), row.n_gold] if gold else []),
        ]
        for question, row in rows
    ]
    columns = (
        "question",
        "annotator",
        "votes",
        "votes compared",
        "share agreeing with the others",
        "Cohen's κ with the others",
        *(("gold accuracy", "gold items") if gold else ()),
    )
    return Table("Per annotator", columns, body)


def cohen_table(agreement: Agreement | Mapping[str, Any]) -> Table:
    rows = [
        [question, pair.a, pair.b, pair.n, number(pair.kappa), pair.note if pair.note is not None else ""]
        for question, report in Agreement.of(agreement).questions.items()
        for pair in report.cohen_kappa_pairwise
    ]
    columns = ("question", "annotator A", "annotator B", "items both judged", "Cohen's κ", "note")
    return Table("Pairwise Cohen's kappa", columns, rows)


def coco_table(rows: Sequence[CocoRow | Mapping[str, Any]]) -> Table:
    """The CoCo paper's Table 3 layout."""
    body = [
        [
            r.condition,
            number(r.human_like_pct, 1),
            number(r.correct_pct, 1),
            f"{r.human_like_n} / {r.correct_n}",
            f"{r.human_like_ties} / {r.correct_ties}",
            number(r.human_like_alpha),
            number(r.correct_alpha),
        ]
        for r in (CocoRow.of(row) for row in rows)
    ]
    columns = ("condition", "human-like %", "correct %", "items (human-like / correct)", "ties", "α human-like", "α correct")
    return Table(
        "Results (CoCo Table 3 layout)",
        columns,
        body,
        ["By majority vote over the items with a majority; ties are counted, not labelled."],
    )


def majority_summary(majority: Mapping[str, MajorityTable | Mapping[str, Any]], tie: str) -> Table:
    """Per question: how many items got each majority label, and the ties."""
    rows = []
    for question, table in majority_tables(majority).items():
        labels: dict[str, int] = {}
        for row in table.rows:
            label = "no majority" if row.majority is None else str(row.majority)
            labels[label] = labels.get(label, 0) + 1
        rows.append([question, ", ".join(f"{k}: {v}" for k, v in sorted(labels.items())), table.n_ties])
    return Table("Majority labels", ("question", "items per majority label", "ties"), rows, [f"Tie policy: {tie}."])


def majority_item_table(rows: Sequence[MajorityRow | Mapping[str, Any]], question: str) -> Table:
    """One question's items (``majority[question]["rows"]``): their votes, majority label, tie, the mean
    vote (for a 0/1 question the share of 1 votes) and the median, to 3 decimals, and the votes each
    answer got; the columns in words (issue 27, item 5).

    >>> table = majority_item_table([{"item": "d1", "condition": "", "question": "q", "n_votes": 3, "majority": "1",
    ...     "tie": False, "soft": 2 / 3, "median": 1.0, "n_0": 1, "n_1": 2}], "q")
    >>> table.columns[-2:], table.rows
    (('votes for 0', 'votes for 1'), [['d1', 3, '1', 'no', '0.667', '1.000', 1, 2]])
    """
    typed = [MajorityRow.of(row) for row in rows]
    answers = list(dict.fromkeys(answer for row in typed for answer in row.counts))
    conditions = any(row.condition for row in typed)
    columns = [
        "item",
        *(["condition"] if conditions else []),
        "votes",
        "majority label",
        "tie",
        "mean vote (share of 1 for a 0/1 question)",
        "median vote",
        *(f"votes for {answer}" for answer in answers),
    ]
    body = [
        [
            row.item,
            *([row.condition] if conditions else []),
            row.n_votes,
            "no majority" if row.majority is None else str(row.majority),
            "yes" if row.tie else "no",
            number(row.soft),
            number(row.median),
            *(row.counts.get(answer, 0) for answer in answers),
        ]
        for row in typed
    ]
    return Table(f"Items of {question}", tuple(columns), body)


def ceiling_text(ceiling: HumanCeiling | Mapping[str, Any]) -> str:
    """The human ceiling in one line: r_max with its CI and reliability (of the mean rating, ICC(1,k) with k
    the harmonic mean count; in pairs mode of a single vote, ICC(1,1)), and annotator vs the rest."""
    c = ceiling if isinstance(ceiling, HumanCeiling) else HumanCeiling.from_dict(ceiling)
    rest = number(c.annotator_mean_r)
    if c.r_max is None:
        return f"Human ceiling: {c.note or 'not computed'}. Each annotator vs the mean of the others: {rest}."
    of = "a single vote" if c.of_single_vote else "the mean rating"
    return (
        f"Human ceiling r_max = {number(c.r_max)} {interval(c.ci)} (reliability of {of} "
        f"{number(c.reliability)}, ICC(1,{'1' if c.of_single_vote else 'k'})); each annotator vs the mean "
        f"of the others: {rest}." + (f" {c.ci_note}." if c.ci_note else "")
    )


def correlation_table(correlation: CorrelationReport | Mapping[str, Any], condition: str | None = None) -> Table:
    view = CorrelationReport.of(correlation)
    rows = [
        [r.metric, number(r.pearson), interval(r.pearson_ci), p_value(r.p_value), interval(r.bootstrap_ci)]
        + [number(r.spearman), number(r.kendall)]
        for r in view.metrics
    ]
    system = f"System (condition): {condition}; " if condition else ""
    notes = [
        f"{system}{rating_line(view)}",
        *filter(None, [p_note(view)]),
        ceiling_text(view.human_ceiling),
        *(note for note in view.notes if not note.startswith(NOT_COMPARED)),  # those: under the differences
        f"signature: {view.signature}",
    ]
    columns = (
        "metric",
        "Pearson r",
        fisher_header(view),
        P_HEADER,
        bootstrap_header(view),
        "Spearman ρ",
        "Kendall τ",
    )
    return Table("Metrics against human ratings", columns, rows, notes)


RATING_WORDS = {
    "mean": "the mean of each dialogue's votes",
    "majority": "each dialogue's majority vote",
    "pairs": "every vote on its own",
}


def rating_line(result: CorrelationReport | Calibration | Mapping[str, Any]) -> str:
    """What the correlations were computed on: dialogues, the votes (when the result counts them: a mean
    rating of 4 votes is one observation, not 4 ratings) and the observations the rating mode makes of them.

    >>> rating_line({"n_dialogues": 100, "n_votes": 423, "n_ratings": 100, "rating": "mean"})
    "100 dialogues, 423 votes; rating (mean): the mean of each dialogue's votes, 100 observations."
    """
    view = _rated(result)
    votes = f", {view.n_votes} votes" if view.n_votes is not None else ""
    mode, observations = view.rating, view.n_ratings
    return f"{view.n_dialogues} dialogues{votes}; rating ({mode}): {RATING_WORDS.get(mode, mode)}, {observations} observations."


def _rated(result: CorrelationReport | Calibration | Mapping[str, Any]) -> CorrelationReport | Calibration:
    """A correlation's or a calibration's view (a dict is read as a correlation: both have its counts)."""
    return result if isinstance(result, (CorrelationReport, Calibration)) else CorrelationReport.from_dict(result)


def bootstrap_header(result: CorrelationReport | Calibration | Mapping[str, Any]) -> str:
    """The percentile bootstrap interval's header, naming the unit of resampling (the result's ``bootstrap``)."""
    unit = _rated(result).bootstrap.resample
    return f"95% CI (bootstrap over {unit.replace('+', ' and ')})"


def fisher_header(correlation: CorrelationReport | Mapping[str, Any]) -> str:
    """The Fisher-z interval's header: n = dialogues in every rating mode; in pairs mode with a bootstrap its
    standard error comes from the bootstrap over dialogues (each row's ``ci_method``)."""
    methods = {r.ci_method or "" for r in CorrelationReport.of(correlation).metrics if r.pearson_ci}
    if methods and {m.split(":")[0] for m in methods} == {"jackknife_t"}:  # the default since issue 26 (1)
        unit = "dialogues and annotators" if any("annotators)" in m for m in methods) else "dialogues"
        return f"95% CI (jackknife over {unit}, Fisher z, t)"
    resampled = {m.startswith("fisher z, bootstrap SE") for m in methods}
    if resampled == {True}:
        return "95% CI (Fisher z, SE by bootstrap over dialogues)"
    if resampled == {True, False}:
        return "95% CI (Fisher z, n = dialogues or SE by bootstrap over dialogues)"
    return "95% CI (Fisher z, n = dialogues)"


# The test each interval family's p-value is (metrics.correlation.pearson_p_value: the test the row's interval
# inverts), by the family that starts a row's ``ci_method``
P_TESTS = {
    "jackknife_t": "jackknife t on Fisher z",
    "sandwich_t": "sandwich t on Fisher z",
    "boot_se_t": "bootstrap-SE t on Fisher z",
    "fisher": "Fisher z test",
    "percentile": "percentile bootstrap inverted",
    "bca": "BCa bootstrap inverted",
    "studentized": "studentized bootstrap inverted",
}


def _p_test(method: str) -> str:
    if method.startswith("fisher z, bootstrap SE"):  # pairs mode with a bootstrap and no jackknife
        return "bootstrap-SE t on Fisher z"
    family = method.split(":")[0].split(",")[0]
    return P_TESTS.get(family, "the interval's own test")


P_HEADER = "p (r = 0)"  # short, so that the table fits a laptop's screen; the test done is its note


def p_note(correlation: CorrelationReport | Mapping[str, Any]) -> str | None:
    """The p column's note: the test done, the one each row's reported interval inverts (so that p < 0.05
    exactly when the interval excludes 0), named from the rows' ``ci_method``; None without a p."""
    tests = {_p_test(r.ci_method or "") for r in CorrelationReport.of(correlation).metrics if r.p_value is not None}
    if not tests:
        return None
    test = tests.pop() if len(tests) == 1 else "each interval's own test"
    return f"p: the two-sided test of r = 0 that the row's 95% CI inverts ({test}); p < 0.05 exactly when the CI excludes 0."


def lambda_runs(runs: Sequence[Sequence[float]], to: str = "-") -> str:
    """λ*'s confidence set as its stretches of the grid: ``0-0.8, 2-3`` (``to`` between a stretch's ends).

    >>> lambda_runs([(0.0, 0.8), (2.0, 2.0)], " to ")
    '0 to 0.8, 2'
    """
    return ", ".join(f"{a:g}{to}{b:g}" if a != b else f"{a:g}" for a, b in runs)


def lambda_set_caption(calibration: Calibration | Mapping[str, Any]) -> str | None:
    """Under λ*'s figure: its confidence set by test inversion, and first whether λ* is identified at all
    (None without a set: no bootstrap).

    >>> lambda_set_caption({"n_dialogues": 10, "lambda_set": {"runs": [[0.0, 10.0]], "identified": False}})
    'not identified with 10 dialogues: 95% set λ in 0-10'
    """
    view = Calibration.of(calibration)
    found = view.lambda_set
    if found is None or not found.runs:
        return None
    runs = lambda_runs(found.runs)
    head = "" if found.identified else f"not identified with {view.n_dialogues} dialogues: "
    return f"{head}{found.confidence:.0%} set λ in {runs}"


def williams_table(correlation: CorrelationReport | Mapping[str, Any]) -> Table:
    """Every pair of metrics: r_A − r_B with its jackknife-t interval, its p and the adjusted p, Williams' t."""
    view = CorrelationReport.of(correlation)
    entries = view.williams
    rows = [
        [w.a, w.b, str(w.n), number(w.diff), interval(w.diff_ci), number(w.t, 2), p_value(w.p_value)]
        + [p_value(w.p_adjusted) if w.adjust else "—", "—" if w.n_needed is None else str(w.n_needed)]
        for w in entries
    ]
    adjust = next((w.adjust for w in entries if w.adjust), None)
    label = {"holm": "p (Holm)", "bonferroni": "p (Bonferroni)", "bh": "p (BH)"}.get(adjust or "", "p adjusted")
    family = view.comparisons
    level = family.interval_confidence if family else 0.95
    planned = family.planning_alpha if family else 0.05
    notes = [
        f"Family: {family.text}." if family else None,
        f"Difference r_A − r_B of each metric's correlation with the human rating; {100 * level:.3g}% interval: the "
        "jackknife-t of Fisher's z_A − z_B over dialogues (each dialogue's rating and both metrics left out together; "
        "t on n − 1 df), mapped back to r; p: the same t test, so the interval and the adjusted p agree; Williams' t "
        "(normal theory, df = n − 3) beside it for reference; n = dialogues. 'n for 80% power': dialogues a study "
        f"needs to detect the observed difference with that test at the family's level α = {planned:.3g} (the study "
        "designer's planner).",
        *(f"{w.a} vs {w.b}: {w.note}" for w in entries if w.note),
        *(note for note in view.notes if note.startswith(NOT_COMPARED)),
    ]
    header = f"{100 * level:.3g}% {_interval_adjustment(family)}CI (jackknife over dialogues)"
    columns = ("metric A", "metric B", "n", "r_A − r_B", header, "Williams t", "p", label, "n for 80% power")
    title = f"Differences from {family.reference}" if family and family.family == "reference" else "Differences between metrics"
    return Table(title, columns, rows, [n for n in notes if n])


def _interval_adjustment(family: ComparisonFamily | None) -> str:
    """How the differences' intervals were adjusted, one word before "CI" in their header (the family note
    names the method in full: Bonferroni for Holm and Bonferroni): short, so the table fits the page (issue 27)."""
    return {
        "holm": "simultaneous ",
        "bonferroni": "simultaneous ",
        "bh": "FCR-adjusted ",
    }.get((family.adjust if family else None) or "none", "")


def _with_interval(value: float | None, pair: Sequence[float | None] | None) -> str:
    return number(value) if not pair else f"{number(value)} {interval(pair)}"


SYSTEM_UNIT = "bootstrap over systems and dialogues"
SYSTEM_STATISTICS = (
    ("pearson", "Pearson r"),
    ("spearman", "Spearman ρ"),
    ("kendall", "Kendall τ-b"),
    ("accuracy", "pairwise accuracy"),
)


def _system_notes(view: SystemLevel) -> list[str]:
    notes = [view.note] if view.note else []
    if view.bootstrap.resamples:
        notes.append(
            f"Each system's score is its corpus metric over its rated dialogues (turn-weighted, as papers report "
            f"it) beside the mean of those dialogues' mean ratings. Intervals: 95% percentile bootstrap over "
            f"{view.bootstrap.resamples} draws of systems and dialogues together; pairwise accuracy counts a pair "
            f"tied for both the metric and the people as agreement."
        )
    undefined = max((m.undefined_draws for m in view.metrics), default=0)
    if undefined:
        notes.append(
            f"Up to {undefined} of {view.bootstrap.resamples} draws drew systems that all score alike and were left out."
        )
    return notes


def system_table(system: SystemLevel | Mapping[str, Any]) -> Table:
    """Systems as the unit: each metric's system-level statistics, each with its interval, and its
    significance cluster (1 = the best; a metric opens a new cluster when the head of the one above beats
    it significantly).

    >>> table = system_table({"n_systems": 4, "statistic": "pearson", "bootstrap": {"resamples": 500},
    ...     "metrics": [{"metric": "jga", "n": 4, "pearson": 0.9, "pearson_ci": [0.5, 1.0], "cluster": 1}]})
    >>> table.columns[1:3]
    ('cluster (Pearson r)', 'Pearson r [95% CI, bootstrap over systems and dialogues]')
    >>> table.rows[0][:3]
    ['jga', '1', '0.900 [0.500, 1.000]']
    """
    view = SystemLevel.of(system)
    chosen = dict(SYSTEM_STATISTICS)[view.statistic]
    rows = [
        [m.metric, "—" if m.cluster is None else str(m.cluster)]
        + [_with_interval(m.value(name), m.interval(name)) for name, _ in SYSTEM_STATISTICS]
        for m in sorted(view.metrics, key=lambda m: (m.cluster is None, m.cluster or 0))
    ]
    columns = ("metric", f"cluster ({chosen})", *(f"{label} [95% CI, {SYSTEM_UNIT}]" for _, label in SYSTEM_STATISTICS))
    title = f"System level: {view.n_systems} systems as the unit"
    return Table(title, columns, rows, _system_notes(view))


def system_scores_table(system: SystemLevel | Mapping[str, Any]) -> Table:
    """Each system's human score and corpus metric scores, best human score first."""
    view = SystemLevel.of(system)
    keys = list(view.systems[0].means) if view.systems else []
    ordered = sorted(view.systems, key=lambda s: -(s.rating if s.rating is not None else float("-inf")))
    rows = [[s.system, s.n_dialogues, number(s.rating), *(number(s.means.get(k)) for k in keys)] for s in ordered]
    notes = ["Metric scores are corpus scores: every turn of the rated dialogues weighs the same."]
    return Table("System scores", ("system", "rated dialogues", "mean rating", *keys), rows, notes)


def system_tests_table(system: SystemLevel | Mapping[str, Any]) -> Table | None:
    """Each metric against the best one on the chosen statistic (None when nothing was tested)."""
    view = SystemLevel.of(system)
    ranked = view.ranked()
    if not view.comparisons or len(ranked) < 2:
        return None
    best = ranked[0]
    chosen = dict(SYSTEM_STATISTICS)[view.statistic]
    rows = []
    for m in ranked[1:]:
        test = view.comparison(best.metric, m.metric)
        if test is None:
            continue
        sign = 1.0 if test.a == best.metric else -1.0
        ci = None if test.ci is None else tuple(sorted((sign * test.ci[0], sign * test.ci[1])))
        rows.append([m.metric, number(sign * test.difference), interval(ci), p_value(test.p), p_value(test.p_holm)])
    notes = [
        f"{best.metric} minus each metric on {chosen}, paired over the same draws of systems and dialogues; p is "
        f"the interval's own test, Holm-adjusted over all {len(view.comparisons)} pairs of metrics.",
    ]
    columns = ("metric", f"{best.metric} − metric", f"95% CI (paired {SYSTEM_UNIT})", "p", "p (Holm)")
    return Table(f"System level: {chosen} of the best metric against the others", columns, rows, notes)


def system_tables(system: SystemLevel | Mapping[str, Any]) -> list[Table]:
    """The system level's tables, as the report and the CLI print them."""
    view = SystemLevel.of(system)
    tests = system_tests_table(view)
    return [system_table(view), *([] if tests is None else [tests]), *([system_scores_table(view)] if view.systems else [])]


def judge_table(report: JudgeReport | Mapping[str, Any]) -> Table:
    """Each automatic judge against the human majority."""
    view = JudgeReport.of(report)
    rows = [
        [
            j.judge,
            str(j.n),
            number(j.accuracy),
            number(j.cohen_kappa),
            interval(j.kappa_ci),
            "; ".join(f"{h}→{k}: {c}" for h, row in j.confusion.items() for k, c in row.items() if c),
        ]
        for j in view.judges
    ]
    notes = [
        f"Question {view.question}: {view.n_items_with_majority} items with a human majority.",
        *view.notes,
        view.method,
    ]
    columns = ("judge", "n", "accuracy", "Cohen's κ", "95% CI (bootstrap over items)", "confusion (human→judge: items)")
    return Table("Automatic judges against the human majority", columns, rows, notes)


def planning_line(correlation: CorrelationReport | Mapping[str, Any], baseline: str = JGA.name) -> str | None:
    """How many dialogues the observed difference between the best metric and ``baseline`` needs."""
    view = CorrelationReport.of(correlation)
    rows = [r for r in view.metrics if r.pearson is not None and r.metric != baseline]
    best = max(rows, key=lambda r: r.pearson or 0.0, default=None)
    pair = next((w for w in view.williams if best and {w.a, w.b} == {best.metric, baseline}), None)
    if pair is None:
        return None
    have = f"this study has {pair.n}"
    if pair.n_needed is None:
        return f"{pair.a} vs {pair.b}: the observed difference is too small to plan for ({have})."
    return (
        f"To tell {pair.a} (r {number(pair.r_a)}) from {pair.b} (r {number(pair.r_b)}) apart with 80% power "
        f"at α = 0.05: {pair.n_needed} dialogues; {have}."
    )


def calibration_table(calibration: Calibration | Mapping[str, Any]) -> Table:
    k = Calibration.of(calibration)
    rows = [
        ["best λ", number(k.best_lambda), interval(k.ci_lambda)],
        ["r at best λ", number(k.r_best), interval(k.ci_r)],
        [f"r at λ = 0 ({JGA.label})", number(k.r_jga), ""],
        ["r at λ = ∞ (turn match)", number(k.r_turn), ""],
        ["cross-validated r", number(k.cv_r), f"{len(k.cv_folds)} folds"],
        ["bootstrap refits at a grid bound", number(k.at_bound), ""],
    ]
    notes = [rating_line(k), *k.notes, f"signature: {k.signature}"]
    return Table("λ calibration for FGA", ("", "value", bootstrap_header(k)), rows, notes)


def design_table(design: DesignSummary | Mapping[str, Any]) -> Table:
    """How the study spent its judgements; under the adaptive design, every correlation, difference and
    λ* weighted by 1/π (``metrics.adaptive.design_report``)."""
    view = DesignSummary.of(design)
    if view.design == "designed":
        return _designed_table(view)
    if view.design != "adaptive":
        return Table(
            "Design",
            (),
            [],
            ["uniform: every item was offered to k annotators; the estimates below are the ordinary (unweighted) ones"],
        )
    allocation = view.allocation
    chosen = ", ".join(f"{k} {v}" for k, v in allocation.stored if v is not None)
    notes = [
        f"adaptive ({chosen}): dialogues were drawn with known probabilities π from the metrics, before any "
        "vote; each judged dialogue is weighted by 1/π (Hájek), so these estimates hold for the whole pool, "
        "while the unweighted tables below describe the judged dialogues only"
    ]
    if view.note is not None:
        return Table("Design: adaptive", (), [], [*notes, view.note])
    rows = [["r " + m.metric, number(m.pearson), interval(m.bootstrap_ci), "", ""] for m in view.metrics]
    adjust = next((a for a in ADJUSTMENTS_STORED if any(d.adjust == a for d in view.differences)), None)
    # The row that answers the study's question leads, named so (the design was chosen for it).
    question = allocation.question or "fga_vs_jga"
    fga = FGA.key(f"{float(allocation.lam if allocation.lam is not None else 0.5):g}")
    first = []
    for d in view.differences:
        adjusted = p_value(d.p_adjusted if d.adjust == adjust else None) if adjust else "—"
        if question == "fga_vs_jga" and {d.a, d.b} == {fga, JGA.name}:
            flip = -1 if d.a == JGA.name else 1  # said as r(FGA) - r(JGA), whichever order it was computed in
            low_high = None if not d.diff_ci else sorted(flip * v for v in d.diff_ci)
            first.append(
                [
                    f"question: r {fga} - r {JGA.name}",
                    number(None if d.diff is None else flip * d.diff),
                    interval(low_high),
                    p_value(d.p_value),
                    adjusted,
                ]
            )
            continue
        rows.append([f"r {d.a} - r {d.b}", number(d.diff), interval(d.diff_ci), p_value(d.p_value), adjusted])
    if view.lam is not None:
        found = view.lam
        row = [("question: " if question == "lambda" else "") + "λ*", number(found.lambda_star), interval(found.ci), "", ""]
        (first if question == "lambda" else rows).append(row)
    rows = first + rows
    notes.append(f"{view.n_judged} dialogues judged, effective n {view.n_effective}; {view.method}")
    notes += view.notes  # metrics the design's estimates leave out, and why
    family = view.comparisons
    if family:
        notes.append(f"Differences: {family.text}; r and λ*: 95%, percentile bootstrap over the judged dialogues.")
    level = f"{100 * (family.interval_confidence if family else 0.95):.3g}%"
    for row in rows:  # r and λ*: 95%; a difference: at its family's level
        row.insert(3, level if " - r " in row[0] else "95%")
    columns = ("estimate", "value", "CI (bootstrap over dialogues)", "level", "p", "p adjusted")
    return Table("Design: adaptive (estimates for the pool)", columns, rows, notes)


def _reliability_line(corrected: CorrectedSummary) -> str:
    """What a corrected ρ rests on: the dialogues, the overlap subset, the ICC and the reliability R."""
    return (
        f"{corrected.n_dialogues} dialogues, {corrected.n_overlap} with two or more votes; single-rating "
        f"ICC {number(corrected.icc)}, reliability of the dialogue means {number(corrected.reliability)}"
    )


def _designed_table(design: DesignSummary) -> Table:
    """A designer's design (issue 29): the k-independent target, each metric's correlation with the
    expected rating corrected for the ratings' reliability, the question's difference first."""
    corrected = design.corrected or CorrectedSummary()
    allocation = design.allocation
    chosen = allocation.design or DesignedDraw()
    by_lambda = chosen.weighting == "lambda"
    drawn = f"{chosen.drawn} dialogues drawn with π by their λ scores (weighted 1/π)" if by_lambda else f"{chosen.n} dialogues"
    notes = [
        f"designed: {drawn}, a random {chosen.m} of them with {chosen.k_overlap} votes, "
        "the others 1 (k and the dialogues chosen together, before any vote)"
    ]
    if corrected.target:
        notes.append(corrected.target)
    found = design.lam if allocation.question == "lambda" else None
    lambda_row = None
    if found and found.lambda_star is not None:
        lambda_row = [
            "question: λ* (1/π-weighted, for the pool; CI: percentile bootstrap over dialogues)",
            number(found.lambda_star),
            interval(found.ci),
        ]
        notes.append("λ*: the weighted argmax of r(FGA_λ, mean rating), refined between grid points; no correction moves it")
    if corrected.note is not None or not corrected.metrics:
        columns = ("estimate", "value", "95% CI") if lambda_row else ()
        return Table(
            "Design: designed",
            columns,
            [lambda_row] if lambda_row else [],
            [*notes, corrected.note if corrected.note is not None else "no corrected estimates yet"],
        )
    rows = [[f"ρ {m.metric}", number(m.estimate), interval(m.ci)] for m in corrected.metrics]
    difference = corrected.difference
    if difference:
        label = "" if lambda_row else "question: "
        rows.insert(0, [f"{label}ρ {difference.a} - ρ {difference.b}", number(difference.estimate), interval(difference.ci)])
    if lambda_row:
        rows.insert(0, lambda_row)
    notes.append(_reliability_line(corrected))
    notes += corrected.notes
    columns = ("estimate", "corrected", "95% CI (jackknife over dialogues)")
    return Table("Design: designed (correlations with the expected rating)", columns, rows, notes)


def corrected_table(analysis: StudyAnalysis | Mapping[str, Any]) -> Table | None:
    """Beside each metric's raw r, its correlation with the expected rating corrected for the ratings'
    reliability (``metrics.analysis.corrected_summary``), and the corrected difference: for a study that is
    not designed (a designed study shows these in its design table) whose overlap subset identifies them;
    None otherwise.  The raw r is attenuated by the votes' noise, more so with fewer votes per dialogue: ρ is
    the estimand the designer plans for, so studies of different k compare on it.

    >>> view = StudyAnalysis.from_dict({"agreement": {}, "correlation": {"metrics": [{"metric": "jga", "pearson": 0.3}]},
    ...     "design": {"design": "uniform", "corrected": {"target": "T", "n_dialogues": 40, "n_overlap": 40, "icc": 0.5,
    ...     "reliability": 0.75, "metrics": [{"metric": "jga", "estimate": 0.35, "ci": [0.1, 0.6]}]}}})
    >>> corrected_table(view).rows
    [['jga', '0.300', '0.350', '[0.100, 0.600]']]
    """
    view = StudyAnalysis.of(analysis)
    corrected = view.design.corrected
    if view.design.design == "designed" or corrected is None:
        return None
    if corrected.note is not None or not corrected.metrics:
        said = corrected.note if corrected.note is not None else "no corrected estimates"
        return Table("Corrected for the ratings' reliability", (), [], [f"no corrected ρ: {said}"])
    raw = {m.metric: m.pearson for m in view.correlation.metrics} if view.correlation is not None else {}
    rows = [[m.metric, number(raw.get(m.metric)), number(m.estimate), interval(m.ci)] for m in corrected.metrics]
    difference = corrected.difference
    if difference is not None:
        a, b = raw.get(difference.a), raw.get(difference.b)
        rows.insert(
            0,
            [
                f"{difference.a} - {difference.b}",
                number(None if a is None or b is None else a - b),
                number(difference.estimate),
                interval(difference.ci),
            ],
        )
    notes = [
        f"ρ: {corrected.target}" if corrected.target else "ρ: the correlation with the expected rating",
        _reliability_line(corrected),
        "the raw r is attenuated by the votes' noise, the more so the fewer votes a dialogue has: compare "
        "studies of different k on ρ",
        *corrected.notes,
    ]
    if any(abs(v) > 1 for m in corrected.metrics for v in (m.estimate, *(m.ci or ())) if v is not None):
        notes.append(
            "a corrected ρ or an interval bound beyond ±1 is the sampling error of the estimated reliability, "
            "not a correlation beyond ±1"
        )
    columns = ("metric", "raw r", "corrected ρ", "95% CI of ρ (jackknife over dialogues)")
    return Table("Corrected for the ratings' reliability", columns, rows, notes)


def unsure_table(analysis: StudyAnalysis | Mapping[str, Any]) -> Table | None:
    """The "unsure" answers (None when there were none): per question the rate, then the items and
    annotators with the highest rates; the policy in words."""
    view = StudyAnalysis.of(analysis)
    found = view.unsure
    if found is None or not found.questions:
        return None
    rows = []
    for q in found.questions:
        rows.append([q.question, "all votes", f"{q.unsure} of {q.votes}", f"{100 * q.rate:.1f}%"])
        rows += [[q.question, f"item {r.key}", f"{r.unsure} of {r.votes}", f"{100 * r.rate:.1f}%"] for r in q.items]
        rows += [[q.question, f"annotator {r.key}", f"{r.unsure} of {r.votes}", f"{100 * r.rate:.1f}%"] for r in q.annotators]
    notes = [
        "'unsure' is missing data: those votes are left out of agreement, majority labels and correlations before "
        "they are computed (never a category, never a number); the vote files keep them",
        f"the items and annotators with the highest rates, at most {found.top} of each",
    ]
    return Table('"Unsure" answers', ("question", "of", "unsure", "rate"), rows, notes)


def kind_tables(analysis: StudyAnalysis | Mapping[str, Any]) -> list[Table]:
    """The tables of what a task kind added to the analysis (CoCo: % human-like and % correct per
    condition); none for the others."""
    view = StudyAnalysis.of(analysis)
    return [coco_table(view.coco)] if view.coco is not None else []


def analysis_tables(analysis: StudyAnalysis | Mapping[str, Any], tie: str) -> list[Table]:
    """Every table of a study's analysis, in reading order."""
    view = StudyAnalysis.of(analysis)
    if view.agreement is None:
        return [Table("Results", (), [], ["No votes yet."])]
    tables = [design_table(view.design), agreement_table(view.agreement)]
    unsure = unsure_table(view)
    if unsure is not None:
        tables.append(unsure)
    tables += kind_tables(view)
    tables.append(majority_summary(view.majority, tie))
    if view.model_labels:  # Dawid-Skene beside the majority (metrics.crowd)
        tables += model_label_table(view.model_labels)
    if view.correlation is not None:
        tables.append(correlation_table(view.correlation, view.condition))
        tables.append(williams_table(view.correlation))
    corrected = corrected_table(view)
    if corrected is not None:
        tables.append(corrected)
    if view.system_level is not None:
        tables += system_tables(view.system_level)
    elif view.correlation_note is not None:
        tables.append(Table("Metrics against human ratings", (), [], [view.correlation_note]))
    if view.calibration is not None:
        tables.append(calibration_table(view.calibration))
    return tables


def model_label_table(model_labels: Mapping[str, ModelLabelReport | Mapping[str, Any]]) -> list[Table]:
    """Dawid-Skene beside the majority (``analysis["model_labels"]``, ``metrics.crowd``), two narrow
    tables: the items where the posterior label and the majority differ (majority ties included), and
    each annotator's estimated competence and spammer score, lowest competence first.

    >>> tables = model_label_table({"q": {"fitted": True, "chance": 0.5, "threshold": 0.1, "n_items": 2, "n_disagree": 1,
    ...     "n_majority_ties": 0, "disagreements": [{"item": "d1", "condition": "", "n_votes": 3, "label": "1",
    ...     "probability": 0.91, "majority": "0"}], "annotators": [{"annotator": "a", "n_items": 20, "competence": 0.52,
    ...     "spammer_score": 0.01, "spammer": True}], "notes": [], "method": "Dawid-Skene"}})
    >>> tables[0].rows
    [['q', 'd1', '0', '1', '0.910', 3]]
    >>> tables[1].rows[0][-1]
    'yes'
    """
    reports = model_label_reports(model_labels)
    disagree, skills, notes = [], [], []
    for question, found in reports.items():
        if not found.fitted:
            notes += [f"{question}: {note}" for note in found.notes]
            continue
        for row in found.disagreements:
            item = row.item + (f" ({row.condition})" if row.condition else "")
            majority = "tie" if row.majority is None else str(row.majority)
            label = "tie" if row.label is None else str(row.label)
            disagree.append([question, item, majority, label, number(row.probability), row.n_votes])
        ordered = sorted(found.annotators, key=lambda a: (a.competence is None, a.competence or 0.0))
        for a in ordered:
            flag = {True: "yes", False: "no", None: "too few items"}[a.spammer]
            competence = number(a.competence) + (f" {interval(a.competence_ci)}" if a.competence_ci else "")
            skills.append([question, a.annotator, a.n_items, competence, number(a.spammer_score), flag])
        notes.append(
            f"{question}: {found.n_disagree} of {found.n_items} items labelled differently from the majority, "
            f"{found.n_majority_ties} majority ties settled; chance competence {number(found.chance)}"
        )
        notes += [f"{question}: {note}" for note in found.notes]
    method = (
        "Dawid & Skene (1979), fitted by the project's own EM (checked against crowd-kit in the tests): "
        "posterior label = the most probable class; competence = P(correct), "
        "the confusion matrix's diagonal weighted by the class priors; spammer score (Raykar & Yu 2012) 0 = answers "
        "independent of the truth, 1 = perfect; flagged at or below "
        + ", ".join(sorted({f"{m.threshold:g}" for m in reports.values() if m.fitted}) or ["—"])
        + ". Intervals: percentile bootstrap over items, EM refitted on each resample; the posterior probability is the "
        "model's own."
    )
    return [
        Table(
            "Model labels where they differ from the majority",
            ("question", "item", "majority", "Dawid-Skene label", "posterior probability", "votes"),
            disagree,
            [*notes, method] if disagree or notes else [method],
        ),
        Table(
            "Annotator competence (Dawid-Skene)",
            (
                "question",
                "annotator",
                "items",
                "competence P(correct) [95% CI, bootstrap over items]",
                "spammer score",
                "spammer",
            ),
            skills,
            [method],
        ),
    ]
