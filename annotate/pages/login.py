"""The login page."""

from __future__ import annotations

import streamlit as st

from annotate import service
from annotate.pages.context import app_engine, client_address, remember_login, show_refusal
from annotate.pages.tables import show_table
from annotate.people import proxy
from annotate.people.sessions import DEVICE_COOKIE_NAME, LoginRefused, device_cookie
from annotate.store.servers import loopback_only
from annotate.studies.demo import DEMO_ACCOUNTS, demo_accounts_active, setup_hint


@st.cache_data(ttl=60, show_spinner=False)
def _demo_active() -> bool:
    return demo_accounts_active(app_engine())


def _show_demo_accounts() -> bool:
    """Only while the demo admin keeps its demo password, the server listens on loopback only, and this
    request came from loopback without any proxy header while no proxy is configured (annotate.people.proxy):
    behind nginx on the same host the peer is loopback too."""
    try:
        trusted = proxy.trusted_proxies()
    except proxy.ProxyConfigError:  # a broken proxy setting: certainly not "direct"
        return False
    direct = proxy.may_show_demo_passwords(st.context.ip_address, st.context.headers, trusted)
    return direct and loopback_only(st.get_option("server.address")) and _demo_active()


def render() -> None:
    st.title("DST Judge")
    st.caption("Human evaluation of dialogue state tracking")
    with st.form("login"):
        name = st.text_input("Name")
        password = st.text_input("Password", type="password")
        submitted = st.form_submit_button("Log in", type="primary")
    if submitted:
        known = st.session_state.get("device_cookie") or st.context.cookies.get(DEVICE_COOKIE_NAME)
        try:
            user, token = service.log_in(app_engine(), name, password, client=client_address(), device=known)
        except (LoginRefused, proxy.ProxyConfigError) as err:
            show_refusal("Login refused.", str(err))
            return
        remember_login(token, device_cookie(user, known))
        st.rerun()
    hint = setup_hint(app_engine())
    if hint:
        st.warning("No admin account yet.")
        st.text(hint)
    if _show_demo_accounts():
        st.info("Demo accounts (change these passwords before a real study):")
        show_table([{"name": n, "password": p, "role": r} for n, p, r in DEMO_ACCOUNTS], "demo accounts", download=False)
