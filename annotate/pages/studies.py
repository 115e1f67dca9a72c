"""The Studies page: create a study from files, and change one (members and guideline, the design and
its designer, crowd workers, archive or delete)."""

from __future__ import annotations

from dataclasses import asdict

import streamlit as st

from annotate import service
from annotate.kinds import KINDS
from annotate.pages.admin import study_picker, votes_download_button
from annotate.pages.context import (
    app_engine,
    guard,
    public_base_url,
    require_admin_page,
    scroll_to_top,
    show_refusal,
)
from annotate.pages.tables import show_table
from annotate.store.models import DEFAULT_TIMEOUT_MINUTES
from annotate.studies.allocation import QUESTIONS


def studies_page() -> None:
    user = require_admin_page()
    engine = app_engine()
    st.title("Studies")
    created_note = st.session_state.pop("study-created", None)
    if created_note:
        headline, detail = created_note if isinstance(created_note, tuple) else ("Study created.", created_note)
        st.success(headline)
        st.text(detail)  # the name is the admin's text: shown as text
        scroll_to_top(f"created {st.session_state.get('create-generation', 0)}")  # the message and the table are up here
    table = st.container()  # filled last, so it shows what this run's action changed (overlap, archived)
    # Keyed tabs track the chosen tab (a rerun after an action keeps it; unkeyed tabs went back to the first).
    create_tab, change_tab = st.tabs(["Create a study", "Change a study"], key="studies-tab", on_change="rerun")
    with create_tab:
        _create_form(engine, user)
    with change_tab:
        study = study_picker(key="change-study")
        if study is not None:
            _change_study(engine, user, study)
    summaries = service.list_studies(engine)
    if summaries:
        with table:
            show_table(
                [
                    {"name": s.name, "kind": s.kind, "items": s.items, "overlap": s.overlap, "archived": s.archived}
                    for s in summaries
                ],
                "studies",
            )


def _create_form(engine, user) -> None:
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
            "System name (satisfaction) or CoCo variant",
            placeholder="default: the folder or file name",
            help="Satisfaction: the system whose predictions these are, the condition the analysis compares. Left empty: "
            "the folder of FGA text files in a zip, a loose file's name up to its first dot; several loose FGA text "
            "files need it. CoCo: the variant (default coco).",
        )
        timeout = right.number_input("Reclaim abandoned items after (minutes)", min_value=1, value=DEFAULT_TIMEOUT_MINUTES)
        sample = left.number_input("Sample N units (0 = all)", min_value=0, value=0)
        seed = middle.number_input("Seed", min_value=0, value=0)
        guideline_file = right.file_uploader("Guideline (.txt, optional)", type=["txt", "md"])
        unsure = st.checkbox(
            "Offer 'unsure' on yes/no and choice questions",
            value=False,
            help="Annotators get an Unsure button, with its key, beside each such question's other answers (the "
            "Keys overview lists it). The analysis leaves unsure answers out as missing data and reports how often "
            "each question, item and annotator gave them. Off: the questions as the papers' studies asked them.",
        )
        submitted = st.form_submit_button("Create study", type="primary")
    if submitted:
        guideline = guideline_file.getvalue().decode("utf-8", errors="replace") if guideline_file else ""
        uploads = [(f.name, f.getvalue()) for f in files or []]
        created = guard(
            lambda: service.create_study_from_uploads(
                engine,
                user,
                name,
                kind,
                uploads,
                overlap=int(overlap),
                condition=condition or None,
                guideline=guideline,
                sample=int(sample) or None,
                seed=int(seed),
                timeout_minutes=int(timeout),
                unsure=bool(unsure),
            )
        )
        if created:  # run the page again: the table lists the new study, the form starts empty
            st.session_state["study-created"] = f"{created.name}: {created.items} items"
            st.session_state["create-generation"] = generation + 1
            st.rerun()


def _change_study(engine, user, study) -> None:
    """The chosen study's settings, one tab each; every change is recorded (the change log tab)."""
    people, numbers, design_tab, crowd_tab, delete_tab, log_tab = st.tabs(
        [
            "Annotators and guideline",
            "Overlap, re-open, gold",
            "Design and budget",
            "Crowd workers",
            "Archive or delete",
            "Change log",
        ],
        key="change-study-tab",
        on_change="rerun",
    )
    with people:
        _membership_and_guideline(engine, user, study)
    with numbers:
        left, right = st.columns(2)
        with left.form("overlap"):
            new_overlap = st.number_input("Annotators per item (k)", min_value=1, max_value=50, value=study.overlap)
            if st.form_submit_button("Set overlap"):
                guard(
                    lambda: service.set_overlap(engine, user, study.id, int(new_overlap)),
                    f"Overlap changed: k = {int(new_overlap)} from now on.",
                )  # the table above shows it too
        with right.form("reopen"):
            key = st.text_input("Item key to re-open for one more judgement")
            condition_value = st.text_input("Its condition (empty if none)")
            if st.form_submit_button("Re-open item"):
                guard(lambda: service.reopen(engine, user, study.id, key.strip(), condition_value.strip()), "Item re-opened.")
        with st.form(f"gold-{study.id}", clear_on_submit=True):
            gold = st.file_uploader("Attention checks (CSV: item, question, value[, condition])", type=["csv"])
            if st.form_submit_button("Upload gold answers") and gold is not None:
                count = guard(lambda: service.set_gold(engine, user, study.id, gold.name, gold.getvalue()))
                if count:
                    st.success(f"{int(count)} gold answers stored.")
    with design_tab:
        _design_settings(engine, user, study)
    with crowd_tab:
        _crowd_settings(engine, user, study)
    with delete_tab:
        _archive_or_delete(engine, user, study)
    with log_tab:
        log = service.study_changes(engine, user, study.id)
        if log:
            show_table([asdict(c) for c in log], f"study-{study.id}-changes")
        else:
            st.text("No change since the study was created.")


def _membership_and_guideline(engine, user, study) -> None:
    """Who may annotate the study, and its guideline."""
    left, right = st.columns(2)
    with left.form(f"members-{study.id}"):
        people = [a.name for a in service.list_annotators(engine, user) if a.role == "annotator"]
        current = service.study_members(engine, user, study.id)
        chosen = st.multiselect("Members (none: open to every annotator)", people, default=[p for p in current if p in people])
        if st.form_submit_button("Set members"):
            guard(lambda: service.set_members(engine, user, study.id, chosen), "Members set.")
    with right.form(f"guideline-{study.id}"):
        text = st.text_area("Guideline", value=study.guideline, height=120)
        if st.form_submit_button("Save the guideline"):
            guard(lambda: service.set_guideline(engine, user, study.id, text), "Guideline saved.")


def _design_settings(engine, user, study) -> None:
    """How the study spends its judgements (annotate.studies.allocation): chosen before the first vote."""
    current = service.allocation_settings(engine, user, study.id)
    st.caption("Chosen before the first vote. A budget closes the study once spent; a target width when reached.")
    explained = (
        "Uniform: every item gets k votes. Adaptive (satisfaction studies): dialogues are drawn with known "
        "probabilities, more where the metrics disagree (or where FGA moves with λ), and the analysis weights "
        "each judged dialogue by 1/π, so its estimates hold for every dialogue."
    )
    note = st.empty()  # the outcome shows above the form, where the eye is
    with st.form(f"design-{study.id}"):
        left, middle, right = st.columns(3)
        policy = left.radio(
            "Design",
            ["uniform", "adaptive"],
            index=["uniform", "adaptive"].index(current["policy"]) if current["policy"] in ("uniform", "adaptive") else 0,
            horizontal=True,
            help=explained,
        )
        questions = list(QUESTIONS)
        question = middle.selectbox(
            "Main question", questions, index=questions.index(current["question"]), format_func=QUESTIONS.get
        )
        lam = right.number_input("FGA λ compared with JGA", min_value=0.0, value=float(current["lambda"]), step=0.05)
        budget = left.number_input("Budget (judgements; 0: none)", min_value=0, value=int(current["budget"] or 0))
        target = middle.number_input(
            "Target 95% interval width (0: none)",
            min_value=0.0,
            value=float(current["target_width"] or 0.0),
            step=0.01,
            format="%.3f",
        )
        max_k = right.number_input("Max votes on a split dialogue (0: k)", min_value=0, value=int(current["max_k"] or 0))
        if st.form_submit_button("Set the design"):
            drawn = guard(
                lambda: service.set_allocation(
                    engine,
                    user,
                    study.id,
                    policy=policy,
                    question=question,
                    budget=int(budget) or None,
                    target_width=float(target) or None,
                    max_k=int(max_k) or None,
                    lam=float(lam),
                )
            )
            if drawn:
                note.success(f"Design set: {drawn.policy}, {drawn.included} of {drawn.items} items will be judged.")
    if current["policy"] == "designed":
        fixed = current.get("design") or {}
        drawn = (
            f"{fixed.get('drawn')} dialogues drawn by their λ scores, weighted 1/π"
            if fixed.get("weighting")
            else f"{fixed.get('n')} dialogues"
        )
        st.caption(
            f"Now: the designer's design ({drawn}, {fixed.get('m')} of them with "
            f"{fixed.get('k_overlap')} votes, the others 1; {fixed.get('judgements')} judgements)."
        )
    _designer(engine, user, study)


def _designer(engine, user, study) -> None:
    """The designer (issue 29, ``metrics.design``): dialogues and votes per dialogue chosen together for
    the narrowest predicted interval of the study's question — r(FGA) - r(JGA) (corrected for the
    ratings' reliability) or λ* — beside uniform k = 3 and the FGA study's 11 x 100; the admin can fix
    the proposal before the first vote."""
    st.markdown("**Designer**: k and the dialogues chosen together (satisfaction studies)")
    first, left, middle, right, prior = st.columns(5)
    questions = {
        "comparison": "r(FGA) - r(JGA), corrected",
        "lambda": "λ*, the FGA λ people agree with most",
        "agreement": "agreement (ICC of one rating)",
    }
    question = first.selectbox(
        "Question to answer", list(questions), format_func=questions.get, key=f"designer-question-{study.id}"
    )
    icc = left.number_input(
        "ICC of one rating",
        0.01,
        0.99,
        0.3,
        0.05,
        key=f"designer-icc-{study.id}",
        help="The single-rating ICC(1,1) of a pilot, or a prior: how much of a vote's variance is the dialogue's.",
    )
    budget = middle.number_input("Budget (judgements)", 1, value=1200, key=f"designer-budget-{study.id}")
    lam = right.number_input("FGA λ (λ*: the prior best)", 0.0, value=0.5, step=0.05, key=f"designer-lambda-{study.id}")
    r_a = prior.number_input(
        "Prior r(FGA, rating)",
        0.01,
        0.99,
        0.4,
        0.05,
        key=f"designer-r-{study.id}",
        help="A pilot's or a published correlation of FGA at this λ with the dialogues' expected rating; "
        "r(JGA) is taken 0.1 lower for the comparison.",
    )
    kept = f"designer-proposal-{study.id}"
    if st.button("Propose a design", key=f"designer-go-{study.id}"):
        try:
            st.session_state[kept] = service.design_proposal(
                engine,
                user,
                study.id,
                icc=float(icc),
                budget=int(budget),
                lam=float(lam),
                question=question,
                r_a=float(r_a),
                r_b=round(max(0.0, float(r_a) - 0.1), 4),
            )
        except ValueError as err:
            st.session_state.pop(kept, None)
            st.warning(f"No design proposed: {err}")
    found = st.session_state.get(kept)
    if found is None:
        return
    rows = [
        {
            "design": label,
            "dialogues": f"{d.n} expected, π by λ score" if d.weighting else str(d.n),
            "overlap": f"{d.m} x k={d.k_overlap}" if d.m else "-",
            "judgements": d.judgements,
            "predicted 95% width": round(d.width, 3),
        }
        for label, d in (
            ("designer", found.proposal),
            ("uniform k = 3", found.uniform_k3),
            ("FGA study 11 x 100", found.fga_11x100),
        )
        if d is not None
    ]
    show_table(rows, "designer")
    saving = found.saving_vs_uniform()
    if saving is not None:
        st.text(f"Uniform k = 3 needs {found.uniform_needed} judgements for the same width: a saving of {saving:.2f}.")
    for note in found.notes:
        st.caption(note)
    if st.button("Fix this design (before the first vote)", key=f"designer-fix-{study.id}"):
        drawn = guard(lambda: service.set_designed_k(engine, user, study.id, found.proposal.as_dict()))
        if drawn:
            st.success(f"Design set: designed, {drawn.included} of {drawn.items} items will be judged.")


def _crowd_settings(engine, user, study) -> None:
    """Open the study to crowd workers: quota, places, completion code, redirect URL, the join links,
    and how fast workers join."""
    current = service.crowd_settings(engine, user, study.id)
    joins = service.crowd_joins(engine, user, study.id)
    with st.form(f"crowd-{study.id}"):
        enabled = st.checkbox("Open to crowd workers by a join link", value=current["enabled"])
        left, middle, right = st.columns(3)
        quota = left.number_input("Items per worker (0: no limit)", min_value=0, value=int(current["quota"] or 0))
        places = middle.number_input(
            "Places for workers (0: the study's need)",
            min_value=0,
            value=int(current["places"] or 0),
            help="The most workers the link makes; those who joined can always come back. The study's need is "
            "its judgements divided by the items per worker (rounded up), or its judgements without a limit.",
        )
        code = right.text_input("Completion code (shown at the end)", value=current["completion_code"])
        redirect = st.text_input(
            "Redirect URL at the end (optional)",
            value=current["redirect_url"],
            help="Prolific: https://app.prolific.com/submissions/complete?cc=YOURCODE",
        )
        new_secret = st.checkbox("Make a new secret (links given out so far stop working for new workers)")
        if st.form_submit_button("Save crowd settings"):
            saved = guard(
                lambda: service.set_crowd(
                    engine,
                    user,
                    study.id,
                    enabled=enabled,
                    quota=int(quota) or None,
                    completion_code=code,
                    redirect_url=redirect,
                    new_secret=new_secret,
                    places=int(places) or None,
                ),
                "Crowd settings saved.",
            )
            if isinstance(saved, dict):
                current, joins = saved, service.crowd_joins(engine, user, study.id)
    if current["enabled"]:
        base = public_base_url()
        st.caption("Join link for Prolific (the study URL; Prolific fills in the ids). Anyone with it can join.")
        st.code(service.crowd_link(engine, user, study.id, base, "prolific"), language=None)
        st.caption("Join link for another platform: put the worker's id in place of WORKER_ID.")
        st.code(service.crowd_link(engine, user, study.id, base, "generic"), language=None)
    else:
        st.text("The study is not open to crowd workers.")
    _crowd_joins(joins)


def _crowd_joins(joins) -> None:
    """Places taken and joins per minute (``crowd.JoinStats``; a link shared where it should not be shows here first)."""
    taken, last, rate = st.columns(3)
    taken.metric(
        "Workers joined",
        f"{joins.joined} of {joins.places}",
        help="places: the study's need" if joins.places_default else "places: set above",
    )
    last.metric("Joins in the last minute", joins.last_minute)
    rate.metric(
        "Joins per minute (last 10 minutes)",
        f"{joins.per_minute:.1f}",
        help=f"{joins.last_10_minutes} in the last 10 minutes, {joins.last_hour} in the last hour",
    )
    st.caption("Joins per minute, the last 10 minutes (oldest first): " + " ".join(str(n) for n in joins.per_minute_series))


def _set_archived(study_id: int, archived: bool) -> None:
    """The Archive / Unarchive buttons' callback: it runs before the page does, so the page, its table
    and the button shown all say the state after the action.  Each button sets its own state (never a
    toggle): a click on a stale "Archive" leaves an archived study archived."""
    from annotate.pages.context import current_user

    user = current_user()
    if user is None:  # logged out meanwhile: the page asks for a login
        return
    try:
        done = service.set_archived(app_engine(), user, study_id, archived)
    except (ValueError, service.PermissionDenied) as err:
        st.session_state["archive-outcome"] = (study_id, "error", str(err))
        return
    what = "Archived: hidden from annotators" if archived else "Unarchived: open to annotators again"
    st.session_state["archive-outcome"] = (study_id, "success", what + ("." if done["changed"] else " (it was already)."))


def _archive_or_delete(engine, user, study) -> None:
    outcome = st.session_state.pop("archive-outcome", None)
    if outcome and outcome[0] == study.id:
        st.success(outcome[2]) if outcome[1] == "success" else show_refusal("Refused; nothing was changed.", outcome[2])
    if study.archived:
        st.text("This study is archived: annotators do not see it and it takes no judgements.")
        st.button(
            "Unarchive the study",
            key=f"unarchive-{study.id}",
            on_click=_set_archived,
            args=(study.id, False),
            help="Show it to annotators again (members only, when it has members).",
        )
    else:
        st.text("This study is open: annotators on it see it and judge its items.")
        st.button(
            "Archive the study",
            key=f"archive-{study.id}",
            on_click=_set_archived,
            args=(study.id, True),
            help="Hide it from annotators; the items they hold go back.",
        )
    st.divider()
    st.caption(
        "Deleting removes the study with its items, votes, adjudications and change log. While it has votes, "
        "download them first: a delete is refused while any vote was not exported."
    )
    votes_download_button(engine, user, study, "Download every vote event (CSV)", history=True, key="delete-download")
    with st.form(f"delete-{study.id}", clear_on_submit=True):
        confirm = st.text_input("Type the study's name to confirm")
        if st.form_submit_button("Delete the study"):
            if guard(lambda: service.delete_study(engine, user, study.id, confirm)):
                st.session_state["study-created"] = ("Study deleted.", study.name)
                st.rerun()
