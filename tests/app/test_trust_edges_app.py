"""Issue 37, item 6, on the admin's Annotators page: a name with a control or bidi character is
refused with the rule named (nobody is added), and a password reset ends the person's API tokens and
says so."""

from __future__ import annotations

from annotate import service
from annotate.store.db import get_engine
from tests.app.test_app import login, page_as


def _button(probe, label: str):
    return next(b for b in probe.button if b.label == label)


def test_the_admin_page_refuses_a_bidi_name_and_a_reset_ends_the_tokens(app_db):
    engine = get_engine(app_db)
    token = login("admin", "demo-admin-pw").session_state["token"]
    probe = page_as("annotators_page", token)
    assert not probe.exception, probe.exception

    probe.text_input(key="add-name").input("evil\u202egnp.exe")
    probe.text_input(key="add-password").input("long-enough-password")
    _button(probe, "Add annotator").click().run()
    assert not probe.exception, probe.exception
    assert [e.value for e in probe.error] == ["Refused; nothing was changed."]
    assert any("control or bidirectional formatting characters (U+202E at character 5)" in t.value for t in probe.text)
    assert not any("\u202e" in name for name in probe.dataframe[0].value["name"])

    secret, _ = service.add_token(engine, service.CLI, "ann1")
    assert service.token_user(engine, secret).name == "ann1"
    probe.text_input(key="reset-name").input("ann1")
    probe.text_input(key="reset-password").input("a-new-password-for-ann1")
    _button(probe, "Reset password").click().run()
    assert not probe.exception, probe.exception
    assert [s.value for s in probe.success] == ["Password reset; their sessions ended and their API tokens revoked."]
    assert service.token_user(engine, secret) is None
