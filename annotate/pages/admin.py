"""Admin pages: studies, annotators, progress and downloads.  Each starts with a server-side
admin check; every action goes through annotate.service, which checks again."""

from __future__ import annotations

from dataclasses import asdict

import streamlit as st

from annotate import service
from annotate.allocation import QUESTIONS, judgements_total
from annotate.kinds import KINDS
from annotate.pages.context import (
    app_engine,
    guard,
    keep_study_in_url,
    public_base_url,
    require_admin_page,
    scroll_to_top,
    show_refusal,
    study_in_url,
)
from annotate.pages.tables import show_table
from annotate.reports import allocation_line
from annotate.store.models import DEFAULT_TIMEOUT_MINUTES
from metrics.present import interval


def study_picker(label: str = "Study", key: str = "admin-study"):
    """A study chooser that remembers the last study chosen on any admin page (widget state is
    dropped when the page is left, so the choice is kept under a key of its own)."""
    studies = service.list_studies(app_engine())
    if not studies:
        st.info("No study yet: create one on the Studies page.")
        return None
    # The study in the address (?study=NAME: a link, a reload, a new tab) comes first, then this session's (issue 38).
    remembered = study_in_url(studies, st.session_state.get("admin-chosen-study"))
    index = 0 if key in st.session_state else next((i for i, s in enumerate(studies) if s.id == remembered), 0)
    chosen = st.selectbox(label, studies, index=index, format_func=lambda s: f"{s.name} ({s.kind}, {s.items} items)", key=key)
    # A keyed box hands back the summary as it was when chosen (archived, overlap of then): this run's instead.
    chosen = next((s for s in studies if s.id == chosen.id), chosen)
    st.session_state["admin-chosen-study"] = chosen.id
    keep_study_in_url(chosen)
    return chosen


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
    """How the study spends its judgements (annotate.allocation): chosen before the first vote."""
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


def votes_download_button(engine, user, study, label: str, *, history: bool, key: str, container=st) -> None:
    """A download of the study's votes, made when clicked and recorded as an export (a delete needs one)."""
    what = "vote events csv" if history else "votes csv"

    def make() -> str:
        text, through = service.votes_download(engine, user, study.id, history=history)
        service.record_export(engine, user, study.id, what, through)
        return text

    name = f"vote-events-{study.id}.csv" if history else f"votes-{study.id}.csv"
    container.download_button(label, make, file_name=name, mime="text/csv", key=f"{key}-{study.id}", on_click="ignore")


def annotators_page() -> None:
    user = require_admin_page()
    engine = app_engine()
    st.title("Annotators")
    # Keyed tabs keep the chosen tab across an action's rerun (as on Studies).
    people_tab, tokens_tab = st.tabs(["People", "API tokens"], key="annotators-tab", on_change="rerun")
    with people_tab:
        _people(engine, user)
    with tokens_tab:
        _api_tokens(engine, user)


def _people(engine, user) -> None:
    """Everybody but crowd workers (name, role, login, kind: human or automatic judge); add one, reset a password."""
    table = st.container()  # filled last: it lists whom this run's form added
    left, right = st.columns(2)
    with left.form("add-annotator", clear_on_submit=True):
        st.subheader("Add")
        name = st.text_input("Name", key="add-name")
        password = st.text_input("Password (8+ characters; none for an automatic judge)", type="password", key="add-password")
        admin = st.checkbox("Admin", key="add-admin")
        judge = st.checkbox(
            "Automatic judge (an LLM, a classifier): no password, it votes through the HTTP API with a token",
            key="add-judge",
        )
        if st.form_submit_button("Add annotator"):
            role = "admin" if admin else "annotator"  # a judge that is an admin: the service refuses it
            if judge:  # no password: it votes with a token
                guard(
                    lambda: service.add_person(engine, user, name, None, role, kind="judge"),
                    "Added, without a password: give it an API token (tab API tokens).",
                )
            else:
                guard(lambda: service.add_person(engine, user, name, password, role), "Added.")
    with right.form("reset-password", clear_on_submit=True):
        st.subheader("Reset a password")
        name = st.text_input("Name", key="reset-name")
        password = st.text_input("New password", type="password", key="reset-password")
        if st.form_submit_button("Reset password"):
            guard(
                lambda: service.reset_password(engine, user, name, password),
                "Password reset; their sessions ended and their API tokens revoked.",
            )
    with table:
        show_table([asdict(a) for a in service.list_annotators(engine, user)], "annotators")


API_PORT = 8600  # ``python -m annotate serve``'s default --api-port


def _api_address() -> str:
    """Where the HTTP API answers: this page's host, the API's port (``serve`` sets DST_JUDGE_API_PORT)."""
    from urllib.parse import urlsplit

    from formats.settings import settings

    host = urlsplit(public_base_url()).hostname or "localhost"
    port = settings().api_port
    return f"http://{f'[{host}]' if ':' in host else host}:{port}/api/v1"


def _api_tokens(engine, user) -> None:
    """Bearer tokens of the HTTP API (``annotate.tokens``): made for a person or an automatic judge (never a
    crowd worker), shown once, kept as a hash; listed by their first characters; revoked at once."""
    api = _api_address()
    # The address comes from the browser's Host: shown in a code block, never as Markdown.
    st.caption(
        "The HTTP API (started by `dst-judge serve`; its OpenAPI document at "
        "/api/v1/openapi.json). A token acts as its annotator, with their role; a judge's loop starts with:"
    )
    st.code(f'curl -H "Authorization: Bearer $TOKEN" {api}/studies/STUDY/next', language="bash")
    made = st.container()  # the new token, above the forms, where the eye is
    revoked_note = st.session_state.pop("token-revoked", None)
    if revoked_note:
        made.success(revoked_note)
    people = service.list_annotators(engine, user)  # crowd workers are not listed: they get no token
    # One row each (create; revoke), the table last: a token just made, both rows and the table's top
    # are on the first screen at 1400x900.
    with st.form("add-token", clear_on_submit=True, border=False):
        who, what, go = st.columns([3, 3, 2], vertical_alignment="bottom")
        chosen = who.selectbox(
            "Token for", [p.name for p in people], key="token-person", format_func=lambda n: _person_label(people, n)
        )
        label = what.text_input("Label (optional: what it is for)", key="token-label", max_chars=200)
        if go.form_submit_button("Create token", type="primary") and chosen is not None:
            created = guard(lambda: service.add_token(engine, user, chosen, label))
            if isinstance(created, tuple):
                token, info = created
                with made:
                    st.success("Token created. Copy it now: it is not shown again (only its hash is kept).")
                    st.text(f"For {info.annotator} ({info.kind}, {info.role})" + (f": {info.label}" if info.label else ""))
                    st.code(token, language=None)
    tokens = service.list_tokens(engine, user)
    live = [t for t in tokens if t.revoked_at is None]
    with st.form("revoke-token", border=False):
        which, go = st.columns([6, 2], vertical_alignment="bottom")
        shown = {t.id: f"{t.prefix} {t.annotator}" + (f" ({t.label})" if t.label else "") for t in live}
        chosen_id = which.selectbox(
            "Revoke a token (refused from its next request)",
            list(shown),
            key="token-revoke",
            index=None,
            placeholder="choose a live token" if live else "no live token",
            format_func=lambda i: shown.get(i, str(i)),
        )
        revoked = next((t for t in live if t.id == chosen_id), None)
        if go.form_submit_button("Revoke") and revoked is not None:
            count = guard(lambda: service.revoke_tokens(engine, user, revoked.annotator, revoked.id))
            if count is not None:  # None: refused (shown); 0: revoked meanwhile.  Again: the list of live tokens
                st.session_state["token-revoked"] = "Revoked." if count else "It was revoked already."
                st.rerun()
    st.subheader("Tokens")
    if tokens:
        show_table(
            [
                {
                    "annotator": t.annotator,
                    "kind": t.kind,
                    "token": t.prefix,
                    "label": t.label,
                    "created by": t.created_by,
                    "created at (UTC)": t.created_at.replace("T", " ")[:19],
                    "revoked at (UTC)": (t.revoked_at or "").replace("T", " ")[:19],
                }
                for t in tokens
            ],
            "api tokens",
        )
    else:
        st.text("No token yet.")


def _person_label(people, name: str) -> str:
    found = next((p for p in people if p.name == name), None)
    return name if found is None else f"{name} ({'automatic judge' if found.kind == 'judge' else found.role})"


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
