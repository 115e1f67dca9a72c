"""DST Judge: the Streamlit entry point.  Routes by role; pages live in annotate/pages."""

from __future__ import annotations

import gc
import sys

import streamlit as st

from annotate.pages import join, login, outage
from annotate.pages.context import app_engine, current_user, logout, sync_cookie, warn_if_shared_sqlite

st.set_page_config(page_title="DST Judge", layout="wide")


def main() -> None:
    app_engine()
    warn_if_shared_sqlite()
    join.join_from_link()  # a crowd worker's join link signs them in (or is refused) before anything else
    user = current_user()
    if user is None:
        pages = [st.Page(login.render, title="Log in", url_path="login", default=True)]
        if not st.session_state.get("logged_out"):
            # A page opened by its address (/progress, /annotate?study=…) shows the login form there; once
            # logged in, the same address runs the page itself (a page's identity is its path): issue 38.
            # After a logout the form is at /login: the next person starts at their own landing page.
            pages += [
                st.Page(login.render, title="Log in", url_path=path, visibility="hidden")
                for path in ("annotate", "studies", "annotators", "progress", "analysis")
            ]
    else:
        # The pages behind the login are imported once someone is logged in: the login form needs none (issue 36).
        from annotate.pages import annotate_page

        # Admins land on Progress: opening Annotate would hold an item for them.
        admin_role = user.role == "admin"
        pages = {"Annotate": [st.Page(annotate_page.render, title="Annotate", url_path="annotate", default=not admin_role)]}
        if admin_role:
            first = "annotate.pages.analysis" not in sys.modules
            # pandas, Altair, the statistics: an annotator never loads them
            from annotate.pages import analysis, annotators, progress, studies

            if first:  # what they loaded stays out of the collector's full passes, as app_engine's imports do (issue 25)
                gc.freeze()
            pages["Admin"] = [
                st.Page(studies.studies_page, title="Studies", url_path="studies"),
                st.Page(annotators.annotators_page, title="Annotators", url_path="annotators"),
                st.Page(progress.progress_page, title="Progress", url_path="progress", default=True),
                st.Page(analysis.render, title="Analysis", url_path="analysis"),
            ]
        with st.sidebar:
            who = user.name.rsplit("@", 1)[0] if user.role == "worker" else user.name  # a worker: <platform>:<id>
            st.text(f"Logged in as {who} ({user.role})")
            if st.button("Log out", key="logout"):
                logout()
                st.rerun()
    navigation = st.navigation(pages)
    sync_cookie()
    navigation.run()


outage.shielded(main)  # the database unreachable: a message and a retry, never a traceback
