"""Admin page: a study's analysis — progress, majority labels, agreement, correlation, λ calibration.

Numbers come from ``annotate.service`` (the cached analysis of ``annotate.reports``: the task kind's
analysis, built from the same functions as the ``python -m metrics`` commands); this page only lays
them out.  Tables go through ``st.dataframe``, which shows cell text as text (``annotate.pages.tables``:
without Streamlit's own export, with a spreadsheet-safe CSV download).
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from annotate import service
from annotate.allocation import judgements_total
from annotate.kinds import KINDS
from annotate.pages import tables
from annotate.pages.admin import _study_picker
from annotate.pages.context import app_engine, guard, require_admin_page
from exports.charts import metric_rating_chart, r_lambda_chart
from metrics import present
from metrics.analysis import AnalysisSettings


def _settings_form(engine, user, study) -> AnalysisSettings:
    """The analysis settings, starting from those stored with the study; they can be stored with it."""
    stored = service.study_settings(engine, user, study.id)
    key = f"an-{study.id}"  # per study: another study's settings start from its own
    with st.expander("Settings", expanded=False):
        left, middle, right = st.columns(3)
        levels, ties, ratings = (
            ("nominal", "ordinal", "interval", "ratio"),
            ("none", "random", "fixed:0", "fixed:1"),
            ("mean", "majority", "pairs"),
        )
        level = left.selectbox("Agreement level", levels, index=levels.index(stored.level), key=f"{key}-level")
        tie = middle.selectbox("Majority ties", ties, index=ties.index(stored.tie) if stored.tie in ties else 0, key=f"{key}-tie")
        rating = right.selectbox("Human rating per dialogue", ratings, index=ratings.index(stored.rating), key=f"{key}-rating")
        resamples = left.number_input("Bootstrap resamples", 0, 5000, stored.resamples, step=100, key=f"{key}-boot")
        folds = middle.number_input("Cross-validation folds", 0, 20, stored.folds, key=f"{key}-folds")
        seed = right.number_input("Seed", 0, 2**31 - 1, stored.seed, key=f"{key}-seed")
        grid_stop = left.number_input("λ grid: largest λ", 0.5, 100.0, stored.grid[1], key=f"{key}-grid-stop")
        grid_num = middle.number_input("λ grid: points", 3, 5001, stored.grid[2], key=f"{key}-grid-num")
        adjustments = ("holm", "bh", "none")
        adjust = right.selectbox(
            "p-value adjustment (metric pairs)", adjustments, index=adjustments.index(stored.adjust), key=f"{key}-adjust"
        )
        schemes = ("none", "linear", "quadratic")
        weights = left.selectbox(
            "Agreement weights (Cohen's κ, AC2)", schemes, index=schemes.index(stored.weights), key=f"{key}-weights"
        )
        units = ("dialogues", "dialogues+annotators")
        resample = middle.selectbox("Bootstrap over", units, index=units.index(stored.resample), key=f"{key}-resample")
        chosen = AnalysisSettings(
            level,
            tie,
            rating,
            stored.lambdas,
            (stored.grid[0], float(grid_stop), int(grid_num)),
            int(resamples),
            int(folds),
            int(seed),
            adjust,
            weights,
            resample,
        )
        if right.button("Store these settings with the study", key=f"{key}-store", disabled=chosen == stored):
            guard(lambda: service.set_study_settings(engine, user, study.id, chosen), "Stored: exports and the report use them.")
    return chosen


def render() -> None:
    user = require_admin_page()
    engine = app_engine()
    st.title("Analysis")
    study = _study_picker(key="analysis-study")
    if study is None:
        return
    settings = _settings_form(engine, user, study)
    progress_report = service.study_progress(engine, user, study.id)
    left, middle, right = st.columns(3)
    total = judgements_total(service.allocation_settings(engine, user, study.id), progress_report.judgements_needed)
    left.metric("Judgements", f"{progress_report.judgements_done} / {total}")  # against the budget, as on Progress
    middle.metric("Items complete", f"{progress_report.items_complete} / {progress_report.items}")
    right.metric("Vote events", progress_report.vote_events)
    condition = None
    if KINDS[study.kind].dialogues is not None:  # metrics are analysed one system (condition) at a time
        systems = guard(lambda: service.study_conditions(engine, user, study.id)) or []
        condition = st.selectbox("System (condition)", systems, key="analysis-condition") if len(systems) > 1 else None
    # study_analysis keeps one result per study state and settings (shared with the exports and the
    # report), so widgets that re-run this page cost nothing; the bar moves only when it computes.
    bar = st.progress(0.0, text="analysing")
    result = guard(
        lambda: service.study_analysis(
            engine,
            user,
            study.id,
            settings,
            condition=condition,
            progress=lambda fraction, text: bar.progress(fraction, text=text),
        )
    )
    bar.empty()
    if result is None:
        return
    if not result.get("n_votes"):
        st.info("No votes yet.")
        return
    design = result.get("design") or {"design": "uniform"}
    if design["design"] == "adaptive":
        show_table(present.design_table(design))
    else:
        st.caption(present.design_table(design).notes[0].replace("uniform:", "Design: uniform —"))
    _agreement_section(result["agreement"])
    if "coco" in result:
        show_table(present.coco_table(result["coco"]))
    _majority_section(result["majority"], settings.tie, study, user)
    if KINDS[study.kind].dialogues is not None:
        _correlation_section(result)
    _judges_section(study, user, settings.seed, [q for q in result["majority"] if q != "transcription"])


def _judges_section(study, user, seed: int, questions: list[str]) -> None:
    """Automatic judges (an LLM, a classifier) against the human majority: their labels are uploaded,
    compared, and never stored as votes."""
    with st.expander("Automatic judges against the human majority"):
        st.caption("A tidy CSV of the judges' labels: item, annotator (the judge's name), question, value[, condition].")
        left, right = st.columns([1, 2])
        question = left.selectbox("Question", questions, key=f"judges-question-{study.id}") if questions else None
        upload = right.file_uploader("Judges' labels", type=["csv"], key=f"judges-{study.id}")
        if upload is not None:
            report = guard(
                lambda: service.judge_study(app_engine(), user, study.id, upload.name, upload.getvalue(), question, seed=seed)
            )
            if isinstance(report, dict):
                show_table(present.judge_table(report), subheader=False)


def show_table(table: present.Table, *, subheader: bool = True) -> None:
    """A table of ``metrics.present`` (the report and the CLI show the same), notes as plain text."""
    if subheader:
        st.subheader(table.title)
    if table.rows:
        tables.show_table(pd.DataFrame(table.rows, columns=list(table.columns)), table.title)
    for note in table.notes:
        st.text(note)


def _agreement_section(agreement: dict) -> None:
    agreement_table = present.agreement_table(agreement)
    st.subheader(agreement_table.title)
    tables.show_table(pd.DataFrame(agreement_table.rows, columns=list(agreement_table.columns)), agreement_table.title)
    with st.expander("Per annotator, pairwise Cohen's kappa, notes"):
        show_table(present.annotator_table(agreement), subheader=False)
        show_table(present.cohen_table(agreement), subheader=False)
        for note in agreement_table.notes:
            st.text(note)


def _majority_section(majority: dict, tie: str, study=None, user=None) -> None:
    show_table(present.majority_summary(majority, tie))
    question = st.selectbox("Items of a question", list(majority), key="analysis-majority-question")
    rows = majority[question]["rows"]
    split_only = st.checkbox("Only split items (no majority, or at most 2/3 agreeing)", key="analysis-split")
    if split_only:
        rows = [r for r in rows if _split(r)]
    tables.show_table(pd.DataFrame(rows), f"majority {question}")
    if study is not None and rows:
        _drill_down(study, user, question, rows)


def _split(row: dict) -> bool:
    """No majority, or the largest answer has at most two thirds of the votes."""
    counts = [v for k, v in row.items() if k.startswith("n_") and k != "n_votes"]
    return row["majority"] is None or max(counts, default=0) <= 2 / 3 * row["n_votes"]


def _drill_down(study, user, question: str, rows: list[dict]) -> None:
    """Every vote and comment on one item, and the adjudicator's final label (its own event)."""
    engine = app_engine()
    with st.expander("Drill down into an item and adjudicate"):
        labels = {f"{r['item']}\u241f{r.get('condition') or ''}": r for r in rows}
        chosen = st.selectbox("Item", list(labels), format_func=lambda k: k.replace("\u241f", "  ·  "), key="analysis-drill")
        row = labels[chosen]
        condition = row.get("condition") or ""
        events = guard(lambda: service.item_votes(engine, user, study.id, row["item"], condition)) or []
        st.caption(
            "Every vote event, oldest first; 'current' marks each annotator's latest answer (what the analysis "
            "counts), the others were superseded by a change."
        )
        columns = ["current", *(c for c in (events[0] if events else {}) if c != "current")]  # "current" first: in view
        tables.show_table(pd.DataFrame(events, columns=columns) if events else [], f"votes on {row['item']} {condition}")
        with st.form("adjudicate"):
            # No answer chosen at first: the adjudicator picks one (a pre-chosen 1 was recorded by a mere click).
            value = st.radio("Final label", ["1", "0"], index=None, horizontal=True, key="analysis-final")
            note = st.text_input("Note (optional)", key="analysis-final-note")
            if st.form_submit_button("Record the adjudicated label"):
                if value is None:
                    st.error("Choose the final label first: nothing was recorded.")
                else:
                    guard(
                        lambda: service.adjudicate(engine, user, study.id, row["item"], condition, question, value, note),
                        "Recorded; the majority export gives it as the final label.",
                    )


def _correlation_section(result: dict) -> None:
    if "correlation" not in result:
        st.subheader("Metrics against human ratings")
        st.info(result.get("correlation_note", "No correlation yet."))
        return
    correlation = result["correlation"]
    show_table(present.correlation_table(correlation, result.get("condition")))
    plan = present.planning_line(correlation)
    if plan:
        st.caption(plan)
    with st.expander("Differences between metrics: r_A − r_B, Zou's interval, Williams' test, adjusted p"):
        show_table(present.williams_table(correlation), subheader=False)
    if "system_level" in result:
        with st.expander(f"System level: {result['system_level']['n_systems']} systems as the unit"):
            show_table(present.system_table(result["system_level"]), subheader=False)
    metric = st.selectbox(
        "Plot a metric against the rating", [r["metric"] for r in correlation["metrics"]], key="analysis-metric"
    )
    st.altair_chart(metric_rating_chart(correlation, metric))
    calibration = result.get("calibration")
    if calibration:
        table = present.calibration_table(calibration)
        st.subheader(table.title)
        left, middle, right = st.columns(3)
        number, interval = present.number, present.interval
        left.metric("best λ", number(calibration["best_lambda"]), help=f"95% CI {interval(calibration['ci_lambda'])}")
        middle.metric("r at best λ", number(calibration["r_best"]), help=f"95% CI {interval(calibration['ci_r'])}")
        right.metric("cross-validated r", present.number(calibration["cv_r"]))
        st.altair_chart(r_lambda_chart(calibration))
        show_table(table, subheader=False)
