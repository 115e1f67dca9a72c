"""What the admin's pages share: the study chooser that remembers the last study chosen on any admin
page, and the votes download.  The pages are one module each: Studies (``pages/studies.py``),
Annotators (``pages/annotators.py``), Progress (``pages/progress.py``) and Analysis
(``pages/analysis.py``).  Each starts with a server-side admin check; every action goes through
annotate.service, which checks again."""

from __future__ import annotations

import streamlit as st

from annotate import service
from annotate.pages.context import (
    app_engine,
    keep_study_in_url,
    study_in_url,
)


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


def votes_download_button(engine, user, study, label: str, *, history: bool, key: str, container=st) -> None:
    """A download of the study's votes, made when clicked and recorded as an export (a delete needs one)."""
    what = "vote events csv" if history else "votes csv"

    def make() -> str:
        text, through = service.votes_download(engine, user, study.id, history=history)
        service.record_export(engine, user, study.id, what, through)
        return text

    name = f"vote-events-{study.id}.csv" if history else f"votes-{study.id}.csv"
    container.download_button(label, make, file_name=name, mime="text/csv", key=f"{key}-{study.id}", on_click="ignore")
