"""Admin page: a study's analysis — progress, majority labels, agreement, correlation, λ calibration.

Numbers come from ``annotate.study_data`` (the task kind's analysis, built from the same functions
as the ``python -m metrics`` commands); this page only lays them out.  Tables go through ``st.dataframe``, which shows
cell text as text.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from annotate import service
from annotate.kinds import KINDS
from annotate.pages.admin import _study_picker
from annotate.pages.context import app_engine, guard, require_admin_page
from annotate.study_data import study_analysis, study_conditions
from exports.charts import metric_rating_chart, r_lambda_chart
from metrics.analysis import DEFAULTS, AnalysisSettings

COEFFICIENTS = (
    ("percent_agreement", "% agreement"),
    ("krippendorff_alpha", "Krippendorff's α"),
    ("fleiss_kappa", "Fleiss' κ"),
    ("gwet_ac1", "Gwet's AC1"),
)


def _fmt(value, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _ci(pair) -> str:
    return "—" if not pair else f"[{pair[0]:.3f}, {pair[1]:.3f}]"


def _settings_form() -> AnalysisSettings:
    with st.expander("Settings", expanded=False):
        left, middle, right = st.columns(3)
        levels, ties, ratings = ("nominal", "ordinal", "interval", "ratio"), ("none", "random", "fixed:0", "fixed:1"), (
            "mean", "majority", "pairs")  # fmt: skip
        level = left.selectbox("Agreement level", levels, index=levels.index(DEFAULTS.level), key="an-level")
        tie = middle.selectbox("Majority ties", ties, index=ties.index(DEFAULTS.tie), key="an-tie")
        rating = right.selectbox("Human rating per dialogue", ratings, index=ratings.index(DEFAULTS.rating), key="an-rating")
        resamples = left.number_input("Bootstrap resamples", 0, 5000, DEFAULTS.resamples, step=100, key="an-boot")
        folds = middle.number_input("Cross-validation folds", 0, 20, DEFAULTS.folds, key="an-folds")
        seed = right.number_input("Seed", 0, 2**31 - 1, DEFAULTS.seed, key="an-seed")
        grid_stop = left.number_input("λ grid: largest λ", 0.5, 100.0, DEFAULTS.grid[1], key="an-grid-stop")
        grid_num = middle.number_input("λ grid: points", 3, 5001, DEFAULTS.grid[2], key="an-grid-num")
    return AnalysisSettings(level, tie, rating, resamples=int(resamples), folds=int(folds), seed=int(seed),
                            grid=(DEFAULTS.grid[0], float(grid_stop), int(grid_num)))  # fmt: skip


def render() -> None:
    user = require_admin_page()
    engine = app_engine()
    st.title("Analysis")
    study = _study_picker(key="analysis-study")
    if study is None:
        return
    settings = _settings_form()
    progress_report = service.study_progress(engine, user, study.id)
    left, middle, right = st.columns(3)
    left.metric("Judgements", f"{progress_report['judgements_done']} / {progress_report['judgements_needed']}")
    middle.metric("Items complete", f"{progress_report['items_complete']} / {progress_report['items']}")
    right.metric("Vote events", progress_report["vote_events"])
    condition = None
    if KINDS[study.kind].dialogues is not None:  # metrics are analysed one system (condition) at a time
        systems = guard(lambda: study_conditions(engine, user, study.id)) or []
        condition = st.selectbox("System (condition)", systems, key="analysis-condition") if len(systems) > 1 else None
    # study_analysis keeps one result per study state and settings (shared with the exports and the
    # report), so widgets that re-run this page cost nothing; the bar moves only when it computes.
    bar = st.progress(0.0, text="analysing")
    result = guard(lambda: study_analysis(engine, user, study.id, settings, condition=condition,
                                          progress=lambda fraction, text: bar.progress(fraction, text=text)))  # fmt: skip
    bar.empty()
    if result is None:
        return
    if not result.get("n_votes"):
        st.info("No votes yet.")
        return
    _agreement_section(result["agreement"])
    if "coco" in result:
        _coco_section(result["coco"])
    _majority_section(result["majority"])
    if KINDS[study.kind].dialogues is not None:
        _correlation_section(result)


def _agreement_section(agreement: dict) -> None:
    st.subheader("Agreement")
    rows = []
    for question, report in agreement["questions"].items():
        row = {"question": question, "items": report["n_items"], "annotators": report["n_annotators"]}
        for key, label in COEFFICIENTS:
            row[label] = _fmt(report[key])
            row[f"{label} 95% CI"] = _ci(report["ci"][key])
        rows.append(row)
    st.dataframe(pd.DataFrame(rows), hide_index=True)
    with st.expander("Per annotator, pairwise Cohen's κ, notes"):
        for question, report in agreement["questions"].items():
            st.caption(question)
            st.dataframe(pd.DataFrame(report["annotators"]), hide_index=True)
            if report["cohen_kappa_pairwise"]:
                st.dataframe(pd.DataFrame(report["cohen_kappa_pairwise"]), hide_index=True)
            for note in report["notes"]:
                st.text(f"note: {note}")
        st.text(f"signature: {agreement['signature']}")


def _coco_section(rows: list[dict]) -> None:
    st.subheader("CoCo summary (the CoCo paper's Table 3 layout)")
    table = [
        {
            "condition": r["condition"],
            "human-like %": _fmt(r["human_like_pct"], 1),
            "correct %": _fmt(r["correct_pct"], 1),
            "items (human-like / correct)": f"{r['human_like_n']} / {r['correct_n']}",
            "ties": f"{r['human_like_ties']} / {r['correct_ties']}",
            "α human-like": _fmt(r["human_like_alpha"]),
            "α correct": _fmt(r["correct_alpha"]),
        }
        for r in rows
    ]
    st.dataframe(pd.DataFrame(table), hide_index=True)
    st.caption("By majority vote over the items with a majority; ties are counted, not labelled.")


def _majority_section(majority: dict) -> None:
    st.subheader("Majority labels")
    question = st.selectbox("Question", list(majority), key="analysis-majority-question")
    chosen = majority[question]
    st.caption(f"Tie policy {chosen['tie_policy']}: {chosen['n_ties']} tied item(s).")
    st.dataframe(pd.DataFrame(chosen["rows"]), hide_index=True)


def _correlation_section(result: dict) -> None:
    st.subheader("Metrics against human ratings")
    if "correlation" not in result:
        st.info(result.get("correlation_note", "No correlation yet."))
        return
    correlation = result["correlation"]
    st.caption(f"{correlation['n_dialogues']} dialogues, {correlation['n_ratings']} ratings ({correlation['rating']})")
    rows = [
        {"metric": r["metric"], "Pearson r": _fmt(r["pearson"]), "95% CI (Fisher z)": _ci(r["pearson_ci"]),
         "p": "—" if r["p_value"] is None else f"{r['p_value']:.2g}", "bootstrap CI": _ci(r["bootstrap_ci"]),
         "Spearman": _fmt(r["spearman"]), "Kendall": _fmt(r["kendall"])}
        for r in correlation["metrics"]
    ]  # fmt: skip
    st.dataframe(pd.DataFrame(rows), hide_index=True)
    ceiling = correlation["human_ceiling"]
    st.text(f"Human ceiling (each annotator vs the mean of the others): {_fmt(ceiling['mean_pearson'])}")
    with st.expander("Williams' test between metrics"):
        st.dataframe(pd.DataFrame(correlation["williams"]), hide_index=True)
    metric = st.selectbox(
        "Plot a metric against the rating", [r["metric"] for r in correlation["metrics"]], key="analysis-metric"
    )
    st.altair_chart(metric_rating_chart(correlation, metric))
    for note in correlation["notes"]:
        st.text(f"note: {note}")
    st.text(f"signature: {correlation['signature']}")
    calibration = result.get("calibration")
    if calibration:
        st.subheader("λ calibration for FGA")
        left, middle, right = st.columns(3)
        left.metric("best λ", f"{calibration['best_lambda']:.3f}", help=f"95% CI {_ci(calibration['ci_lambda'])}")
        middle.metric("r at best λ", f"{calibration['r_best']:.3f}", help=f"95% CI {_ci(calibration['ci_r'])}")
        right.metric("cross-validated r", _fmt(calibration["cv_r"]))
        st.text(f"best λ 95% CI {_ci(calibration['ci_lambda'])}; r at λ=0 (JGA) {_fmt(calibration['r_jga'])}; "
                f"r at λ=∞ (turn match) {_fmt(calibration['r_turn'])}")  # fmt: skip
        st.altair_chart(r_lambda_chart(calibration))
        for note in calibration["notes"]:
            st.text(f"note: {note}")
        st.text(f"signature: {calibration['signature']}")
