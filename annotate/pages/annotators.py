"""The Annotators page: people (accounts, roles, passwords) and the HTTP API's tokens."""

from __future__ import annotations

from dataclasses import asdict

import streamlit as st

from annotate import service
from annotate.pages.context import (
    app_engine,
    guard,
    public_base_url,
    require_admin_page,
)
from annotate.pages.tables import show_table


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
    """Bearer tokens of the HTTP API (``annotate.people.tokens``): made for a person or an automatic judge (never a
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
