"""A crowd join link (``?join=<study>&key=<secret>&PROLIFIC_PID=...``): the worker is signed in to
that study without a password, or gets a plain refusal (see annotate.crowd)."""

from __future__ import annotations

import streamlit as st

from annotate import service
from annotate.crowd import JoinRefused
from annotate.pages.context import app_engine, client_address, remember_login, show_refusal


def join_from_link() -> None:
    """Run before anything else on every page run: a join link signs its worker in (replacing any
    login this browser had), then the parameters leave the address bar, secret included."""
    if "join" not in st.query_params:
        return
    try:
        token = service.join_crowd(app_engine(), st.query_params.to_dict(), client=client_address())
    except JoinRefused as err:
        st.title("DST Judge")
        show_refusal("This link cannot be used.", str(err))
        st.stop()
    st.query_params.clear()
    remember_login(token)
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
