"""Altair charts shared by the app, the CLI (``--plot``) and the reports.

Charts are built from the analysis JSON contracts, never from the database, so a plot in
the app and one from the command line are the same picture of the same numbers.  Every builder is
pure (a result in, an ``alt.Chart`` out; the result read through its typed view, :mod:`metrics.results`,
whether it comes as that view or as its dict) and never fails on degenerate input: what it cannot draw it
says in words, in the chart's subtitle (a metric without an interval, no human ceiling, an undefined
coefficient, an open λ* interval).  Numbers in labels use :mod:`metrics.present`'s one rounding rule.

- :func:`forest_chart`: every metric's Pearson r with its interval against the human ceiling;
- :func:`agreement_chart` / :func:`annotator_chart`: agreement per question and per annotator;
- :func:`r_lambda_chart`: FGA's r(λ) with λ* and the JGA / turn-match reference lines;
- :func:`metric_rating_chart`: one metric against the ratings, per dialogue;
- :func:`system_chart` / :func:`system_scatter_chart`: systems as the unit.

Widths are chosen to sit beside text on a 1400 × 900 screen: at most 640 px with axes and legends.
"""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import altair as alt
import pandas as pd

from metrics.comparisons import ADJUSTMENT_NAMES
from metrics.present import interval, number
from metrics.results import Agreement, AgreementReport, Calibration, Comparison, CorrelationReport, SystemLevel
from metrics.summary import method_words

R_TITLE = "Pearson r with human ratings"
MAX_WIDTH = 640  # the widest any chart here may render (axes, labels and legend included)
SUBTITLE_CHARS = 92  # a subtitle line at 11 px stays inside MAX_WIDTH

REFERENCE_COLOUR = "#222222"
DIFFERS_COLOUR = "#1f77b4"
SAME_COLOUR = "#1f77b4"
OTHER_COLOUR = "#9a9a9a"
CEILING_COLOUR = "#f2a541"


def _lines(*texts: str) -> list[str]:
    """Subtitle lines wrapped to fit the chart's width."""
    out: list[str] = []
    for text in texts:
        if text:
            out += textwrap.wrap(text, SUBTITLE_CHARS)
    return out


def _title(text: str, notes: list[str]) -> alt.TitleParams:
    return alt.TitleParams(text=text, subtitle=_lines(*notes), anchor="start", subtitleColor="#444444")


def _finite(value) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _with_interval(value: float, low: float | None, high: float | None) -> str:
    """``0.682 [0.561, 0.775]``, or ``0.682 (no interval)``."""
    return f"{number(value)} {interval([low, high]) if low is not None and high is not None else '(no interval)'}"


def note_chart(title: str, notes: list[str], *, width: int = 480) -> alt.Chart:
    """A chart that only says why there is nothing to draw (degenerate input)."""
    lines = _lines(*notes) or ["nothing to draw"]
    frame = pd.DataFrame({"line": lines, "order": range(len(lines))})
    return (
        alt.Chart(frame)
        .mark_text(align="left", baseline="top", fontSize=12, color="#444444")
        .encode(text="line:N", y=alt.Y("order:O", axis=None), x=alt.value(0))
        .properties(width=width, height=18 * len(lines), title=alt.TitleParams(text=title, anchor="start"))
    )


# --- forest plot: every metric against the ratings --------------------------------------------------


def _reference_of(correlation: CorrelationReport) -> str | None:
    """The reference metric: the declared family's, else JGA when it was measured (an ``all`` family)."""
    names = [row.metric for row in correlation.metrics]
    reference = correlation.comparisons.reference if correlation.comparisons else None
    if reference in names:
        return reference
    return "jga" if "jga" in names else None


def _adjust_of(correlation: CorrelationReport) -> str:
    """How the declared comparisons were adjusted (Holm when the report does not say)."""
    family = correlation.comparisons
    return family.adjust if family is not None and family.adjust is not None else "holm"


def forest_rows(correlation: CorrelationReport | dict) -> tuple[pd.DataFrame, list[str]]:
    """One row per metric with a correlation, ordered by r (highest first), and notes in words.

    Columns: ``metric``, ``label`` (the axis label; the reference's says so), ``r``, ``low``, ``high``
    (the reported ``pearson_ci``; NaN when there is none), ``status`` (reference / differs / no
    difference / not compared), ``differs`` (significant against the reference after the family's
    adjustment), ``diff``, ``diff_ci``, ``p_adjusted`` and ``text`` (r and its interval, 3 decimals)."""
    view = CorrelationReport.of(correlation)
    adjust = _adjust_of(view)
    reference = _reference_of(view)
    differs_label, same_label = _status_labels(reference, adjust)
    against: dict[str, tuple[Comparison, float]] = {}
    for entry in view.williams:
        if reference is not None and reference in (entry.a, entry.b) and entry.a != entry.b:
            other = entry.b if entry.a == reference else entry.a
            sign = 1.0 if entry.a == other else -1.0  # the difference as r_metric − r_reference
            against[other] = (entry, sign)
    rows, notes, no_interval = [], [], []
    for row in view.metrics:
        name, r = row.metric, _finite(row.pearson)
        if r is None:
            notes.append(f"{name}: no correlation ({row.note or 'undefined'}), not drawn.")
            continue
        ci = row.pearson_ci
        low, high = (_finite(ci[0]), _finite(ci[1])) if ci else (None, None)
        if low is None or high is None:
            no_interval.append(name)
        found = against.get(name)
        entry, sign = (None, 1.0) if found is None else found
        p_adjusted = None if entry is None else (entry.p_adjusted if entry.adjust == adjust else entry.p_value)
        if name == reference:
            status = f"reference ({reference})"
        elif entry is None or entry.significant is None:
            status = "not among the declared comparisons"
        else:
            status = differs_label if entry.significant else same_label
        diff_ci = None
        if entry is not None and entry.diff_ci:  # as r_metric − r_reference: negated and swapped when reversed
            diff_ci = list(entry.diff_ci) if sign > 0 else [-entry.diff_ci[1], -entry.diff_ci[0]]
        rows.append(
            {
                "metric": name,
                "label": f"{name} (reference)" if name == reference else name,
                "r": r,
                "low": low if low is not None else float("nan"),
                "high": high if high is not None else float("nan"),
                "status": status,
                "differs": bool(entry and entry.significant),
                "diff": None if entry is None or entry.diff is None else sign * entry.diff,
                "diff_ci": interval(diff_ci) if diff_ci else "—",
                "p_adjusted": p_adjusted,
                "n": row.n,
                "text": _with_interval(r, low, high),
            }
        )
    if no_interval:
        notes.append(f"No interval for {', '.join(no_interval)} (too few dialogues or no bootstrap): the point only.")
    frame = pd.DataFrame(rows)
    if not frame.empty:
        frame = frame.sort_values("r", ascending=False, kind="stable").reset_index(drop=True)
    return frame, notes


def _status_labels(reference: str | None, adjust: str) -> tuple[str, str]:
    how = f"after {ADJUSTMENT_NAMES.get(adjust, adjust)}" if adjust != "none" else "(unadjusted)"
    return f"differs from {reference} {how}", f"no significant difference from {reference}"


def forest_chart(correlation: CorrelationReport | dict, *, width: int = 360, row_height: int = 24) -> alt.Chart:
    """Every metric's Pearson r with its reported interval (``pearson_ci``), ordered by r, beside the
    human ceiling r_max (its interval shaded); the reference metric in black and named on the axis; a
    filled dot where the metric differs from the reference after the declared family's adjustment
    (:mod:`metrics.comparisons`; the jackknife-t test of z_a − z_b, Holm 1979 by default), a hollow one where it does not.

    ``width`` is the plot area's; with the metric names, the r column and the legend the chart stays
    within :data:`MAX_WIDTH`."""
    view = CorrelationReport.of(correlation)
    frame, notes = forest_rows(view)
    comparisons = view.comparisons
    reference = _reference_of(view)
    title = "Which metric tracks the human ratings"
    ceiling = view.human_ceiling
    r_max = _finite(ceiling.r_max)
    ceiling_ci = ceiling.ci
    if frame.empty:
        return note_chart(title, ["No metric has a correlation with the ratings.", *notes])
    methods = {method_words(row.ci_method) for row in view.metrics if row.ci_method}
    unit = "dialogues and annotators" if view.bootstrap.resample != "dialogues" else "dialogues"
    n_dialogues = view.n_dialogues if view.n_dialogues is not None else frame["n"].max()
    head = (
        f"Pearson r, whiskers: 95% interval ({'; '.join(sorted(m for m in methods if m)) or 'as reported'}; unit: {unit}); "
        f"n = {n_dialogues} dialogues."
    )
    if reference is not None and comparisons:
        head += f" Comparisons with {reference}: {comparisons.text if comparisons.text is not None else 'as declared'}."
    if r_max is None:
        notes.append(f"No human ceiling: {ceiling.note or 'not computed'}.")
    elif not ceiling_ci:
        notes.append(f"Human ceiling r_max {number(r_max)} has no interval (no bootstrap): the line only.")
    order = frame["label"].tolist()
    lows = [v for v in frame["low"].tolist() + [frame["r"].min(), 0.0] if math.isfinite(v)]
    highs = [v for v in frame["high"].tolist() + [frame["r"].max()] if math.isfinite(v)]
    if r_max is not None:
        highs.append(r_max)
        if ceiling_ci and ceiling_ci[1] is not None:
            highs.append(float(ceiling_ci[1]))
    domain = [max(-1.0, math.floor(min(lows) * 10) / 10), min(1.0, math.ceil(max(highs) * 10) / 10)]
    height = row_height * len(frame)
    x_scale = alt.Scale(domain=domain, nice=False, clamp=True)
    x = alt.X("r:Q", title=R_TITLE, scale=x_scale, axis=alt.Axis(grid=False))
    y = alt.Y(
        "label:N",
        sort=order,
        title=None,
        axis=alt.Axis(
            labelFontWeight=alt.ExprRef(f"datum.value == '{reference} (reference)' ? 'bold' : 'normal'"), labelLimit=120
        ),
    )
    differs_label, same_label = _status_labels(reference, _adjust_of(view))
    statuses = [f"reference ({reference})", differs_label, same_label, "not among the declared comparisons"]
    statuses = [s for s in statuses if s in set(frame["status"])]
    stroke = {
        f"reference ({reference})": REFERENCE_COLOUR,
        differs_label: DIFFERS_COLOUR,
        same_label: SAME_COLOUR,
        "not among the declared comparisons": OTHER_COLOUR,
    }
    fill = {**stroke, same_label: "white", "not among the declared comparisons": "white"}
    legend = alt.Legend(title=None, orient="bottom", direction="vertical", labelLimit=MAX_WIDTH - 40)  # one per line: fits
    colour = alt.Color("status:N", scale=alt.Scale(domain=statuses, range=[stroke[s] for s in statuses]), legend=legend)
    filling = alt.Fill("status:N", scale=alt.Scale(domain=statuses, range=[fill[s] for s in statuses]), legend=legend)
    tooltip = [
        alt.Tooltip("metric:N"),
        alt.Tooltip("text:N", title="r [95% interval]"),
        alt.Tooltip("status:N"),
        alt.Tooltip("diff:Q", title=f"r − r({reference})", format=".3f"),
        alt.Tooltip("diff_ci:N", title="its interval"),
        alt.Tooltip("p_adjusted:Q", title="p (adjusted)", format=".2g"),
    ]
    layers = []
    if r_max is not None:
        ceiling_text = f"human ceiling {number(r_max)}" + (f" {interval(ceiling_ci)}" if ceiling_ci else "")
        band = pd.DataFrame(
            [
                {
                    "r": r_max,
                    "low": (ceiling_ci or [r_max, r_max])[0],
                    "high": (ceiling_ci or [r_max, r_max])[1],
                    "text": ceiling_text,
                }
            ]
        )
        if ceiling_ci:
            layers.append(
                alt.Chart(band).mark_rect(color=CEILING_COLOUR, opacity=0.22).encode(x=alt.X("low:Q", scale=x_scale), x2="high:Q")
            )
        layers.append(alt.Chart(band).mark_rule(color=CEILING_COLOUR, strokeWidth=2).encode(x=alt.X("r:Q", scale=x_scale)))
        layers.append(
            alt.Chart(band)
            .mark_text(
                align="right" if r_max > sum(domain) / 2 else "left",
                baseline="bottom",
                dx=-3 if r_max > sum(domain) / 2 else 3,
                dy=-2,
                fontSize=10,
                color="#a0621a",
            )
            .encode(x=alt.X("r:Q", scale=x_scale), y=alt.value(0), text="text:N")
        )
    zero = pd.DataFrame([{"r": 0.0}])
    if domain[0] < 0 < domain[1]:
        layers.append(alt.Chart(zero).mark_rule(color="#bbbbbb", strokeDash=[2, 2]).encode(x=alt.X("r:Q", scale=x_scale)))
    base = alt.Chart(frame)
    whiskers = frame.dropna(subset=["low", "high"])
    if not whiskers.empty:
        layers.append(
            alt.Chart(whiskers)
            .mark_rule(strokeWidth=2)
            .encode(x=alt.X("low:Q", scale=x_scale, title=R_TITLE), x2="high:Q", y=y, color=colour, tooltip=tooltip)
        )
    layers.append(
        base.mark_point(size=70, strokeWidth=2, opacity=1).encode(x=x, y=y, color=colour, fill=filling, tooltip=tooltip)
    )
    layers.append(
        base.mark_text(align="left", baseline="middle", fontSize=11, color="#333333").encode(
            y=y, x=alt.value(width + 6), text="text:N"
        )
    )
    return (
        alt.layer(*layers)
        .properties(width=width, height=height, title=_title(title, [head, *notes]))
        .properties(view=alt.ViewBackground(stroke=None))
    )


# --- agreement: per question and per annotator --------------------------------------------------------

COEFFICIENTS = {"krippendorff_alpha": "Krippendorff's α", "fleiss_kappa": "Fleiss' κ", "gwet_ac1": "Gwet's AC1"}
# Landis & Koch (1977), the usual reading of κ: conventions, not tests
LANDIS_KOCH = (
    (0.0, 0.2, "slight"),
    (0.2, 0.4, "fair"),
    (0.4, 0.6, "moderate"),
    (0.6, 0.8, "substantial"),
    (0.8, 1.0, "almost perfect"),
)
# Krippendorff (2004, §12.3): α ≥ 0.8 to rely on the data, ≥ 0.667 for tentative conclusions
KRIPPENDORFF_LINES = ((0.667, "α 0.667"), (0.8, "α 0.8"))


def _agreement(agreement_report: Agreement | AgreementReport | dict) -> Agreement:
    """``agreement_all``'s ``{"questions": {q: report}}`` or one question's report (named ""), typed."""
    if isinstance(agreement_report, Agreement):
        return agreement_report
    if isinstance(agreement_report, AgreementReport):
        return Agreement(questions={"": agreement_report})
    if "questions" in agreement_report and isinstance(agreement_report["questions"], dict):
        return Agreement.from_dict(agreement_report)
    return Agreement(questions={"": AgreementReport.from_dict(agreement_report)})


def agreement_rows(agreement_report: Agreement | AgreementReport | dict) -> tuple[pd.DataFrame, list[str]]:
    """Per question and coefficient (α, Fleiss' κ, AC1): ``value``, ``low``, ``high`` (the report's
    ``ci``; NaN when none) and ``text``; a coefficient that is undefined is left out with a note."""
    rows, notes = [], []
    for question, report in _agreement(agreement_report).questions.items():
        for key, name in COEFFICIENTS.items():
            value = _finite(report.estimate(key))
            where = f"{question}: " if question else ""
            if value is None:
                why = next((n.split(": ", 1)[1] for n in report.notes if n.startswith(name)), "undefined")
                notes.append(f"{where}{name} not drawn ({why}).")
                continue
            ci = report.interval(key)
            low, high = (_finite(ci[0]), _finite(ci[1])) if ci else (None, None)
            if low is None or high is None:
                notes.append(f"{where}{name} has no interval.")
            rows.append(
                {
                    "question": question or "answers",
                    "coefficient": name,
                    "value": value,
                    "low": float("nan") if low is None else low,
                    "high": float("nan") if high is None else high,
                    "n_items": report.n_items,
                    "text": _with_interval(value, low, high),
                }
            )
    return pd.DataFrame(rows), notes


def agreement_chart(agreement_report: Agreement | AgreementReport | dict, *, width: int = 440, bands: str = "both") -> alt.Chart:
    """Per question, Krippendorff's α, Fleiss' κ and Gwet's AC1 as dots with their intervals (the
    report's bootstrap over items), over the conventional readings, named as conventions: ``bands``
    ``landis_koch`` shades Landis & Koch's (1977) slight / fair / moderate / substantial / almost
    perfect; ``krippendorff`` draws Krippendorff's (2004) 0.667 and 0.8 lines for α; ``both`` (default)
    both."""
    view = _agreement(agreement_report)
    frame, notes = agreement_rows(view)
    title = "Do the annotators agree?"
    if frame.empty:
        return note_chart(title, ["No agreement coefficient is defined.", *notes])
    questions = list(dict.fromkeys(frame["question"]))
    unit = "; ".join(sorted({r.ci_method or "percentile bootstrap over items" for r in view.questions.values()}))
    said = []
    if bands in ("both", "landis_koch"):
        said.append("shaded: Landis & Koch (1977) reading of κ")
    if bands in ("both", "krippendorff"):
        said.append("dashed: Krippendorff's (2004) 0.667 / 0.8 for α")
    head = f"Dots: estimate; whiskers: 95% interval ({unit}). Conventions, not tests: {'; '.join(said)}."
    low = min([0.0] + [v for v in frame["low"].tolist() + frame["value"].tolist() if math.isfinite(v)])
    domain = [max(-1.0, math.floor(low * 10) / 10), 1.0]
    x_scale = alt.Scale(domain=domain, nice=False, clamp=True)
    x = alt.X("value:Q", title="agreement (1 = perfect, 0 = chance)", scale=x_scale, axis=alt.Axis(grid=False))
    y = alt.Y("question:N", sort=questions, title=None, axis=alt.Axis(labelLimit=120))
    offset = alt.YOffset("coefficient:N", sort=list(COEFFICIENTS.values()))
    colour = alt.Color(
        "coefficient:N",
        sort=list(COEFFICIENTS.values()),
        scale=alt.Scale(domain=list(COEFFICIENTS.values()), range=["#1f77b4", "#d62728", "#2ca02c"]),
        legend=alt.Legend(title=None, orient="bottom", direction="horizontal"),
    )
    tooltip = ["question:N", "coefficient:N", alt.Tooltip("text:N", title="estimate [95% interval]"), "n_items:Q"]
    layers = []
    if bands in ("both", "landis_koch"):
        named = ((-1.0, 0.0, "poor"),) + LANDIS_KOCH if domain[0] < 0 else LANDIS_KOCH
        shaded = pd.DataFrame(
            [
                {"low": max(lo, domain[0]), "high": hi, "band": name, "mid": (max(lo, domain[0]) + hi) / 2}
                for lo, hi, name in named
            ]
        )
        for shade, fill in ((0, "#f3f3f3"), (1, "#e6e6e6")):
            layers.append(
                alt.Chart(shaded.iloc[shade::2]).mark_rect(color=fill).encode(x=alt.X("low:Q", scale=x_scale), x2="high:Q")
            )
        layers.append(
            alt.Chart(shaded)
            .mark_text(baseline="bottom", dy=-2, fontSize=9, color="#666666")
            .encode(x=alt.X("mid:Q", scale=x_scale), y=alt.value(0), text="band:N")
        )
    if bands in ("both", "krippendorff"):
        for (at, name), align, dx in zip(KRIPPENDORFF_LINES, ("right", "left"), (-2, 2)):
            line = pd.DataFrame([{"at": at, "name": name}])
            layers.append(alt.Chart(line).mark_rule(strokeDash=[4, 3], color="#555555").encode(x=alt.X("at:Q", scale=x_scale)))
            layers.append(
                alt.Chart(line)
                .mark_text(baseline="top", align=align, dx=dx, dy=2, fontSize=9, color="#555555")
                .encode(x=alt.X("at:Q", scale=x_scale), y=alt.value(0), text="name:N")
            )
    whiskers = frame.dropna(subset=["low", "high"])
    base = alt.Chart(frame)
    if not whiskers.empty:
        layers.append(
            alt.Chart(whiskers)
            .mark_rule(strokeWidth=2)
            .encode(x=alt.X("low:Q", scale=x_scale), x2="high:Q", y=y, yOffset=offset, color=colour, tooltip=tooltip)
        )
    layers.append(base.mark_circle(size=55, opacity=1).encode(x=x, y=y, yOffset=offset, color=colour, tooltip=tooltip))
    height = max(90, 54 * len(questions))
    return (
        alt.layer(*layers)
        .properties(width=width, height=height, title=_title(title, [head, *notes]))
        .properties(view=alt.ViewBackground(stroke=None))
    )


ANNOTATOR_MEASURES = {
    "kappa_with_others": "Cohen's κ with the majority of the others",
    "agree_with_others": "share agreeing with the majority of the others",
}


def annotator_rows(
    agreement_report: Agreement | AgreementReport | dict, question: str, measure: str = "kappa_with_others"
) -> tuple[pd.DataFrame, list[str]]:
    """One row per annotator with ``value`` (``measure`` of the report's ``annotators`` rows), sorted
    from the least agreeing; annotators without a value are left out with a note."""
    questions = _agreement(agreement_report).questions
    if question not in questions:
        return pd.DataFrame(), [f"no agreement report for question {question!r}"]
    rows, missing = [], []
    for row in questions[question].annotators:
        measures = {"kappa_with_others": row.kappa_with_others, "agree_with_others": row.agree_with_others}
        value = _finite(measures.get(measure))
        if value is None:
            missing.append(row.annotator)
            continue
        rows.append(
            {
                "annotator": row.annotator,
                "value": value,
                "agree": _finite(row.agree_with_others),
                "kappa": _finite(row.kappa_with_others),
                "n_votes": row.n_votes,
                "n_compared": row.n_compared,
                "gold_accuracy": _finite(row.gold_accuracy),
                "text": number(value),
            }
        )
    notes = []
    if missing:
        notes.append(f"Not drawn (no vote compared with a majority of the others, or κ undefined): {', '.join(missing)}.")
    frame = pd.DataFrame(rows)
    if not frame.empty:
        frame = frame.sort_values("value", kind="stable").reset_index(drop=True)
    return frame, notes


def annotator_chart(
    agreement_report: Agreement | AgreementReport | dict, question: str, *, measure: str = "kappa_with_others", width: int = 420
) -> alt.Chart:
    """Each annotator's agreement with the majority of the others (ties skipped;
    :func:`metrics.agreement.annotator_rows`) as horizontal bars sorted from the least agreeing, the
    annotators' median as a line, so an outlying annotator stands out.  Clicking a bar sets the
    selection parameter ``annotator`` (field ``annotator``), for the page to show that person's votes."""
    if measure not in ANNOTATOR_MEASURES:
        raise ValueError(f"measure must be one of {', '.join(ANNOTATOR_MEASURES)}, got {measure!r}")
    frame, notes = annotator_rows(agreement_report, question, measure)
    title = f"Each annotator against the others{f' ({question})' if question else ''}"
    if frame.empty:
        return note_chart(title, ["No annotator could be compared with the others.", *notes])
    median = float(frame["value"].median())
    head = f"{ANNOTATOR_MEASURES[measure]}; line: the annotators' median {number(median)}. Click a bar for the votes."
    pick = alt.selection_point(name="annotator", fields=["annotator"], on="click", clear="dblclick")
    order = frame["annotator"].tolist()
    low = min(0.0, float(frame["value"].min()))
    x_scale = alt.Scale(domain=[low, 1.0], nice=False)
    y = alt.Y("annotator:N", sort=order, title=None, axis=alt.Axis(labelLimit=140))
    tooltip = [
        "annotator:N",
        alt.Tooltip("kappa:Q", title="κ with the others", format=".3f"),
        alt.Tooltip("agree:Q", title="share agreeing", format=".3f"),
        alt.Tooltip("n_compared:Q", title="votes compared"),
        alt.Tooltip("n_votes:Q", title="votes"),
        alt.Tooltip("gold_accuracy:Q", title="gold accuracy", format=".3f"),
    ]
    bars = (
        alt.Chart(frame)
        .mark_bar(height={"band": 0.7})
        .encode(
            x=alt.X("value:Q", title=ANNOTATOR_MEASURES[measure], scale=x_scale),
            y=y,
            color=alt.condition(pick, alt.value("#1f77b4"), alt.value("#c6d7ea")),
            tooltip=tooltip,
        )
        .add_params(pick)
    )
    labels = (
        alt.Chart(frame)
        .mark_text(align="left", dx=6, fontSize=10, color="#333333")
        .encode(x=alt.value(width), y=y, text="text:N")
    )
    middle = alt.Chart(pd.DataFrame([{"median": median, "text": "median"}]))
    rule = middle.mark_rule(color="#d62728", strokeDash=[4, 3]).encode(x=alt.X("median:Q", scale=x_scale))
    rule += middle.mark_text(baseline="bottom", dy=-2, fontSize=9, color="#d62728").encode(
        x=alt.X("median:Q", scale=x_scale), y=alt.value(0), text="text:N"
    )
    height = max(60, 22 * len(frame))
    return (
        alt.layer(bars, labels, rule)
        .properties(width=width, height=height, title=_title(title, [head, *notes]))
        .properties(view=alt.ViewBackground(stroke=None))
    )


# --- λ calibration --------------------------------------------------------------------------------


def _lambda_ticks(end: float) -> list[float]:
    """Axis values for a symlog λ axis: 0 and 1-2-5 steps up to the grid's end."""
    ticks = [0.0]
    step = 0.1
    while step <= end * 1.0001:
        ticks += [v for v in (step, 2 * step, 5 * step) if v <= end * 1.0001]
        step *= 10
    return sorted({round(v, 10) for v in ticks} | {end})


def r_lambda_chart(calibration: Calibration | dict, *, width: int = 480, height: int = 280, scale: str = "symlog") -> alt.Chart:
    """r(λ) with its bootstrap band (over dialogues), λ* as a rule with its interval shaded (an open
    upper end, :func:`metrics.calibrate.calibrate`'s ``ci_lambda`` [lo, None], is drawn to the grid's
    end and said so), and the two limits of FGA as labelled reference lines: JGA at λ = 0 (``r_jga``)
    and the turn-level match rate as λ → ∞ (``r_turn``)."""
    k = Calibration.of(calibration)
    curve = pd.DataFrame(
        [
            {
                "lambda": float(p.lam),
                "r": _finite(p.r),
                "low": (p.ci or (None, None))[0],
                "high": (p.ci or (None, None))[1],
            }
            for p in k.curve
        ]
    )
    title = "Which λ makes FGA agree most with people"
    notes: list[str] = []
    if curve.empty or curve["r"].isna().all():
        return note_chart(title, ["No r(λ) curve: FGA has no correlation with the ratings.", *k.notes])
    curve = curve.astype({"low": float, "high": float, "r": float})
    end = float(curve["lambda"].max())
    best, r_best = _finite(k.best_lambda), _finite(k.r_best)
    ci = k.ci_lambda
    head = f"λ* = {number(best)} {interval(ci) if ci else '(no interval)'}, r = {number(r_best)}"
    if k.ci_r:
        head += f" {interval(k.ci_r)}"
    head += "; blue band: r's 95% interval at each λ, red span: λ*'s (bootstrap percentile over dialogues)."
    if k.cv_r is not None:
        head += f" Cross-validated r {number(k.cv_r)}."
    if not ci:
        notes.append("No interval for λ* (no bootstrap).")
    elif ci[1] is None:
        notes.append(f"The upper end of λ*'s interval is open: beyond the grid's end λ = {end:g} (drawn to it).")
    if k.best_at_bound:
        notes.append("λ* is at an end of the grid: widen the grid.")
    if not curve["low"].notna().any():
        notes.append("No band: the curve has no interval.")
    y_values = [v for v in curve["r"].tolist() + curve["low"].tolist() + curve["high"].tolist() if math.isfinite(v)]
    r_jga, r_turn = _finite(k.r_jga), _finite(k.r_turn)
    y_values += [v for v in (r_jga, r_turn) if v is not None]
    y_scale = alt.Scale(domain=[math.floor(min(y_values) * 20) / 20, math.ceil(max(y_values) * 20) / 20], nice=False)
    if scale not in ("symlog", "linear"):
        raise ValueError(f"scale must be symlog or linear, got {scale!r}")
    x_scale = alt.Scale(domain=[0, end], nice=False, **({"type": "symlog", "constant": 0.5} if scale == "symlog" else {}))
    x_title = "λ (0: JGA; larger: forget errors sooner)" + ("; symmetric log scale" if scale == "symlog" else "")
    x = alt.X(
        "lambda:Q",
        title=x_title,
        scale=x_scale,
        axis=alt.Axis(values=_lambda_ticks(end), format=".4~g") if scale == "symlog" else alt.Undefined,
    )
    layers = []
    if best is not None and ci:
        span = pd.DataFrame([{"lo": ci[0], "hi": end if ci[1] is None else ci[1]}])
        layers.append(
            alt.Chart(span).mark_rect(color="firebrick", opacity=0.10).encode(x=alt.X("lo:Q", scale=x_scale), x2="hi:Q")
        )
    band = curve.dropna(subset=["low", "high"])
    if not band.empty:
        layers.append(
            alt.Chart(band)
            .mark_area(opacity=0.25, color="#1f77b4")
            .encode(x=x, y=alt.Y("low:Q", title=R_TITLE, scale=y_scale), y2="high:Q")
        )
    layers.append(
        alt.Chart(curve.dropna(subset=["r"]))
        .mark_line(color="#1f77b4")
        .encode(
            x=x,
            y=alt.Y("r:Q", title=R_TITLE, scale=y_scale),
            tooltip=[alt.Tooltip("lambda:Q", format=".3f"), alt.Tooltip("r:Q", format=".3f")],
        )
    )
    references = [
        {"r": value, "text": f"{name} {number(value)}"}
        for name, value in (("JGA (λ = 0)", r_jga), ("turn match (λ → ∞)", r_turn))
        if value is not None
    ]
    if references:
        lines = pd.DataFrame(references)
        layers.append(alt.Chart(lines).mark_rule(strokeDash=[2, 3], color="#555555").encode(y=alt.Y("r:Q", scale=y_scale)))
        layers.append(
            alt.Chart(lines)
            .mark_text(align="right", baseline="bottom", dy=-2, fontSize=10, color="#333333")
            .encode(y=alt.Y("r:Q", scale=y_scale), x=alt.value(width - 2), text="text:N")
        )
    if best is not None:
        point = pd.DataFrame([{"lambda": best, "r": r_best, "text": f"λ* {number(best)}"}])
        layers.append(alt.Chart(point).mark_rule(strokeDash=[4, 3], color="firebrick").encode(x=alt.X("lambda:Q", scale=x_scale)))
        if r_best is not None:
            layers.append(
                alt.Chart(point).mark_point(color="firebrick", size=60, filled=True).encode(x=x, y=alt.Y("r:Q", scale=y_scale))
            )
        layers.append(
            alt.Chart(point)
            .mark_text(align="left", baseline="top", dx=3, dy=3, fontSize=10, color="firebrick")
            .encode(x=alt.X("lambda:Q", scale=x_scale), y=alt.value(0), text="text:N")
        )
    if ci and ci[1] is None:
        layers.append(
            alt.Chart(pd.DataFrame([{"lambda": end, "text": "open →"}]))
            .mark_text(align="right", baseline="top", dx=-2, dy=16, fontSize=10, color="firebrick")
            .encode(x=alt.X("lambda:Q", scale=x_scale), y=alt.value(0), text="text:N")
        )
    return alt.layer(*layers).properties(width=width, height=height, title=_title(title, [head, *notes]))


def metric_rating_chart(correlation: CorrelationReport | dict, metric: str, *, width: int = 360, height: int = 260) -> alt.Chart:
    """One point per dialogue: a metric against the human rating."""
    per_dialogue = CorrelationReport.of(correlation).per_dialogue
    frame = pd.DataFrame([{"id": d.id, "metric": d.values.get(metric), "rating": d.rating} for d in per_dialogue])
    frame = frame.dropna()
    return (
        alt.Chart(frame)
        .mark_circle(opacity=0.6)
        .encode(
            x=alt.X("metric:Q", title=metric),
            y=alt.Y("rating:Q", title="human rating"),
            tooltip=["id:N", "metric:Q", "rating:Q"],
        )
        .properties(width=width, height=height, title=f"{metric} vs human rating")
    )


# --- systems as the unit ----------------------------------------------------------------------------


def system_rows(system: SystemLevel | dict) -> pd.DataFrame:
    """One row per metric with a value of the system level's chosen statistic: the value, its interval,
    the significance cluster and the label shown beside it."""
    view = SystemLevel.of(system)
    rows = []
    for m in view.ranked():
        value = m.value(view.statistic)
        pair = m.interval(view.statistic)
        low, high = (None, None) if pair is None else pair
        rows.append(
            {
                "metric": m.metric,
                "value": value,
                "low": low,
                "high": high,
                "cluster": "not ranked" if m.cluster is None else f"cluster {m.cluster}",
                "text": _with_interval(value or 0.0, low, high),
            }
        )
    return pd.DataFrame(rows, columns=["metric", "value", "low", "high", "cluster", "text"])


def system_chart(system: SystemLevel | dict, *, width: int = 320, row_height: int = 24) -> alt.Chart:
    """Every metric's system-level statistic (Pearson r by default) with its 95% interval (resampling
    systems and dialogues together), best first, coloured by significance cluster: cluster 1 holds the
    metrics the best one does not beat significantly."""
    view = SystemLevel.of(system)
    label = {"pearson": "Pearson r", "spearman": "Spearman ρ", "kendall": "Kendall τ-b", "accuracy": "pairwise accuracy"}
    statistic = label.get(view.statistic, view.statistic)
    title = f"Which metric ranks the {view.n_systems} systems as people do"
    frame = system_rows(view)
    if frame.empty:
        return note_chart(title, [view.note or "No metric has a system-level value."])
    head = (
        f"{statistic} over systems (corpus metric against mean rating); whiskers: 95% interval resampling systems "
        f"and dialogues together; colour: significance cluster (Holm over every pair of metrics)."
    )
    notes = [head, *([view.note] if view.note else [])]
    if frame["low"].isna().all():
        notes.append("No intervals: too few systems or no resampling.")
    bounds = [v for v in [*frame["low"].dropna(), *frame["value"], 0.0] if math.isfinite(v)]
    highs = [v for v in [*frame["high"].dropna(), *frame["value"]] if math.isfinite(v)]
    lower = 0.0 if view.statistic == "accuracy" else -1.0
    domain = [max(lower, math.floor(min(bounds) * 10) / 10), min(1.0, math.ceil(max(highs) * 10) / 10)]
    if domain[0] >= domain[1]:
        domain = [lower, 1.0]
    x_scale = alt.Scale(domain=domain, nice=False, clamp=True)
    order = frame["metric"].tolist()
    y = alt.Y("metric:N", sort=order, title=None, axis=alt.Axis(labelLimit=120))
    clusters = sorted(set(frame["cluster"]), key=lambda c: (c == "not ranked", int(c.split()[-1]) if c[-1].isdigit() else 0))
    shades = ["#1f77b4", "#9467bd", "#8c8c8c", "#bcbcbc", "#d9d9d9"]
    colour = alt.Color(
        "cluster:N",
        scale=alt.Scale(domain=clusters, range=[shades[min(i, len(shades) - 1)] for i in range(len(clusters))]),
        legend=alt.Legend(title=None, orient="bottom", direction="horizontal"),
    )
    tooltip = [alt.Tooltip("metric:N"), alt.Tooltip("text:N", title=f"{statistic} [95% interval]"), alt.Tooltip("cluster:N")]
    layers = []
    if domain[0] < 0 < domain[1]:
        layers.append(
            alt.Chart(pd.DataFrame([{"value": 0.0}]))
            .mark_rule(color="#bbbbbb", strokeDash=[2, 2])
            .encode(x=alt.X("value:Q", scale=x_scale))
        )
    whiskers = frame.dropna(subset=["low", "high"])
    if not whiskers.empty:
        layers.append(
            alt.Chart(whiskers)
            .mark_rule(strokeWidth=2)
            .encode(x=alt.X("low:Q", scale=x_scale, title=statistic), x2="high:Q", y=y, color=colour, tooltip=tooltip)
        )
    layers.append(
        alt.Chart(frame)
        .mark_point(size=70, strokeWidth=2, filled=True, opacity=1)
        .encode(x=alt.X("value:Q", scale=x_scale, title=statistic, axis=alt.Axis(grid=False)), y=y, color=colour, tooltip=tooltip)
    )
    layers.append(
        alt.Chart(frame)
        .mark_text(align="left", baseline="middle", fontSize=11, color="#333333")
        .encode(y=y, x=alt.value(width + 6), text="text:N")
    )
    return (
        alt.layer(*layers)
        .properties(width=width, height=row_height * len(frame), title=_title(title, notes))
        .properties(view=alt.ViewBackground(stroke=None))
    )


def system_scatter_chart(system: SystemLevel | dict, metric: str, *, width: int = 320, height: int = 240) -> alt.Chart:
    """One point per system: its corpus ``metric`` against its mean rating, the system named beside it."""
    view = SystemLevel.of(system)
    frame = pd.DataFrame(
        [
            {"system": s.system, "metric": s.means.get(metric), "rating": s.rating, "dialogues": s.n_dialogues}
            for s in view.systems
        ]
    ).dropna()
    title = f"{metric} against the mean rating, per system"
    if frame.empty:
        return note_chart(title, ["No system has both a score and a rating."])
    x = alt.X("metric:Q", title=f"{metric} (corpus, turn-weighted)", scale=alt.Scale(zero=False))
    y = alt.Y("rating:Q", title="mean rating", scale=alt.Scale(zero=False))
    tooltip = ["system:N", alt.Tooltip("metric:Q", format=".3f"), alt.Tooltip("rating:Q", format=".3f"), "dialogues:Q"]
    points = alt.Chart(frame).mark_circle(size=70, opacity=0.8).encode(x=x, y=y, tooltip=tooltip)
    names = alt.Chart(frame).mark_text(align="left", dx=6, fontSize=10, color="#333333").encode(x=x, y=y, text="system:N")
    return (points + names).properties(width=width, height=height, title=_title(title, []))


def save_chart(chart: alt.Chart, path: str | Path) -> Path:
    """Write PNG, SVG or HTML by extension (PNG and SVG through vl-convert, offline)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".png", ".svg", ".html"):
        raise ValueError(f"{path}: the plot must end in .png, .svg or .html")
    if suffix == ".png":
        chart.save(str(path), format="png", scale_factor=2)
    else:
        chart.save(str(path), format=suffix[1:])
    return path


def png_bytes(chart: alt.Chart) -> bytes:
    """The chart as PNG bytes (for self-contained reports)."""
    import vl_convert as vlc

    return vlc.vegalite_to_png(chart.to_json(), scale=2)


def svg_text(chart: alt.Chart) -> str:
    """The chart as SVG text (for reports that embed vector graphics)."""
    import vl_convert as vlc

    return vlc.vegalite_to_svg(chart.to_json())
