"""A crowd join link (``?join=<study>&key=<secret>&PROLIFIC_PID=...``): the worker is signed in to
that study without a password, or gets a plain refusal (see annotate.studies.crowd).  The browser keeps a crowd
token per worker (cookie ``dst_judge_crowd``): a worker id that joined already signs in only the browser
that shows its token (or, on Prolific, the link with the SESSION_ID of the first join); any other
browser is refused, and sees nothing of that worker."""

from __future__ import annotations

import streamlit as st

from annotate import service
from annotate.pages.context import app_engine, client_address, remember_login, show_refusal
from annotate.studies.crowd import CROWD_COOKIE_NAME, JoinRefused


def join_from_link() -> None:
    """Run before anything else on every page run: a join link signs its worker in (replacing any
    login this browser had), then the parameters leave the address bar, secret included.  The browser's
    crowd cookie shows which workers joined from it; the join writes it anew (this worker's token first)."""
    if "join" not in st.query_params:
        return
    known = st.session_state.get("crowd_cookie") or st.context.cookies.get(CROWD_COOKIE_NAME)
    try:
        token, cookie = service.join_crowd_browser(app_engine(), st.query_params.to_dict(), client=client_address(), device=known)
    except JoinRefused as err:
        st.title("DST Judge")
        show_refusal("This link cannot be used.", str(err))
        st.stop()
    st.query_params.clear()
    remember_login(token, crowd=cookie)
    st.rerun()


def finished(user) -> None:
    """What a worker sees when no item is left for them: the completion code and the way back."""
    status = service.crowd_status(app_engine(), user, out_of_items=True)
    if not status["finished"]:
        st.info(
            "There is no item left for you in this study. Please return the study on the platform: "
            "without a judgement there is no completion code."
        )
        return
    st.success(f"You have finished: {status['done']} items judged. Thank you!")
    if status["completion_code"]:
        st.text("Your completion code:")
        st.code(status["completion_code"], language=None)  # shown as text, with a copy button
    if status["redirect_url"]:
        st.link_button("Return to the study platform", status["redirect_url"], type="primary")
