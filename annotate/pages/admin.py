"""Admin pages: studies, annotators, progress and downloads.  Each starts with a server-side
admin check; every action goes through annotate.service, which checks again."""

from __future__ import annotations

import streamlit as st

from annotate import service
from annotate.kinds import KINDS
from annotate.models import DEFAULT_TIMEOUT_MINUTES
from annotate.pages.context import app_engine, guard, require_admin_page, scroll_to_top


def _study_picker(label: str = "Study", key: str = "admin-study"):
    """A study chooser that remembers the last study chosen on any admin page (widget state is
    dropped when the page is left, so the choice is kept under a key of its own)."""
    studies = service.list_studies(app_engine())
    if not studies:
        st.info("No study yet: create one on the Studies page.")
        return None
    remembered = st.session_state.get("admin-chosen-study")
    index = next((i for i, s in enumerate(studies) if s.id == remembered), 0)
    chosen = st.selectbox(label, studies, index=index, format_func=lambda s: f"{s.name} ({s.kind}, {s.items} items)", key=key)
    st.session_state["admin-chosen-study"] = chosen.id
    return chosen


def studies_page() -> None:
    user = require_admin_page()
    engine = app_engine()
    st.title("Studies")
    created_note = st.session_state.pop("study-created", None)
    if created_note:
        st.success("Study created.")
        st.text(created_note)  # the name is the admin's text: shown as text
        scroll_to_top(f"created {st.session_state.get('create-generation', 0)}")  # the message and the table are up here
    summaries = service.list_studies(engine)
    if summaries:
        st.dataframe(
            [{"name": s.name, "kind": s.kind, "items": s.items, "overlap": s.overlap, "archived": s.archived} for s in summaries],
            hide_index=True,
        )
    st.subheader("Create a study")
    st.caption(" ".join(f"{name}: {kind.inputs}." for name, kind in KINDS.items()) + " An import is all or nothing.")
    # A new form (and so an empty uploader) after every successful create: the generation is in the keys.
    generation = st.session_state.get("create-generation", 0)
    with st.form(f"create-study-{generation}", clear_on_submit=False):
        name = st.text_input("Name")
        kind = st.selectbox("Kind", list(KINDS), format_func=lambda k: f"{k} ({KINDS[k].label})")
        files = st.file_uploader(
            "Data files (.json, .txt, or .zip of folders)", accept_multiple_files=True, key=f"create-files-{generation}"
        )
        left, middle, right = st.columns(3)
        overlap = left.number_input("Annotators per item (k)", min_value=1, max_value=50, value=3)
        condition = middle.text_input(
            "System or CoCo variant name (optional)",
            help="Satisfaction: the system whose predictions these are (default: the folder of FGA text files in a zip, "
            "'uploaded' for loose files, else the file name). CoCo: the variant (default coco).",
        )
        timeout = right.number_input("Reclaim abandoned items after (minutes)", min_value=1, value=DEFAULT_TIMEOUT_MINUTES)
        sample = left.number_input("Sample N units (0 = all)", min_value=0, value=0)
        seed = middle.number_input("Seed", min_value=0, value=0)
        guideline_file = right.file_uploader("Guideline (.txt, optional)", type=["txt", "md"])
        submitted = st.form_submit_button("Create study", type="primary")
    if submitted:
        guideline = guideline_file.getvalue().decode("utf-8", errors="replace") if guideline_file else ""
        uploads = [(f.name, f.getvalue()) for f in files or []]
        created = guard(
            lambda: service.create_study_from_uploads(
                engine, user, name, kind, uploads, overlap=int(overlap), condition=condition or None, guideline=guideline,
                sample=int(sample) or None, seed=int(seed), timeout_minutes=int(timeout),
            )
        )  # fmt: skip
        if created:  # run the page again: the table lists the new study, the form starts empty
            st.session_state["study-created"] = f"{created.name}: {created.items} items"
            st.session_state["create-generation"] = generation + 1
            st.rerun()
    st.subheader("Change a study")
    study = _study_picker(key="change-study")
    if study is not None:
        left, right = st.columns(2)
        with left.form("overlap"):
            new_overlap = st.number_input("Annotators per item (k)", min_value=1, max_value=50, value=study.overlap)
            if st.form_submit_button("Set overlap"):
                guard(lambda: service.set_overlap(engine, user, study.id, int(new_overlap)), "Overlap changed.")
        with right.form("reopen"):
            key = st.text_input("Item key to re-open for one more judgement")
            condition_value = st.text_input("Its condition (empty if none)")
            if st.form_submit_button("Re-open item"):
                guard(lambda: service.reopen(engine, user, study.id, key, condition_value), "Item re-opened.")
        _membership_and_guideline(engine, user, study)


def _membership_and_guideline(engine, user, study) -> None:
    """Who may annotate the study, its archive state and guideline; every change is recorded."""
    left, right = st.columns(2)
    with left.form(f"members-{study.id}"):
        people = [a["name"] for a in service.list_annotators(engine, user) if a["role"] == "annotator"]
        current = service.study_members(engine, user, study.id)
        chosen = st.multiselect("Members (none: open to every annotator)", people, default=[p for p in current if p in people])
        if st.form_submit_button("Set members"):
            guard(lambda: service.set_members(engine, user, study.id, chosen), "Members set.")
    with right.form(f"guideline-{study.id}"):
        text = st.text_area("Guideline", value=study.guideline, height=120)
        if st.form_submit_button("Save the guideline"):
            guard(lambda: service.set_guideline(engine, user, study.id, text), "Guideline saved.")
    with st.form(f"gold-{study.id}", clear_on_submit=True):
        gold = st.file_uploader("Attention checks (CSV: item, question, value[, condition])", type=["csv"])
        if st.form_submit_button("Upload gold answers") and gold is not None:
            count = guard(lambda: service.set_gold(engine, user, study.id, gold.name, gold.getvalue()))
            if count:
                st.success(f"{int(count)} gold answers stored.")
    label = "Unarchive the study" if study.archived else "Archive the study (hidden from annotators)"
    if st.button(label, key=f"archive-{study.id}"):
        if guard(lambda: service.set_archived(engine, user, study.id, not study.archived)):
            st.rerun()
    log = service.study_changes(engine, user, study.id)
    if log:
        st.caption("Changes to this study")
        st.dataframe(log, hide_index=True)


def annotators_page() -> None:
    user = require_admin_page()
    engine = app_engine()
    st.title("Annotators")
    st.dataframe(service.list_annotators(engine, user), hide_index=True)
    left, right = st.columns(2)
    with left.form("add-annotator", clear_on_submit=True):
        st.subheader("Add")
        name = st.text_input("Name")
        password = st.text_input("Password (8+ characters)", type="password")
        admin = st.checkbox("Admin")
        if st.form_submit_button("Add annotator"):
            guard(lambda: service.add_person(engine, user, name, password, "admin" if admin else "annotator"), "Added.")
    with right.form("reset-password", clear_on_submit=True):
        st.subheader("Reset a password")
        name = st.text_input("Name", key="reset-name")
        password = st.text_input("New password", type="password", key="reset-password")
        if st.form_submit_button("Reset password"):
            guard(lambda: service.reset_password(engine, user, name, password), "Password reset; their sessions ended.")


def progress_page() -> None:
    user = require_admin_page()
    engine = app_engine()
    st.title("Progress")
    study = _study_picker()
    if study is None:
        return
    report = service.study_progress(engine, user, study.id)
    left, middle, right = st.columns(3)
    left.metric("Judgements", f"{report['judgements_done']} / {report['judgements_needed']}")
    middle.metric("Items complete", f"{report['items_complete']} / {report['items']}")
    right.metric("Vote events", report["vote_events"])
    st.progress(report["fraction_done"])
    st.subheader("Per annotator")
    st.caption("People with at least one vote in this study: judgements done, items they hold open now, median "
               "seconds per item; 'fast' flags a median under 2 s or under a quarter of the study's median.")  # fmt: skip
    if report["annotators"]:
        timing = report["time_per_item"]
        st.dataframe([{"annotator": n, **c, **timing.get(n, {})} for n, c in report["annotators"].items()], hide_index=True)
    else:
        st.text("Nobody has voted yet.")
    if report["held"]:
        st.caption("Places held now (an item open on someone's screen; released on a vote, skip, logout, study switch "
                   "or after the study's timeout).")  # fmt: skip
        st.dataframe([{"annotator": n, "places held": c} for n, c in report["held"].items()], hide_index=True)
    st.subheader("Per item")
    st.dataframe(report["per_item"], hide_index=True)
    st.subheader("Download the votes")
    left, right = st.columns(2)
    left.download_button(
        "Current votes (CSV)", service.votes_csv(engine, user, study.id), file_name=f"votes-{study.id}.csv", mime="text/csv"
    )
    right.download_button(
        "Every vote event (CSV)", service.votes_csv(engine, user, study.id, history=True),
        file_name=f"vote-events-{study.id}.csv", mime="text/csv",
    )  # fmt: skip
    export_section(study, user)


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
