"""The Progress page: the study's progress per annotator, votes imported, annotator competence, the
design's status and the downloads."""

from __future__ import annotations

from dataclasses import asdict

import streamlit as st

from annotate import service
from annotate.analysis.reports import allocation_line
from annotate.pages.admin import study_picker, votes_download_button
from annotate.pages.context import (
    app_engine,
    guard,
    require_admin_page,
)
from annotate.pages.tables import show_table
from annotate.studies.allocation import judgements_total
from metrics.present import interval


def progress_page() -> None:
    user = require_admin_page()
    engine = app_engine()
    st.title("Progress")
    study = study_picker()
    if study is None:
        return
    report = service.study_progress(engine, user, study.id)
    design = service.allocation_settings(engine, user, study.id)
    total = judgements_total(design, report.judgements_needed)  # the budget when it is smaller (it closes the study)
    left, middle, right = st.columns(3)
    left.metric(
        "Judgements",
        f"{report.judgements_done} / {total}",
        help=f"the study's budget; {report.judgements_needed} places in all" if total < report.judgements_needed else None,
    )
    middle.metric(
        "Items complete",
        f"{report.items_complete} / {report.items}",
        help=f"{report.items_left_out} items left out by the adaptive design's draw" if report.items_left_out else None,
    )
    right.metric("Vote events", report.vote_events)
    st.progress(min(1.0, report.judgements_done / total) if total else 1.0)
    _design_status(engine, user, study, design)
    st.subheader("Per annotator")
    st.caption(
        "People with at least one vote in this study: judgements done, items they hold open now, median "
        "seconds per item; 'fast' flags a median under 2 s or under a quarter of the study's median."
    )
    if report.annotators:
        timing, attention = report.time_per_item, report.attention

        def row(name, counts) -> dict:
            checks = asdict(attention[name]) if name in attention else {}
            return {
                "annotator": name,
                **asdict(counts),
                **(asdict(timing[name]) if name in timing else {}),
                **{f"gold {k}": v for k, v in checks.items()},
            }

        show_table([row(n, c) for n, c in report.annotators.items()], "progress per annotator")
        _competence_section(engine, user, study)
    else:
        st.text("Nobody has voted yet.")
    if report.workers:
        flagged = sum(w.flagged for w in report.workers)
        st.subheader(f"Crowd workers ({len(report.workers)}, {flagged} flagged)")
        st.caption(
            "'flagged': at least one attention check (a gold item) answered wrongly; 'finished': shown the "
            "completion code.  Their votes are exported with annotator_kind 'crowd' and the platform's id."
        )
        show_table([asdict(w) for w in report.workers], "progress crowd workers")
    if report.held:
        st.caption(
            "Places held now (an item open on someone's screen; released on a vote, skip, logout, study switch "
            "or after the study's timeout)."
        )
        show_table([{"annotator": n, "places held": c} for n, c in report.held.items()], "progress places held")
    st.subheader("Per item")
    show_table([asdict(i) for i in report.per_item], "progress per item")
    st.subheader("Download the votes")
    left, right = st.columns(2)
    votes_download_button(engine, user, study, "Current votes (CSV)", history=False, key="votes", container=left)
    votes_download_button(engine, user, study, "Every vote event (CSV)", history=True, key="events", container=right)
    _import_votes_section(engine, user, study)
    export_section(study, user)


def _import_votes_section(engine, user, study) -> None:
    """Votes from a CSV file (judged elsewhere, on paper, by another tool): the command line's
    ``votes import``, through the same service function: the same checks and messages, all or nothing."""
    st.subheader("Import votes")
    st.caption(
        "A CSV file with the columns item, annotator, question, value (and optionally condition, comment, seconds), "
        "one vote a row, as the votes download writes them. Every row is checked first; one bad row and nothing "
        "is imported. Annotators not known yet are added, without a login."
    )
    generation = st.session_state.get("import-votes-generation", 0)  # a new, empty uploader after an import
    with st.form(f"import-votes-{study.id}-{generation}"):
        upload = st.file_uploader("Votes file (.csv)", type=["csv"], key=f"import-votes-file-{study.id}-{generation}")
        submitted = st.form_submit_button("Import the votes")
    done = st.session_state.pop("import-votes-done", None)
    if done is not None and done[0] == study.id:
        st.success(f"Imported {int(done[1])} votes into this study.")
        st.text(f"From {done[2]}")  # the file's name: the admin's text, shown as text
    if not submitted:
        return
    if upload is None:
        st.warning("Choose a votes file first.")
        return
    count = guard(lambda: service.import_votes_upload(engine, user, study.id, upload.name, upload.getvalue()))
    if count is not None:
        st.session_state["import-votes-done"] = (study.id, int(count) if count is not True else 0, upload.name)
        st.session_state["import-votes-generation"] = generation + 1
        st.rerun()


def _competence_section(engine, user, study) -> None:
    """Dawid-Skene's estimate of each annotator (``metrics.crowd``, over every vote): competence, the
    spammer score and its flag (near chance), and the button that leaves an annotator out of the
    study's analysis, or takes them back in (recorded; the analysis and the report say so)."""
    from metrics.crowd import MIN_ANNOTATOR_ITEMS, SPAMMER_SCORE

    quality = guard(lambda: service.annotator_quality(engine, user, study.id))
    if not quality:
        return
    st.subheader("Annotator competence (Dawid-Skene)")
    st.caption(
        "Dawid & Skene (1979), fitted by the project's own EM (checked against crowd-kit in the tests), "
        "on every vote: competence is the probability of answering "
        "correctly (on the question where it is lowest), with its 95% percentile bootstrap interval over items; "
        "the spammer score (Raykar & Yu 2012) is 0 when the "
        f"answers do not depend on the item, 1 for a perfect annotator. 'near chance': a score ≤ {SPAMMER_SCORE:g} "
        f"over at least {MIN_ANNOTATOR_ITEMS} items. Excluded annotators' votes stay in the store and the votes "
        "downloads; the analysis, its exports and the report leave them out and say so."
    )
    flagged = [q.annotator for q in quality if q.near_chance and not q.excluded]
    if flagged:
        st.warning(f"Near chance (spammer score ≤ {SPAMMER_SCORE:g}): the annotators below.", icon="⚠️")
        st.text(", ".join(flagged))  # names are people's text: shown as text
    show_table(
        [
            {
                "annotator": q.annotator,
                "question": q.question or "—",
                "items": q.items,
                "competence": None if q.competence is None else round(q.competence, 3),
                "95% CI (items)": interval(q.competence_ci) if q.competence_ci else "—",
                "spammer score": None if q.spammer_score is None else round(q.spammer_score, 3),
                "near chance": {True: "yes", False: "no", None: "too few items"}[q.near_chance],
                "excluded": "yes" if q.excluded else "no",
            }
            for q in quality
        ],
        "progress annotator competence",
    )
    names = [q.annotator for q in quality]  # lowest competence first: the flagged ones on top
    left, middle, right = st.columns([2, 3, 2], vertical_alignment="bottom")
    chosen = left.selectbox("Annotator", names, key=f"exclude-who-{study.id}")
    excluded = next(q.excluded for q in quality if q.annotator == chosen)
    reason = middle.text_input(
        "Why", value="" if excluded else ("spammer" if chosen in flagged else ""), key=f"exclude-why-{study.id}-{chosen}"
    )
    if excluded:
        if right.button("Include in the analysis again", key=f"include-{study.id}"):
            if guard(lambda: service.include_annotator(engine, user, study.id, chosen, reason)):
                st.rerun()
    elif right.button("Exclude from the analysis", key=f"exclude-{study.id}"):
        if guard(lambda: service.exclude_annotator(engine, user, study.id, chosen, reason)):
            st.rerun()


def _design_status(engine, user, study, design: dict) -> None:
    """The design's line on Progress: budget spent, the main question's interval now (the Analysis
    page's own numbers: the same cached analysis), the judgements projected to reach the target width;
    the study closes here when the target is reached."""
    if design["policy"] == "uniform" and not design["budget"] and not design["target_width"]:
        st.caption("Design: uniform (every item gets k votes); no budget or target width set (Studies, Design and budget).")
        return
    bar = st.progress(0.0, text="analysing")  # moves only when the analysis is computed (not cached)
    status = guard(
        lambda: service.allocation_status(
            engine, user, study.id, progress=lambda fraction, text: bar.progress(fraction, text=text)
        )
    )
    bar.empty()
    if not status:
        return
    st.text(allocation_line(status))  # numbers only: shown as text
    if status.closed_now:
        st.success("The target interval width is reached: the study is closed (archived) and takes no more judgements.")


def export_section(study, user) -> None:
    """Any export format (the same writers as ``python -m exports``), built when asked for."""
    from exports.formats import FORMATS

    st.subheader("Export")
    formats = [f for f in FORMATS.values() if study.kind in f.kinds]  # the generic ones and the kind's own
    left, middle = st.columns([2, 1])
    chosen = left.selectbox("Format", formats, format_func=lambda f: f"{f.name} — {f.description}", key="export-format")
    history = middle.checkbox("Every vote event", key="export-history", disabled=not chosen.name.startswith("votes-"))
    if st.button("Prepare the export", key="export-prepare"):
        with st.spinner("Writing the export"):
            prepared = guard(lambda: service.export(app_engine(), user, study.id, chosen.name, history=history))
        if prepared:
            st.session_state["export-ready"] = (study.id, chosen.name, *prepared)
    ready = st.session_state.get("export-ready")
    if ready and ready[0] == study.id and ready[1] == chosen.name:
        _, name, content, file_name = ready
        st.download_button(f"Download {file_name}", content, file_name=f"{study.id}-{file_name}", key="export-download")
