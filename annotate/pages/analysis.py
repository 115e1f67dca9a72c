"""Admin page: a study's analysis — progress, majority labels, agreement, correlation, λ calibration.

Numbers come from ``annotate.service`` (the cached analysis of ``annotate.analysis.reports``: the task kind's
analysis, built from the same functions as the ``python -m metrics`` commands); this page only lays
them out.  Tables go through ``st.dataframe``, which shows cell text as text (``annotate.pages.tables``:
without Streamlit's own export, with a spreadsheet-safe CSV download).
"""

from __future__ import annotations

import time
from dataclasses import replace

import altair as alt
import pandas as pd
import streamlit as st

from annotate import service
from annotate.kinds import KINDS
from annotate.pages import tables
from annotate.pages.admin import study_picker
from annotate.pages.context import app_engine, guard, require_admin_page
from annotate.studies.allocation import judgements_total
from exports.charts import (
    agreement_chart,
    annotator_chart,
    annotator_rows,
    forest_chart,
    metric_rating_chart,
    r_lambda_chart,
    system_chart,
    system_scatter_chart,
)
from formats.settings import settings
from metrics import present
from metrics.analysis import AnalysisSettings
from metrics.comparisons import ADJUSTMENTS, FAMILIES
from metrics.results import (
    Agreement,
    Calibration,
    DesignSummary,
    MajorityRow,
    MajorityTable,
    StudyAnalysis,
    StudyJudges,
    SystemLevel,
)
from metrics.summary import Summary, summarise


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
        resamples = _number_box(left, "Bootstrap resamples", 0, 5000, stored.resamples, step=100, key=f"{key}-boot")
        folds = _number_box(middle, "Cross-validation folds", 0, 20, stored.folds, key=f"{key}-folds")
        seed = _number_box(right, "Seed", 0, 2**31 - 1, stored.seed, key=f"{key}-seed")
        grid_stop = _number_box(left, "λ grid: largest λ", 0.5, 100.0, stored.grid[1], key=f"{key}-grid-stop")
        grid_num = _number_box(middle, "λ grid: points", 3, 5001, stored.grid[2], key=f"{key}-grid-num")
        adjust = right.selectbox(
            "Adjustment over the comparisons (p and intervals)",
            ADJUSTMENTS,
            index=ADJUSTMENTS.index(stored.adjust),
            key=f"{key}-adjust",
        )
        schemes = ("none", "linear", "quadratic")
        weights = left.selectbox(
            "Agreement weights (Cohen's κ, AC2)", schemes, index=schemes.index(stored.weights), key=f"{key}-weights"
        )
        units = ("dialogues", "dialogues+annotators")
        resample = middle.selectbox("Bootstrap over", units, index=units.index(stored.resample), key=f"{key}-resample")
        family = right.selectbox(
            "Metric comparisons",
            FAMILIES,
            index=FAMILIES.index(stored.family),
            format_func=lambda kind: (
                f"each against {stored.reference.upper()} (FGA at λ {stored.fga_lambda:g})"
                if kind == "reference"
                else "all pairs"
            ),
            key=f"{key}-family",
        )
        include_judges = left.checkbox(
            "Count automatic judges with the humans",
            value=stored.include_judges,
            key=f"{key}-judges",
            help="Off: automatic judges (annotators of kind judge) stay out of agreement, majority labels and "
            "correlations, and are compared with the human majority in the judges table.",
        )
        chosen = replace(
            stored,
            include_judges=bool(include_judges),
            level=level,
            tie=tie,
            rating=rating,
            grid=(stored.grid[0], float(grid_stop), int(grid_num)),
            resamples=int(resamples),
            folds=int(folds),
            seed=int(seed),
            adjust=adjust,
            weights=weights,
            resample=resample,
            family=family,
        )
        if right.button("Store these settings with the study", key=f"{key}-store", disabled=chosen == stored):
            guard(lambda: service.set_study_settings(engine, user, study.id, chosen), "Stored: exports and the report use them.")
        _plan_section(engine, user, study, unsaved=chosen != stored)
    return chosen


def _plan_section(engine, user, study, *, unsaved: bool) -> None:
    """The frozen analysis plan (``exports.analysis_plan``): frozen here before the first vote, downloaded as
    its timestamped file; every deviation from it, and every settings change made after votes arrived."""
    plan = guard(lambda: service.study_plan(engine, user, study.id))
    if not plan or plan is True:
        return
    key = f"an-plan-{study.id}"
    if plan.frozen:
        st.text(f"Analysis plan frozen at {str(plan.frozen_at).replace('T', ' ').removesuffix('Z')} UTC by {plan.frozen_by}.")
        found = guard(lambda: service.plan_file(engine, user, study.id))
        if found and found is not True:
            name, content = found
            st.download_button(
                "Download the analysis plan (JSON)",
                content,
                file_name=name,
                mime="application/json",
                key=f"{key}-file",
                on_click="ignore",
            )
    elif plan.votes == 0:
        st.caption(
            "Freezing fixes the settings stored with the study as its analysis plan, before the first vote: "
            "the report then flags any setting changed after votes arrive."
        )
        if st.button(
            "Freeze the analysis plan",
            key=f"{key}-freeze",
            disabled=unsaved,
            help="Store the settings chosen above first." if unsaved else None,
        ):
            if guard(lambda: service.freeze_plan(engine, user, study.id), "Frozen: the plan can now be downloaded."):
                st.rerun()
    else:
        st.caption("No analysis plan was frozen before the first vote.")
    for deviation in plan.deviations:
        st.text(f"⚠ {deviation.text()}")  # values and names as text, not Markdown


# On a narrow screen (a phone, 400 px) the charts drawn for 1400 px (the forest plot 551 px wide, the
# agreement chart 491) reached past the screen's right edge, their interval labels out of reach: there a
# chart keeps to the column's width and scrolls sideways in its own box, as a table does
# (tests/browser/test_browser_analysis.py).  Wider screens keep the charts as drawn.  Our own fixed CSS.
NARROW_CSS = """<style>
@media (max-width: 640px) {
  [data-testid="stVegaLiteChart"] { max-width: 100%; overflow-x: auto; }
}
</style>"""


def render() -> None:
    user = require_admin_page()
    engine = app_engine()
    st.html(NARROW_CSS)
    st.title("Analysis")
    # The study and its counts on one row, the settings folded below: the answers start high enough
    # for the summary and the forest plot to be on the first screen at 1400x900 (issue 27).
    picker, left, middle, right = st.columns([2, 1, 1, 1], vertical_alignment="bottom")
    with picker:
        study = study_picker(key="analysis-study")
    if study is None:
        return
    progress_report = service.study_progress(engine, user, study.id)
    total = judgements_total(service.allocation_settings(engine, user, study.id), progress_report.judgements_needed)
    left.metric("Judgements", f"{progress_report.judgements_done} / {total}")  # against the budget, as on Progress
    middle.metric("Items complete", f"{progress_report.items_complete} / {progress_report.items}")
    right.metric("Vote events", progress_report.vote_events)
    settings = _settings_form(engine, user, study)
    condition = None
    if KINDS[study.kind].dialogues is not None:  # metrics are analysed one system (condition) at a time
        systems = guard(lambda: service.study_conditions(engine, user, study.id)) or []
        condition = st.selectbox("System (condition)", systems, key="analysis-condition") if len(systems) > 1 else None
    # study_analysis keeps one result per study state and settings (shared with the exports and the
    # report), so widgets that re-run this page cost nothing; the bar moves only when it computes.
    result, freshness = _shown_result(engine, user, study, settings, condition)
    if result is None:
        return
    view = StudyAnalysis.from_dict(result)  # the one typed view of the analysis this page lays out
    if not view.votes:
        st.info("No votes yet.")
        return
    summary = _answers(engine, user, study, view)
    st.caption(freshness)  # under the answers, so that they and the forest plot keep the first screen
    if view.calibration is not None:
        _lambda_section(view.calibration, summary.topic("lambda"))
    st.divider()  # below: the tables, each with its CSV download
    design = view.design
    if design.design == "adaptive":
        show_table(present.design_table(design))
    elif design.design == "designed":
        _designed_section(design)
    else:
        st.caption(present.design_table(design).notes[0].replace("uniform:", "Design: uniform —"))
    _agreement_section(view.agreement)
    unsure = present.unsure_table(view)  # how often "unsure" was answered (left out as missing above)
    if unsure is not None:
        show_table(unsure)
    for table in present.kind_tables(view):
        show_table(table)
    _majority_section(view.majority, settings.tie, study, user, view.model_labels)
    if KINDS[study.kind].dialogues is not None:
        _correlation_section(view)
    _judges_section(study, user, settings.seed, [q for q in view.majority if q != "transcription"], view.judges)


def _designed_section(design: DesignSummary) -> None:
    """A designed study (issue 29): the k-independent target, each metric's corrected correlation with
    its jackknife interval and the corrected difference FGA − JGA (``metrics.analysis.corrected_summary``)."""
    st.subheader("Design: designed (the k-independent target)")
    allocation = design.allocation
    chosen = allocation.design
    if chosen is not None:
        drawn = (
            f"{chosen.drawn} of {chosen.pool} dialogues judged (drawn with π by their λ scores, each weighted 1/π)"
            if chosen.weighting
            else f"{chosen.n} of {chosen.pool} dialogues judged"
        )
        st.text(
            f"{drawn}, {chosen.m} of them (the overlap subset) by {chosen.k_overlap} annotators, the "
            f"others by one; {chosen.judgements} judgements."
        )
    found = design.lam if allocation.question == "lambda" else None
    if found is not None and found.lambda_star is not None:
        st.markdown("**The study's question: λ***")
        st.text(
            f"λ* = {_number(found.lambda_star)}, 95% interval {_interval(found.ci)} (percentile bootstrap over "
            f"the judged dialogues, weighted 1/π: for the whole pool; refined between grid points). The λ "
            "calibration above is unweighted: it describes the judged dialogues."
        )
    corrected = design.corrected
    if corrected is None:
        st.text(design.note if design.note is not None else "No corrected estimates yet.")
        return
    st.text(f"Target: {corrected.target}.")
    rated = corrected.n_dialogues if corrected.n_dialogues is not None else 0
    overlap = corrected.n_overlap if corrected.n_overlap is not None else 0
    counts = f"{rated} dialogues rated, {overlap} with 2 or more votes"
    if corrected.note is not None:
        st.text(f"{counts}: {corrected.note}.")
        return
    icc, reliability = _number(corrected.icc), _number(corrected.reliability)
    st.text(f"{counts}; ICC(1,1) {icc}, reliability of the dialogue means {reliability}.")
    rows = [[m.metric, _number(m.estimate), _interval(m.ci)] for m in corrected.metrics]
    if corrected.difference is not None:
        d = corrected.difference
        rows.append([f"{d.a} - {d.b} (difference)", _number(d.estimate), _interval(d.ci)])
    frame = pd.DataFrame(rows, columns=["metric", "corrected r", "95% interval (jackknife over dialogues)"])
    tables.show_table(frame, "Design: corrected correlations")
    for note in corrected.notes:
        st.text(note)


def _number(value) -> str:
    return "—" if value is None else f"{value:.3f}"


def _interval(ci) -> str:
    return "—" if not ci else f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def _number_box(column, label: str, low, high, value, **options):
    """A number box whose range also holds the stored value: the command line may store more than the
    page offers (``--resamples 20000``), and the page shows it instead of failing on it."""
    return column.number_input(label, min(low, value), max(high, value), value, **options)


def _wait_seconds() -> float:
    """How long the page waits for an analysis before it shows a progress bar (and the analysis of
    fewer votes, if there is one) instead: ``DST_JUDGE_ANALYSIS_WAIT``, 0.5 s by default."""
    try:
        return max(0.0, settings().analysis_wait)
    except ValueError:
        return 0.5


def _shown_result(engine, user, study, settings: AnalysisSettings, condition: str | None) -> tuple[dict | None, str]:
    """The analysis to lay out now (``service.analysis_look``: computed in the background, issues 27 and
    38): the current one; or, while it is computed, the newest one of fewer votes (else the first answers
    of the study as it is now, without intervals), said so, under a progress bar that follows the
    computation and brings the current one in when it is done; or nothing yet.  A revisit never shows
    less than this session's last look at the same settings did (``_kept``).  A line says on how many
    votes and when the shown analysis was computed (returned beside it, for the page to place)."""
    retry = st.session_state.pop(f"analysis-retry-{study.id}", False)
    seen = guard(
        lambda: service.analysis_look(engine, user, study.id, settings, condition=condition, retry=retry, wait=_wait_seconds())
    )
    if seen is None:
        return None, ""
    seen = _kept(study.id, settings, condition, seen)
    if seen.error:
        st.error("The analysis of these settings failed:")
        st.text(seen.error)  # it may quote a question's or a file's name: text, not Markdown
        st.button("Try again", key=f"analysis-retry-button-{study.id}", on_click=_ask_retry, args=(study.id,))
    elif not seen.current:
        _follow(engine, user, study.id, settings, condition, (seen.votes, seen.first) if seen.result is not None else None)
        if seen.first:
            st.info(
                f"Shown: the first answers on {seen.votes} votes (agreement and r per metric, no intervals yet); the "
                "bootstrap intervals, the λ calibration and Dawid-Skene are being computed and replace them when done."
            )
        elif seen.result is not None:
            st.info(
                f"Shown: the analysis of {seen.votes} votes with these settings; the study as it is now is being "
                "analysed and replaces it when done."
            )
    return seen.result, _freshness(seen)


def _freshness(seen) -> str:
    """On how many votes and when the shown analysis was computed (issue 38)."""
    when = ""
    if seen.computed is not None:
        ago = max(0, int(time.time() - seen.computed))
        clock = time.strftime("%H:%M:%S UTC", time.gmtime(seen.computed))
        since = f"{ago // 60} min {ago % 60} s" if ago >= 60 else f"{ago} s"
        when = f", computed at {clock} ({since} ago)"
    state = "the study as it is now" if seen.current else "not yet the study as it is now"
    return f"Analysis of {seen.votes} votes{when}: {state}."


def _kept(study_id: int, settings: AnalysisSettings, condition: str | None, seen):
    """``seen``, or what this session showed last of the same study, settings and condition when that was
    more: a whole analysis of as many votes or more rather than first answers or nothing (issue 38: a
    revisit showed a progress bar and no answers though no vote had changed)."""
    slot = f"analysis-shown-{study_id}"
    last = st.session_state.get(slot)
    if seen.current or seen.error:
        pass
    elif last is not None and last["settings"] == settings and last["condition"] == condition:
        before = last["look"]
        more_votes = (before.votes or 0) >= (seen.votes or 0)
        if seen.result is None or (more_votes and seen.first and not before.first):
            seen = replace(seen, result=before.result, first=before.first, computed=before.computed)  # its progress stays
    if seen.result is not None:
        st.session_state[slot] = {"settings": settings, "condition": condition, "look": seen}
    return seen


def _ask_retry(study_id: int) -> None:
    st.session_state[f"analysis-retry-{study_id}"] = True


@st.fragment(run_every=0.5)
def _follow(engine, user, study_id: int, settings: AnalysisSettings, condition: str | None, shown=None) -> None:
    """The background computation's progress, every half second (the first answers show at most that
    long after they are computed), until it is done: then the page again; and the page again as soon as
    there is more to show than ``shown`` (its votes and whether they were the first answers): the first
    answers where there was nothing, a whole analysis where there were first answers or fewer votes."""
    seen = guard(lambda: service.analysis_look(engine, user, study_id, settings, condition=condition))
    if seen is None or seen.current or seen.error:
        st.rerun()
    if seen.result is not None and (shown is None or (not seen.first and (shown[1] or (seen.votes or 0) > (shown[0] or 0)))):
        st.rerun()
    st.progress(min(max(seen.fraction, 0.0), 1.0), text=f"Analysing the study as it is now: {seen.text}")


def _sized(chart):
    """The chart at the size it was drawn for (``exports.charts``: plot area, labels, subtitle), as in the
    report.  Streamlit otherwise sizes it to "fit": the whole chart squeezed into its width or height, so
    a forest plot's interval column and subtitle left its plot area a few pixels wide (all metrics on
    one x) and the agreement chart's rows fell on one line."""
    return chart.properties(autosize=alt.AutoSizeParams(type="pad"))


SIDE_TOPICS = ("lambda", "majority", "units")  # beside the λ curve; under the charts; in small print
ANSWER_ROWS = 20  # px per metric in the forest plot, per coefficient in the agreement chart: both fit the first screen


def _answers(engine, user, study, result: StudyAnalysis) -> Summary:
    """The study's answers first (issue 27), on the first screen at 1400x900: the summary in words
    (``metrics.summary``) beside its main picture, the forest plot of every metric against the ratings
    (a study without metrics: the agreement chart); below them the agreement chart and each annotator's
    agreement with the others, a bar to click for their votes.  The λ sentences go with the λ curve
    (``_lambda_section``), the intervals' levels and units under the answers.  Returns the summary."""
    summary = summarise(result)
    st.subheader("Answers")
    words, picture = st.columns([9, 11], gap="medium")
    main = Summary(tuple(s for s in summary.sentences if s.topic not in SIDE_TOPICS))
    words.container(key="answers-summary").markdown(main.markdown())  # escaped: names show as text
    agreement = _sized(agreement_chart(result.agreement, width=360))
    n_questions = len(result.agreement.questions)
    agreement = agreement.properties(height=max(60, 3 * ANSWER_ROWS * n_questions)) if n_questions > 1 else agreement
    if result.correlation is not None:
        forest = _sized(forest_chart(result.correlation, width=300, row_height=ANSWER_ROWS))
        picture.container(key="answers-forest").altair_chart(forest, width="content")
        left, right = st.columns([9, 11], gap="medium")
        right.container(key="answers-agreement").altair_chart(agreement, width="content")
    else:
        picture.container(key="answers-agreement").altair_chart(agreement, width="content")
        left = st.columns([9, 11], gap="medium")[1]
    majority = summary.topic("majority")
    if majority:
        st.markdown(Summary(tuple(majority)).markdown())
    for sentence in summary.topic("units"):
        st.caption(sentence.text)
    if result.judges is not None and result.judges.questions:
        st.text(judges_line(result.judges))  # judges' names are their makers' text: shown as text
    questions = [q for q, report in result.agreement.questions.items() if report.annotators]
    if not questions:
        return summary
    with left:
        question = (
            st.selectbox("Each annotator against the others: question", questions, key=f"answers-q-{study.id}")
            if len(questions) > 1
            else questions[0]
        )
        chart = _sized(annotator_chart(result.agreement, question))
        if annotator_rows(result.agreement, question)[0].empty:  # a note in words: nothing to click
            st.altair_chart(chart, width="content")
            return summary
        event = st.altair_chart(
            chart,
            on_select="rerun",
            selection_mode="annotator",
            key=f"answers-annotators-{study.id}-{question}",
            width="content",
        )
    chosen = [point.get("annotator") for point in (event.selection.get("annotator") or []) if point.get("annotator")]
    if chosen:
        votes = guard(lambda: service.vote_table(engine, user, study.id)) or []
        mine = [v for v in votes if v.get("annotator") == chosen[0] and v.get("question") == question]
        st.text(f"{len(mine)} vote(s) of {chosen[0]} on {question}:")
        tables.show_table(pd.DataFrame(mine), f"votes of {chosen[0]}")
    return summary


def _judges_section(study, user, seed: int, questions: list[str], voted: StudyJudges | None = None) -> None:
    """Automatic judges (an LLM, a classifier) against the human majority: those that voted in the study
    through the HTTP API (the analysis's ``judges``: ``study_data.judges_against_humans``), shown as they
    are; and labels uploaded here, compared and never stored as votes."""
    with st.expander("Automatic judges against the human majority", expanded=bool(voted)):
        if voted is not None:
            _voted_judges(voted)
            st.divider()
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


def judges_line(voted: StudyJudges | dict) -> str:
    """One line under the answers pointing to the judges table at the end of the page: each judge's κ
    against the human majority, per question."""
    parts = [
        f"{question}: "
        + ", ".join(
            f"{j.judge} κ {present.number(j.cohen_kappa)} {present.interval(j.kappa_ci)} ({j.n} items)" for j in report.judges
        )
        for question, report in StudyJudges.of(voted).questions.items()
    ]
    return "Automatic judges against the human majority (their table is at the end of the page): " + "; ".join(parts) + "."


JUDGE_COLUMNS = ("judge", "items", "accuracy", "Cohen's κ", "95% CI (bootstrap over items)")


def _voted_judges(voted: StudyJudges) -> None:
    """Per question, each judge that voted in the study: the items it shares with the human majority,
    accuracy, Cohen's κ and its interval (``metrics.judges.judge_report``); the notes as text."""
    st.caption(
        f"Judges that voted in this study ({len(voted.judges)}), each against the majority of the humans' "
        "votes (ties left out); their votes are kept apart from the humans' unless the setting "
        "'Count automatic judges with the humans' is on."
    )
    if not voted.questions:
        st.text("No question has both a judge's votes and the humans' votes yet.")
    for question, report in voted.questions.items():
        rows = [
            [j.judge, j.n, present.number(j.accuracy), present.number(j.cohen_kappa), present.interval(j.kappa_ci)]
            for j in report.judges
        ]
        st.text(f"Question {question}: {report.n_items_with_majority} items with a human majority.")
        tables.show_table(pd.DataFrame(rows, columns=list(JUDGE_COLUMNS)), f"judges {question}")
        for note in report.notes:
            st.text(note)


def show_table(table: present.Table, *, subheader: bool = True) -> None:
    """A table of ``metrics.present`` (the report and the CLI show the same), notes as plain text."""
    if subheader:
        st.subheader(table.title)
    if table.rows:
        tables.show_table(pd.DataFrame(table.rows, columns=list(table.columns)), table.title)
    for note in table.notes:
        st.text(note)


def _agreement_section(agreement: Agreement) -> None:
    agreement_table = present.agreement_table(agreement)
    st.subheader(agreement_table.title)
    tables.show_table(pd.DataFrame(agreement_table.rows, columns=list(agreement_table.columns)), agreement_table.title)
    with st.expander("Per annotator, pairwise Cohen's kappa, notes"):
        show_table(present.annotator_table(agreement), subheader=False)
        show_table(present.cohen_table(agreement), subheader=False)
        for note in agreement_table.notes:
            st.text(note)


def _majority_section(
    majority: dict[str, MajorityTable], tie: str, study=None, user=None, model_labels: dict | None = None
) -> None:
    show_table(present.majority_summary(majority, tie))
    question = st.selectbox("Items of a question", list(majority), key="analysis-majority-question")
    rows = list(majority[question].rows)
    split_only = st.checkbox("Only split items (no majority, or at most 2/3 agreeing)", key="analysis-split")
    if split_only:
        rows = [r for r in rows if _split(r)]
    items = present.majority_item_table(rows, question)
    tables.show_table(pd.DataFrame(items.rows, columns=list(items.columns)), f"majority {question}")
    if study is not None and rows:
        _drill_down(study, user, question, rows)
    if model_labels:
        with st.expander("Dawid-Skene beside the majority: where they differ, and each annotator's competence"):
            for table in present.model_label_table(model_labels):
                show_table(table)


def _split(row: MajorityRow | dict) -> bool:
    """No majority, or the largest answer has at most two thirds of the votes."""
    row = MajorityRow.of(row)
    return row.majority is None or max(row.counts.values(), default=0) <= 2 / 3 * row.n_votes


def _drill_down(study, user, question: str, rows: list[MajorityRow]) -> None:
    """Every vote and comment on one item, and the adjudicator's final label (its own event)."""
    engine = app_engine()
    with st.expander("Drill down into an item and adjudicate"):
        labels = {f"{r.item}\u241f{r.condition}": r for r in rows}
        chosen = st.selectbox("Item", list(labels), format_func=lambda k: k.replace("\u241f", "  ·  "), key="analysis-drill")
        row = labels[chosen]
        condition = row.condition
        events = guard(lambda: service.item_votes(engine, user, study.id, row.item, condition)) or []
        st.caption(
            "Every vote event, oldest first; 'current' marks each annotator's latest answer (what the analysis "
            "counts), the others were superseded by a change."
        )
        tables.show_table(_event_frame(events), f"votes on {row.item} {condition}")
        with st.form("adjudicate"):
            # No answer chosen at first: the adjudicator picks one (a pre-chosen 1 was recorded by a mere click).
            value = st.radio("Final label", ["1", "0"], index=None, horizontal=True, key="analysis-final")
            note = st.text_input("Note (optional)", key="analysis-final-note")
            if st.form_submit_button("Record the adjudicated label"):
                if value is None:
                    st.error("Choose the final label first: nothing was recorded.")
                else:
                    guard(
                        lambda: service.adjudicate(engine, user, study.id, row.item, condition, question, value, note),
                        "Recorded; the majority export gives it as the final label.",
                    )


EVENT_COLUMNS = {  # the drill-down's columns, in words; the item and its condition are the one chosen above
    "current": "current",
    "annotator": "annotator",
    "question": "question",
    "value": "answer",
    "comment": "comment",
    "created_at": "time (UTC)",
    "seconds": "seconds spent",
    "annotator_kind": "kind of annotator",
    "platform": "platform",
    "platform_id": "platform id",
}
CROWD_COLUMNS = ("annotator_kind", "platform", "platform_id")  # shown only when an event comes from the crowd


def _event_frame(events: list[dict]) -> pd.DataFrame:
    """One item's vote events, narrow enough for the page: "current" first (in view), the time to the
    second, and the crowd columns only when a crowd worker voted."""
    if not events:
        return pd.DataFrame()
    crowd = any(e.get("annotator_kind") not in (None, "", "account") or e.get("platform") for e in events)
    keys = [k for k in EVENT_COLUMNS if crowd or k not in CROWD_COLUMNS]
    frame = pd.DataFrame([{k: e.get(k) for k in keys} for e in events], columns=keys)
    frame["created_at"] = frame["created_at"].astype(str).str.slice(0, 19).str.replace("T", " ")
    # a vote without a measured time (imported, or from the API without one) says so, not a grey "None"
    frame["seconds"] = [("—" if s is None or pd.isna(s) else f"{float(s):.1f}") for s in frame["seconds"]]
    return frame.rename(columns=EVENT_COLUMNS)


def _system_section(system: SystemLevel) -> None:
    """Systems as the unit: the metrics' system-level statistic with intervals and clusters (a chart), one
    system scatter for a chosen metric, and the tables behind them in an expander."""
    st.subheader(f"System level: {system.n_systems} systems as the unit")
    left, right = st.columns([3, 2])
    with left:
        st.altair_chart(_sized(system_chart(system, width=260)), width="content")
    ranked = system.ranked()
    if ranked and system.systems:
        with right:
            choices = [m.metric for m in ranked]
            metric = st.selectbox("Systems on one metric", choices, key="analysis-system-metric")
            st.altair_chart(_sized(system_scatter_chart(system, metric, width=260, height=220)), width="content")
    with st.expander("System-level tables: every statistic, the tests between metrics, the systems' scores"):
        for table in present.system_tables(system):
            show_table(table, subheader=False)


def _correlation_section(result: StudyAnalysis) -> None:
    if result.system_level is not None:
        _system_section(result.system_level)
    if result.correlation is None:
        st.subheader("Metrics against human ratings")
        st.info(result.correlation_note if result.correlation_note is not None else "No correlation yet.")
        return
    correlation = result.correlation
    show_table(present.correlation_table(correlation, result.condition))
    plan = present.planning_line(correlation)
    if plan:
        st.caption(plan)
    differences = present.williams_table(correlation)
    family = correlation.comparisons
    adjusted = {"holm": "Holm", "bonferroni": "Bonferroni", "bh": "BH"}.get(family.adjust if family else None)
    title = f"{differences.title}: r_A − r_B, jackknife-t interval and test" + (f", {adjusted}" if adjusted else "")
    with st.expander(title):
        show_table(differences, subheader=False)
    corrected = present.corrected_table(result)
    if corrected is not None:
        show_table(corrected)
    metric = st.selectbox("Plot a metric against the rating", [r.metric for r in correlation.metrics], key="analysis-metric")
    st.altair_chart(metric_rating_chart(correlation, metric))
    if result.calibration is not None:
        show_table(present.calibration_table(result.calibration))


def _lambda_section(calibration: Calibration, sentences: list) -> None:
    """λ right after the answers (issue 27, item 4): the summary's λ sentences, λ*, r there and the
    cross-validated r, each with its interval, beside the r(λ) curve; its table comes with the others below."""
    st.subheader("Which λ makes FGA agree most with people")
    if sentences:
        st.markdown(Summary(tuple(sentences)).markdown())
    numbers, chart = st.columns([1, 3])
    number, interval = present.number, present.interval
    numbers.metric("best λ", number(calibration.best_lambda), help=f"95% CI {interval(calibration.ci_lambda)}")
    numbers.caption(f"95% CI {interval(calibration.ci_lambda)}")
    said = present.lambda_set_caption(calibration)
    if said:
        numbers.caption(said)
    numbers.metric("r at best λ", number(calibration.r_best), help=f"95% CI {interval(calibration.ci_r)}")
    numbers.caption(f"95% CI {interval(calibration.ci_r)}")
    numbers.metric("cross-validated r", number(calibration.cv_r), help=f"{len(calibration.cv_folds)} folds")
    chart.altair_chart(_sized(r_lambda_chart(calibration)), width="content")
