"""When the database cannot be reached: a message instead of a traceback, and recovery by itself.

``shielded(body)`` runs a page (or the item fragment); if the database is down, cut off, timed out
(``annotate.store.db.ServerTimeouts``), locked past its busy timeout or out of disk, the person sees what
happened — and what became of their last answer (``annotate.screen``: saved, or sent but not
confirmed) — and the page probes the database every few seconds and carries on by itself when it
answers again, telling the annotator whether that last answer was stored.  Nothing about the server
(host, port, paths) is shown; ``client.showErrorDetails`` is ``none`` in ``.streamlit/config.toml``,
so no other error shows a traceback either (the server log has them).
"""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from annotate import screen
from annotate.pages.context import app_engine
from annotate.store.db import reachable, unreachable

RETRY_SECONDS = 3


def shielded(body: Callable[[], None]) -> None:
    # An answer is sent by its button's callback (annotate.pages.annotate_page), which records what
    # became of it (annotate.screen: not sent, or sent and not acknowledged) before any run starts.
    try:
        body()
    except Exception as err:  # Streamlit's own control flow (rerun, stop) is not an outage: re-raised
        if not unreachable(err):
            raise
        unreachable_notice(err)


def unreachable_notice(err: BaseException) -> None:
    st.error("The database cannot be reached right now.", icon=":material/cloud_off:")
    screen.note_outage(st.session_state)
    last = screen.last_answer(st.session_state)
    if last == "not saved":
        st.warning("Your last answer was not saved. When the database is back, answer this item again.")
    elif last == "pending":
        st.warning(
            "Your last answer was not confirmed by the database, so it may not have been saved. "
            "When the database is back, this page checks and tells you."
        )
    elif last == "saved":
        st.info("Your last answer was saved.")
    st.caption(
        f"Retrying every {RETRY_SECONDS} seconds; the page carries on by itself when the database is back. ({type(err).__name__})"
    )
    _retry()


@st.fragment(run_every=RETRY_SECONDS)
def _retry() -> None:
    if reachable(app_engine()):
        st.rerun()
