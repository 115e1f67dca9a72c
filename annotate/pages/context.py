"""Page plumbing: the engine, who is logged in, and showing untrusted text safely.

Login state lives in the database (annotate.people.sessions); the browser keeps only a random
token in a cookie, written by a tiny script of ours and read server-side from
``st.context.cookies`` when a page is reloaded.
"""

from __future__ import annotations

import gc
import json
import re

import streamlit as st

from annotate import service
from annotate.people.sessions import COOKIE_NAME, SESSION_HOURS
from annotate.service import PermissionDenied
from annotate.store import servers
from annotate.store.db import database_url, get_engine
from annotate.store.models import Annotator
from formats.settings import settings


def configured_url() -> str:
    """The database URL: DST_JUDGE_DB from the environment, else from Streamlit secrets
    (``.streamlit/secrets.toml``, never committed), else the embedded SQLite file."""
    url = settings().db
    if not url:
        try:
            url = st.secrets.get("DST_JUDGE_DB")
        except Exception:  # no secrets file: that is the normal case
            url = None
    return database_url(url)


@st.cache_resource(show_spinner=False)
def app_engine():
    """One engine per server process; the demo is made on an empty database."""
    url = configured_url()
    engine = get_engine(url)
    servers.register(url)  # SQLite only: lets every page see how many servers share the file
    service.ensure_demo(engine)
    service.start_background_analysis(engine)  # analyses computed as votes arrive (issue 27)
    # What is loaded by now (Streamlit, SQLAlchemy, pandas, Altair: some hundred thousand objects) lives as
    # long as the server: kept out of the collector's full passes, which otherwise walk it all again and
    # hold an answer's next item back (issue 25; Streamlit's own pass after every run is off in
    # .streamlit/config.toml).
    gc.freeze()
    return engine


def warn_if_shared_sqlite() -> None:
    warning = servers.sqlite_warning(configured_url())
    if warning:
        st.warning(warning)


def current_user() -> Annotator | None:
    """The logged-in annotator, checked against the database on every run."""
    engine = app_engine()
    token = st.session_state.get("token")
    if token is None and not st.session_state.get("logged_out"):
        token = st.context.cookies.get(COOKIE_NAME)
    user = service.session_user(engine, token)
    if user is None:
        st.session_state.pop("token", None)
        return None
    st.session_state["token"] = token
    return user


def require_user() -> Annotator:
    user = current_user()
    if user is None:
        st.error("Please log in.")
        st.stop()
    return user


def require_admin_page() -> Annotator:
    """Every admin page starts with this: the check is on the server, not in the menu."""
    user = require_user()
    if user.role != "admin":
        st.error("This page needs an admin login.")
        st.stop()
    return user


def client_address() -> str:
    """Where a login attempt comes from, for throttling: annotate.people.proxy decides from the WebSocket
    peer's address and the headers (forwarding headers only from ``DST_JUDGE_TRUSTED_PROXIES``).
    Never trusted for anything but the throttle's bookkeeping."""
    from annotate.people import proxy

    return proxy.client_address(st.context.ip_address, st.context.headers, proxy.trusted_proxies())


def public_base_url() -> str:
    """The app's address as people reach it, for join links: ``DST_JUDGE_PUBLIC_URL`` when set (behind
    a proxy), else the scheme and host the admin's browser used, with the server's base path."""
    from urllib.parse import urlsplit

    configured = settings().public_url
    if configured:
        return configured.rstrip("/")
    parts = urlsplit(st.context.url or "http://localhost:8501")
    base_path = (st.get_option("server.baseUrlPath") or "").strip("/")
    return f"{parts.scheme}://{parts.netloc}" + (f"/{base_path}" if base_path else "")


def remember_login(token: str, device: str | None = None, crowd: str | None = None) -> None:
    """Keep the session token (and the browser's new device cookie, annotate.people.sessions, or crowd cookie,
    annotate.studies.crowd) for sync_cookie."""
    st.session_state["token"] = token
    if device:
        st.session_state["device_cookie"] = device
    if crowd:
        st.session_state["crowd_cookie"] = crowd
    st.session_state.pop("logged_out", None)
    st.session_state["cookie_action"] = "set"


def logout() -> None:
    user = current_user()
    if user is not None:  # the items this person held go back to the others at once
        from annotate.service import release_places

        release_places(app_engine(), user)
    service.log_out(app_engine(), st.session_state.get("token"))
    for key in list(st.session_state.keys()):
        del st.session_state[key]
    st.session_state["logged_out"] = True
    st.session_state["cookie_action"] = "delete"


def sync_cookie() -> None:
    """Carry out a pending cookie change in the browser.

    A script of ours writes ``document.cookie``; the token is a URL-safe random string,
    so it needs no escaping.  The cookie is SameSite=Strict, ``Secure`` when the page came over
    HTTPS (annotate.people.proxy.is_https), and expires with the server-side session; after a login the
    device cookie (annotate.people.sessions) is written too, after a crowd join the crowd cookie
    (annotate.studies.crowd), and logout leaves both.
    """
    from annotate.people import proxy
    from annotate.people.sessions import DEVICE_COOKIE_NAME, DEVICE_DAYS, cookie_string
    from annotate.studies.crowd import CROWD_COOKIE_NAME

    action = st.session_state.pop("cookie_action", None)
    token = st.session_state.get("token")
    if action not in ("set", "delete"):
        return
    secure = proxy.is_https(st.context.url, st.context.ip_address, st.context.headers, proxy.trusted_proxies())
    if action == "set" and token:
        cookies = [cookie_string(COOKIE_NAME, token, SESSION_HOURS * 3600, secure=secure)]
        device = st.session_state.get("device_cookie")
        if device:  # kept on logout: the browser stays known (annotate.people.sessions, login throttling)
            cookies.append(cookie_string(DEVICE_COOKIE_NAME, device, DEVICE_DAYS * 86400, secure=secure))
        crowd = st.session_state.get("crowd_cookie")
        if crowd:  # kept on logout: the worker's browser comes back by the link (annotate.studies.crowd)
            cookies.append(cookie_string(CROWD_COOKIE_NAME, crowd, DEVICE_DAYS * 86400, secure=secure))
    elif action == "delete":
        cookies = [cookie_string(COOKIE_NAME, "", 0, secure=secure)]
    else:
        return
    # Our own fixed script; nothing from users goes into it (tokens are URL-safe random, "." and "~").
    script = " ".join(f"document.cookie = {json.dumps(cookie)};" for cookie in cookies)
    st.html(f"<script>{script}</script>", unsafe_allow_javascript=True)


STUDY_PARAM = "study"  # ?study=NAME: the study a page shows (issue 38)


def study_in_url(studies, fallback: int | None = None, more=None) -> int | None:
    """The id of the study named in the address (``?study=NAME``) when it is one of ``studies``, else
    ``fallback`` when it is one of them, else ``more()`` (asked only then: a read) when it is one."""
    ids = {s.id for s in studies}
    wanted = st.query_params.get(STUDY_PARAM)
    named = next((s.id for s in studies if s.name == wanted), None) if wanted else None
    if named is not None:
        return named
    if fallback in ids:
        return fallback
    found = more() if more is not None else None
    return found if found in ids else None


def keep_study_in_url(study) -> None:
    """The address names the study shown: a reload, a copied link or a new tab opens it again."""
    if st.query_params.get(STUDY_PARAM) != study.name:
        st.query_params[STUDY_PARAM] = study.name


def scroll_to_top(token: str) -> None:
    r"""Scroll the page's main area to its top once per ``token``.

    The main area (``stMain``: the element that scrolls in Streamlit's layout, not the window)
    keeps its scroll position across reruns.  A fixed script of ours resets it; the token (an
    item id, a created study) is part of the script, so it runs again only when the token
    changes and not on every rerun.  Only our own ASCII tokens go in (``re`` keeps [\w -]).

    A new item also takes the keyboard focus out of a select box (the *Study* box just used to
    switch studies), so the answer keys vote instead of typing into the box (issue 24)."""
    safe = re.sub(r"[^\w -]", "", token)
    st.html(
        f"<script>/* {safe} */ for (const main of document.querySelectorAll('[data-testid=\"stMain\"]'))"
        " { main.scrollTop = 0; }"
        " { const focused = document.activeElement;"  # a block: every script shares one global scope
        " if (focused && focused.closest && focused.closest('[data-testid=\"stSelectbox\"]')) { focused.blur(); } }</script>",
        unsafe_allow_javascript=True,
    )


# Two browser events Streamlit's shortcuts do not give, as a fixed inline script of ours (no data in it; an
# inline script, as the deployment's content policy allows, not a component's blob): "?" presses the *Keys*
# button, and a tab coming back into view presses a hidden button of the item area, whose run reads the item
# again, so a tab left behind shows an answer given meanwhile in another tab before any key is pressed there.
TAB_EVENTS = """<script>(() => {
  if (window.__dstjTabEvents) return;
  window.__dstjTabEvents = true;
  const typing = (t) => t && (t.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(t.tagName));
  const button = (key) => document.querySelector(`.st-key-${key} button`);
  const press = (key) => { const b = button(key); if (b) b.click(); };
  document.addEventListener("keydown", (e) => {
    if (e.key !== "?" || e.ctrlKey || e.metaKey || e.altKey || typing(e.target) || !button("keys")) return;
    e.preventDefault();
    press("keys");
  });
  document.addEventListener("visibilitychange", () => { if (document.visibilityState === "visible") press("tab-shown"); });
})()</script>"""


def tab_events() -> None:
    """:data:`TAB_EVENTS`, once per page (the script keeps one pair of listeners per browser tab).  The
    annotator's page draws the buttons it presses: *Keys* (``keys``) and the item area's hidden
    ``tab-shown``."""
    st.html(TAB_EVENTS, unsafe_allow_javascript=True)


def show_refusal(headline: str, detail: str) -> None:
    """A fixed headline, and the (untrusted) detail as plain text."""
    st.error(headline)
    st.text(detail)


def guard(action, success: str | None = None, keep: type[BaseException] | tuple = ()):
    """Run an action; show a refusal (ValueError / PermissionDenied) as text instead of a traceback.
    ``keep``: refusals the caller handles itself (raised on)."""
    try:
        result = action()
    except keep:
        raise
    except PermissionDenied as err:
        show_refusal("Not allowed.", str(err))
        return None
    except ValueError as err:
        show_refusal("Refused; nothing was changed.", str(err))
        return None
    if success:
        st.success(success)
    return result if result is not None else True
